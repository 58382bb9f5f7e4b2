"""`episodic status` and `episodic plot` on a real LanceDB after a real
consolidate run: the lag is counted, the run is named, the picture tells the
same story as the stored episodes and its cut labels never overlap."""

from __future__ import annotations

import json
import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from episodic.adapters.cli.main import app
from episodic.models import user_tag
from episodic.service.plot_path import latest_plot_path
from episodic.service.timeline import build_timeline, draw, render
from flows.consolidate import _pictures, consolidate
from tests.integration.cli_support import cli_home, refused
from tests.integration.helpers import synthetic_stream, write_jsonl

pytestmark = pytest.mark.usefixtures("prefect_harness")
runner = CliRunner()


def _gappy(user: str, n: int = 90) -> list[dict[str, object]]:
    """A stream cut often: a 45-minute gap before every sixth turn."""
    t = datetime(2025, 5, 1, 8, 0, tzinfo=UTC)
    out: list[dict[str, object]] = []
    for i in range(n):
        t += timedelta(minutes=45 if i and i % 6 == 0 else 1)
        out.append(
            {
                "user_id": user,
                "stream_id": "busy",
                "role": "user" if i % 2 == 0 else "assistant",
                "text": f"topic {i // 6} turn {i}",
                "ts": t.isoformat(),
            }
        )
    return out


def test_status_counts_lag_and_names_the_last_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    m = cli_home(monkeypatch, tmp_path / "home")
    turns = synthetic_stream(user="u1", n_per_topic=4)
    m.ingest(write_jsonl(tmp_path / "a.jsonl", turns), "jsonl")
    m.ingest(write_jsonl(tmp_path / "b.jsonl", synthetic_stream(user="u2")), "jsonl")

    before = {(s.user_id, s.stream_id): s for s in m.status()}
    s1 = before[("u1", "s1")]
    assert s1.raw_turns == len(turns) and s1.watermark == -1
    assert s1.unprocessed_turns == len(turns)
    assert s1.oldest_unprocessed_age_s is not None and s1.oldest_unprocessed_age_s >= 0
    assert s1.last_run == ""

    summary = m.consolidate("u1")
    after = m.status("u1")
    assert [(s.user_id, s.stream_id) for s in after] == [("u1", "s1")]  # scoped to the user
    s1 = after[0]
    assert s1.watermark == s1.head_seq == len(turns) - 1
    assert s1.unprocessed_turns == 0 and s1.oldest_unprocessed_age_s is None
    assert s1.episodes == summary["episodes_closed"] == len(m.episodes("u1", stream_id="s1"))
    assert s1.open_episode_turns == summary["open_turns"] > 0
    assert s1.last_run.startswith(f"consolidate-{user_tag('u1')}-")
    assert s1.last_run_state == "Completed"
    # u2 was not consolidated: still all lag, no run
    u2 = m.status("u2")[0]
    assert u2.unprocessed_turns == u2.raw_turns and u2.last_run == ""

    res = runner.invoke(app, ["status", "--json", "--user", "u1"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert rows == [s.as_dict() for s in m.status("u1")]  # the service's rows, as JSON
    assert rows[0]["last_run_state"] == "Completed" and rows[0]["unprocessed_turns"] == 0
    human = runner.invoke(app, ["status"])
    assert human.exit_code == 0 and "u2" in human.output
    # the tag an alert names (a hash of the id) finds the user
    tagged = runner.invoke(app, ["status", "--json", "--tag", user_tag("u2")])
    assert tagged.exit_code == 0, tagged.output
    assert [(r["user_id"], r["stream_id"]) for r in json.loads(tagged.stdout)] == [("u2", "s1")]
    assert refused("status", "--tag", "00000000").startswith("error: no user's streams")


def test_plot_matches_stored_cuts_and_labels_do_not_overlap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    m = cli_home(monkeypatch, tmp_path / "home")
    m.ingest(write_jsonl(tmp_path / "g.jsonl", _gappy("u3")), "jsonl")
    consolidate(user="u3", memory=m)
    tl = build_timeline(m.rt, "u3")
    assert tl.stream_id == "busy" and len(tl.scores) == len(tl.turns) == 90
    stored = [(e.last_seq, e.boundary_reason) for e in tl.episodes]
    assert stored and tl.replayed == stored  # the replay reproduces every stored cut
    assert {r for _, r in stored} >= {"time_gap"}
    # each score the picture draws is the detector's own, in [0, 1]
    assert all(0.0 <= s[k] <= 1.0 for s in tl.scores for k in ("semantic_shift", "combined"))

    fig = render(tl)
    try:
        axes = fig.axes[:4]
        assert all(ax.get_ylabel() for ax in axes) and axes[3].get_xlabel()
        assert all(ax.get_legend() is not None for ax in axes) and fig.legends
        renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
        labels = [t for t in axes[0].texts if t.get_rotation() == 90]
        assert labels, "no cut labels drawn"
        boxes = sorted((t.get_window_extent(renderer) for t in labels), key=lambda b: b.x0)
        for a, b in zip(boxes, boxes[1:], strict=False):
            assert a.x1 <= b.x0, "cut labels overlap"
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)

    out = tmp_path / "timeline.png"
    res = runner.invoke(app, ["plot", "--user", "u3", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 20_000
    latest = latest_plot_path(m.settings.home, "u3")
    assert latest.read_bytes() == out.read_bytes()  # the consolidate artifact names this one
    named = _pictures(m.rt, ["u3"], redraw=False)  # Prefect keeps it where no forget reaches
    assert f"- {user_tag('u3')}: `{latest}`" in named and "u3" not in named.replace(str(latest), "")
    assert refused("plot", "--user", "nobody", "--out", str(out)).startswith("error: no user")
    line = refused("plot", "--user", "u3", "--stream", "nope", "--out", str(out), code=2)
    assert "no stream 'nope'" in line


def test_a_picture_of_a_user_named_in_another_script_draws_without_warnings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default font lacks CJK and emoji: they draw as boxes, and the
    command prints no warning per missing glyph."""
    user = "ユーザー🙂"
    m = cli_home(monkeypatch, tmp_path / "home")
    m.ingest(write_jsonl(tmp_path / "g.jsonl", _gappy(user, n=14)), "jsonl")
    consolidate(user=user, memory=m)
    out = tmp_path / "timeline.png"
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        draw(build_timeline(m.rt, user), out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not [w for w in seen if "Glyph" in str(w.message)], [str(w.message) for w in seen]
