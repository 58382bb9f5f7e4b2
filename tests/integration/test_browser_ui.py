"""What a person sees: a consolidation run against a real `prefect server
start`, then the Prefect UI in headless Debian Chromium shows the flow run by
its readable name and its markdown artifact. Screenshots land in the test's
tmp dir (and, when EPISODIC_UI_SCREENSHOT names a path, there too)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from episodic.adapters.embedded import Memory
from episodic.config import Settings
from episodic.models import user_tag
from tests.integration.chromium import headless_chromium
from tests.integration.helpers import synthetic_stream, write_jsonl
from tests.integration.prefect_server import BIN, Server, prefect_server, run

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[object]:
    with headless_chromium(tmp_path, "1400,1000") as driver:
        yield driver


def _wait_for_text(driver, url: str, text: str, timeout: float = 90.0) -> None:  # type: ignore[no-untyped-def]
    driver.get(url)
    _wait_until_shown(driver, text, timeout)


def _click_text(driver, text: str, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    xpath = f"//*[normalize-space(.)='{text}']"
    WebDriverWait(driver, timeout, poll_frequency=1.0).until(
        lambda d: d.find_elements(By.XPATH, xpath)
    )
    driver.find_elements(By.XPATH, xpath)[-1].click()


def _wait_until_shown(driver, text: str, timeout: float = 90.0) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    url = driver.current_url
    try:
        WebDriverWait(driver, timeout, poll_frequency=1.0).until(
            lambda d: text in d.find_element(By.TAG_NAME, "body").text
        )
    except Exception as e:
        body = driver.find_element(By.TAG_NAME, "body").text
        raise AssertionError(f"{text!r} not shown at {url}; page says:\n{body[:2000]}") from e


def test_flow_run_and_artifact_visible_in_prefect_ui(tmp_path: Path, browser) -> None:  # type: ignore[no-untyped-def]
    with prefect_server(tmp_path / "srv") as srv:
        run_name, run_id, art_id = _consolidate(srv, tmp_path)
        driver = browser
        _wait_for_text(driver, f"{srv.url}/runs", run_name)
        driver.save_screenshot(str(tmp_path / "runs.png"))
        _wait_for_text(driver, f"{srv.url}/runs/flow-run/{run_id}", run_name)
        driver.save_screenshot(str(tmp_path / "flow-run.png"))
        _click_text(driver, "Artifacts")  # the flow run's Artifacts tab
        _wait_until_shown(driver, "consolidate-report")
        driver.save_screenshot(str(tmp_path / "flow-run-artifacts.png"))
        _wait_for_text(driver, f"{srv.url}/artifacts", "consolidate-report")
        # the artifact itself: its markdown rendered
        _wait_for_text(
            driver, f"{srv.url}/artifacts/artifact/{art_id}", "Episodes closed by reason"
        )
        shot = tmp_path / "artifact.png"
        driver.save_screenshot(str(shot))
    assert (tmp_path / "runs.png").stat().st_size > 10_000 and shot.stat().st_size > 10_000
    keep = os.environ.get("EPISODIC_UI_SCREENSHOT")
    if keep:
        shutil.copyfile(tmp_path / "flow-run.png", keep)


def _consolidate(srv: Server, tmp_path: Path) -> tuple[str, str, str]:
    """Ingest a stream and run `episodic consolidate` against the server."""
    settings = Settings(home=srv.home / "episodic", embedder="hash", llm="offline")
    with Memory(settings) as memory:
        memory.ingest(write_jsonl(tmp_path / "t.jsonl", synthetic_stream(user="alice")), "jsonl")
    run([str(BIN / "episodic"), "consolidate", "--user", "alice"], srv.env(), timeout=300)
    named = {"name": {"like_": f"consolidate-{user_tag('alice')}-"}}
    runs = srv.post("/flow_runs/filter", {"flow_runs": named})
    done = [r for r in runs if r["state"]["type"] == "COMPLETED"]
    assert done, runs
    arts = srv.post("/artifacts/filter", {"artifacts": {"key": {"any_": ["consolidate-report"]}}})
    mine = [a for a in arts if a["flow_run_id"] == done[0]["id"]]
    assert mine, arts
    return str(done[0]["name"]), str(done[0]["id"]), str(mine[0]["id"])
