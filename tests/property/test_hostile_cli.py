"""Hostile files through `episodic ingest PATH --json` and into LanceDB.

The parsers have their own property tests (test_ingest_hostile.py); these go
through the command line and the store: whatever the file holds, the command
exits 0 or 1 (2 only for a file it cannot read as any format) with a message
and never a traceback; every refused line is a row of `rejected_input`;
every good line is in `raw_turns`; the row counts move by exactly what the
command reported.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage import filters
from tests.integration.reliability_support import ROOT, record

FIXTURES = ROOT / "tests" / "fixtures" / "ingest"
BY_FORMAT = {
    "openai": FIXTURES / "openai_chat.json",
    "anthropic": FIXTURES / "anthropic_messages.json",
    "claude-code": FIXTURES / "claude_code_session.jsonl",
    "locomo": FIXTURES / "locomo_small.json",
    "jsonl": FIXTURES / "generic.jsonl",
}
SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
_names = itertools.count()


class Home:
    """One store for the module; every example writes a file of its own."""

    def __init__(self, root: Path) -> None:
        from episodic.adapters.embedded import Memory
        from tests.integration.helpers import settings_at

        self.root = root
        self.memory = Memory(settings_at(root / "home"))  # the store the commands write
        self.rt = self.memory.rt
        self.tried = 0  # hostile lines or mutations fed to the command
        self.files = 0
        self.crashes = 0

    def path(self, suffix: str = ".jsonl") -> Path:
        return self.root / f"in-{next(_names)}{suffix}"

    def counts(self) -> tuple[int, int]:
        return self.rt.raw.count(), int(self.rt.raw.rejects.count_rows())


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Home]:
    root = tmp_path_factory.mktemp("hostile-cli")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EPISODIC_HOME", str(root / "home"))
        mp.setenv("EPISODIC_EMBEDDER", "hash")
        mp.setenv("EPISODIC_LLM", "offline")
        h = Home(root)
        with h.memory:
            yield h
    record("hostile", files=h.files, inputs_tried=h.tried, crashes=h.crashes)


def run_cli(home: Home, path: Path, *args: str) -> tuple[int, dict[str, Any] | None, str]:
    from typer.testing import CliRunner

    from episodic.adapters.cli.main import app

    home.files += 1
    result = CliRunner().invoke(app, ["ingest", str(path), "--json", *args])
    out = result.output
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        home.crashes += 1
        raise AssertionError(f"traceback from the CLI: {result.exception!r}\n{out[-2000:]}")
    assert "Traceback" not in out, out[-2000:]
    report = None
    if result.exit_code in (0, 1):
        report = json.loads(out[out.index("{") :])
    return result.exit_code, report, out


# ---- hostile JSONL lines ---------------------------------------------------------

GOOD = "good"
BAD = "bad"
EITHER = "either"  # acceptable either way (an odd but valid value)

ctrl_text = st.text(
    alphabet=st.characters(codec="utf-8", categories=["Cc", "Cf", "Zs", "Ll", "So"]),
    min_size=1,
    max_size=40,
)


def good_row(i: int, marker: str) -> dict[str, Any]:
    return {
        "user_id": "hostile",
        "stream_id": "s",
        "role": "user",
        "text": f"good line {marker} {i}",
        "ts": "2025-01-02T03:04:05Z",
    }


@st.composite
def hostile_line(draw: st.DrawFn, i: int, marker: str) -> tuple[str, bytes]:
    row = good_row(i, marker)
    choice = draw(st.integers(0, 12))
    if choice == 0:  # truncated JSON
        raw = json.dumps(row).encode()
        return BAD, raw[: draw(st.integers(1, len(raw) - 1))]
    if choice == 1:  # wrong types
        key = draw(st.sampled_from(["role", "text", "user_id", "stream_id", "ts", "meta"]))
        row[key] = draw(st.sampled_from([5, [1, 2], {"a": 1}, True, 1.5]))
        return (BAD if key == "role" else EITHER), json.dumps(row).encode()
    if choice == 2:  # missing fields
        key = draw(st.sampled_from(["role", "text"]))
        del row[key]
        return BAD, json.dumps(row).encode()
    if choice == 3:  # control characters and odd unicode in the text
        row["text"] = draw(ctrl_text) + f" {marker} {i}"
        return EITHER, json.dumps(row, ensure_ascii=draw(st.booleans())).encode()
    if choice == 4:  # invalid UTF-8
        raw = json.dumps(row).encode()
        at = draw(st.integers(0, len(raw)))
        return BAD, raw[:at] + draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80"])) + raw[
            at:
        ]
    if choice == 5:  # deep nesting
        depth = draw(st.sampled_from([100, 5_000, 200_000]))
        line = b'{"role": "user", "text": ' + b"[" * depth + b"]" * depth + b"}"
        return (EITHER if depth == 100 else BAD), line
    if choice == 6:  # timestamps out of range
        row["ts"] = draw(
            st.sampled_from(
                [
                    "9999-99-99",
                    "0000-01-01",
                    "-5",
                    1e20,
                    -1e20,
                    "NaN",
                    "2025-13-45T99:99:99",
                    10**30,
                ]
            )
        )
        return EITHER, json.dumps(row).encode()
    if choice == 7:  # timestamps in the future
        row["ts"] = draw(st.sampled_from(["2999-01-01T00:00:00Z", "9999-12-31T23:59:59+14:00"]))
        return EITHER, json.dumps(row).encode()
    if choice == 8:  # not an object
        return BAD, draw(st.sampled_from([b"[]", b"null", b"42", b'"text"', b"true"]))
    if choice == 9:  # garbage
        return BAD, draw(st.binary(min_size=1, max_size=60)).replace(b"\n", b" ").replace(
            b"\r", b" "
        ) + b"{"
    if choice == 10:  # NUL bytes and a BOM inside the line
        return EITHER, b"\xef\xbb\xbf" + json.dumps(row).encode().replace(b"good", b"go\\u0000od")
    if choice == 11:  # empty or whitespace-only text
        row["text"] = draw(st.sampled_from(["", "   ", "\t\n"]))
        return BAD, json.dumps(row).encode()
    return GOOD, json.dumps(row).encode()


@st.composite
def hostile_file(draw: st.DrawFn) -> list[tuple[str, bytes]]:
    # unique per example: turn ids come from stream, line and content, not the
    # file's path, so two files with the same good lines hold the same turns
    marker = f"m{draw(st.integers(0, 10**9))}-{next(_names)}"
    n = draw(st.integers(1, 12))
    lines = []
    for i in range(n):
        if draw(st.booleans()):
            lines.append((GOOD, json.dumps(good_row(i, marker)).encode()))
        else:
            lines.append(draw(hostile_line(i, marker)))
    return lines


@SETTINGS
@given(lines=hostile_file(), fmt=st.sampled_from(["jsonl", "auto"]))
def test_hostile_jsonl_lines(home: Home, lines: list[tuple[str, bytes]], fmt: str) -> None:
    path = home.path()
    path.write_bytes(b"\n".join(raw for _, raw in lines) + b"\n")
    home.tried += sum(1 for kind, _ in lines if kind != GOOD)
    raw_before, rej_before = home.counts()
    code, report, out = run_cli(home, path, "--format", fmt)
    raw_after, rej_after = home.counts()
    if code == 2:  # auto could not tell the format: nothing written, a message
        assert fmt == "auto" and "error" in out.lower()
        assert (raw_after, rej_after) == (raw_before, rej_before)
        return
    assert report is not None
    assert code == (1 if report["rejected"] else 0)
    assert raw_after - raw_before == report["accepted"]
    assert rej_after - rej_before == report["rejected"]
    if report["format"] != "jsonl":
        return  # auto read it as another format (a first line of "[]"): counts only
    n_good = sum(1 for kind, _ in lines if kind == GOOD)
    n_bad = sum(1 for kind, _ in lines if kind == BAD)
    assert report["accepted"] >= n_good
    assert report["rejected"] >= n_bad
    assert report["accepted"] + report["rejected"] + report["duplicates"] <= len(lines)
    # every good line is stored, under its own text
    texts = {t.text for t in home.rt.raw.read("hostile", "s", -1, 10**9)}
    for kind, raw in lines:
        if kind == GOOD:
            assert json.loads(raw)["text"] in texts


# ---- every other format: mutations of a valid fixture --------------------------------


@st.composite
def mutated(draw: st.DrawFn, data: bytes) -> bytes:
    kind = draw(st.integers(0, 5))
    at = draw(st.integers(0, len(data)))
    if kind == 0:  # truncated
        return data[:at]
    if kind == 1:  # invalid UTF-8 spliced in
        return data[:at] + b"\xff\xfe\xc3" + data[at:]
    if kind == 2:  # a garbage line
        return data[:at] + b"\n{not json at all\n" + data[at:]
    if kind == 3:  # deep nesting spliced in
        return data[:at] + b"[" * 50_000 + data[at:]
    if kind == 4:  # a control character storm
        return data[:at] + bytes(range(0, 32)) + data[at:]
    # a value replaced by a wrong type
    text = data.decode("utf-8", "replace")
    return (
        text.replace('"content"', '"content_x"', 1).replace('"text"', '"text": 5, "t"', 1).encode()
    )


@pytest.mark.parametrize("fmt", sorted(BY_FORMAT))
@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_mutated_transcripts(home: Home, fmt: str, data: st.DataObject) -> None:
    original = BY_FORMAT[fmt].read_bytes()
    blob = data.draw(mutated(original))
    path = home.path(BY_FORMAT[fmt].suffix)
    path.write_bytes(blob)
    home.tried += 1
    for args in (["--format", fmt], []):
        raw_before, rej_before = home.counts()
        code, report, out = run_cli(home, path, *args)
        raw_after, rej_after = home.counts()
        assert code in (0, 1, 2), out
        if code == 2:
            assert "error" in out.lower() and (raw_after, rej_after) == (raw_before, rej_before)
            continue
        assert report is not None
        assert raw_after - raw_before == report["accepted"]
        # the second ingest of the same file finds its rejects already stored
        assert rej_after - rej_before <= report["rejected"]


# ---- several megabytes ---------------------------------------------------------------


@pytest.mark.parametrize("megabytes", [3, 6])
def test_multi_megabyte_lines(home: Home, megabytes: int) -> None:
    path = home.path()
    big = "x" * (megabytes << 20)
    rows = [
        json.dumps(good_row(0, f"mb{megabytes}")),
        json.dumps({**good_row(1, "big"), "text": big}),  # over max_turn_chars
        '{"role": "user", "text": "' + big,  # several MB of truncated JSON
        json.dumps(good_row(2, f"mb{megabytes}")),
    ]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    home.tried += 2
    raw_before, rej_before = home.counts()
    code, report, out = run_cli(home, path)
    raw_after, rej_after = home.counts()
    assert code == 1 and report is not None
    assert (report["accepted"], report["rejected"]) == (2, 2)
    assert (raw_after - raw_before, rej_after - rej_before) == (2, 2)
    # kept for a later look: whole, or its head up to the line cap (which the reason says)
    from_file = filters.eq("source", str(path.resolve()))
    rejected = home.rt.raw.rejects.search().where(from_file.lance).to_list()
    cap = 16 * home.rt.settings.max_turn_chars + (1 << 20)
    longest = max(rejected, key=lambda r: len(r["raw"]))
    assert len(longest["raw"]) >= min(megabytes << 20, cap)
    if (megabytes << 20) > cap:
        assert f"first {cap} bytes" in longest["reason"]


def test_real_process_prints_a_message_not_a_traceback(tmp_path: Path) -> None:
    """The installed command in a fresh interpreter, on a file that is all bad."""
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'\xff\xfe\n{"role": \n' + b"[" * 100_000 + b"\n")
    env = {**os.environ, "EPISODIC_HOME": str(tmp_path / "home"), "EPISODIC_EMBEDDER": "hash"}
    exe = Path(sys.executable).with_name("episodic")
    proc = subprocess.run(
        [str(exe), "ingest", str(path), "--format", "jsonl", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["accepted"] == 0 and report["rejected_lines"][0]["line"] == 1
    proc = subprocess.run(
        [str(exe), "ingest", str(tmp_path / "missing.jsonl")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "error" in proc.stderr
