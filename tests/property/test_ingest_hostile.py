"""Hostile input over every parser: no traceback, nothing lost, same ids twice."""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from episodic.errors import IngestError
from episodic.ingest import FORMATS, parse_file, parse_with_stats
from episodic.ingest.claude_code import CONTINUATION
from episodic.models import Rejected, TurnIn

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@contextmanager
def written(data: bytes, name: str = "in.jsonl") -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / name
        p.write_bytes(data)
        yield p


def json_values() -> st.SearchStrategy[Any]:
    scalars = (
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False)
        | st.text(max_size=30)
    )
    return st.recursive(
        scalars,
        lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
    )


ts_values = st.one_of(
    st.none(),
    st.integers(min_value=-(10**15), max_value=10**15),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(
        [
            "2024-01-01T00:00:00Z",
            "2999-12-31T23:59:59+00:00",
            "0001-01-01",
            "9999-12-31T23:59:59-14:00",
            "",
        ]
    ),
    st.text(max_size=12),
)
rows = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant", "tool", "system", "robot", 3]),
        "text": st.one_of(
            st.text(max_size=40), st.just("x\x00\x1b\ud800"), st.integers(), st.none()
        ),
    },
    optional={
        "user_id": st.one_of(st.text(max_size=10), st.integers()),
        "stream_id": st.sampled_from(["a", "b", "' OR '1'='1", "%_"]),
        "ts": ts_values,
        "kind": st.sampled_from(["tool-call", "nope", "user-question"]),
        "meta": json_values(),
    },
)


def encode_row(row: dict[str, Any]) -> bytes:
    return json.dumps(row).encode("utf-8", "surrogatepass")


hostile_lines = st.one_of(
    rows.map(encode_row),
    st.binary(max_size=80).map(lambda b: b.replace(b"\n", b"")),
    rows.map(lambda r: encode_row(r)[: max(1, len(encode_row(r)) // 2)]),  # truncated
    st.integers(min_value=1, max_value=3000).map(lambda n: b"[" * n + b"]" * n),  # deep nesting
    st.just(b""),
    st.just(b"   "),
)


@SETTINGS
@given(data=st.binary(max_size=2000), fmt=st.sampled_from(("auto", *FORMATS)))
def test_any_bytes_never_raise(data: bytes, fmt: str) -> None:
    with written(data) as p:
        try:
            out = list(parse_file(p, fmt))
        except IngestError:
            assert fmt == "auto"  # only detection may refuse a whole file
            return
    assert all(isinstance(x, TurnIn | Rejected) for x in out)
    for r in out:
        if isinstance(r, Rejected):
            assert r.reason and r.line_no >= 1


@SETTINGS
@given(lines=st.lists(hostile_lines, max_size=25), fmt=st.sampled_from(("jsonl", "claude-code")))
def test_every_line_is_a_turn_a_reject_or_skipped(lines: list[bytes], fmt: str) -> None:
    with written(b"".join(line + b"\n" for line in lines)) as p:
        stats, it = parse_with_stats(p, fmt)
        out = list(it)
    # a Claude Code line may give several turns (blocks), all with the line's position
    turn_lines = {
        int(m.group(1))
        for t in out
        if isinstance(t, TurnIn)
        if (m := re.match(r"L(\d+)", t.position))
    }
    rejected_lines = [r.line_no for r in out if isinstance(r, Rejected)]
    assert len(rejected_lines) == len(set(rejected_lines)) == stats.rejected
    assert not turn_lines & set(rejected_lines)
    assert len(turn_lines) + len(rejected_lines) + stats.skipped == len(lines)
    assert stats.turns == sum(isinstance(t, TurnIn) for t in out)


@SETTINGS
@given(lines=st.lists(hostile_lines, max_size=25), fmt=st.sampled_from(FORMATS))
def test_parse_twice_gives_identical_turns(lines: list[bytes], fmt: str) -> None:
    with written(b"\n".join(lines)) as p:
        first = list(parse_file(p, fmt))
        second = list(parse_file(p, fmt))
    assert first == second
    ids = [t.turn_id for t in first if isinstance(t, TurnIn)]
    assert ids == [t.turn_id for t in second if isinstance(t, TurnIn)]


def cc_entry(kind: str, text: str, i: int) -> dict[str, Any]:
    base = {"sessionId": "s", "uuid": f"u{i}", "timestamp": "2025-01-01T00:00:00Z"}
    if kind == "summary":
        return {"type": "summary", "summary": text, "leafUuid": f"u{i}"}
    if kind == "compact":
        return {
            **base,
            "type": "user",
            "isCompactSummary": True,
            "message": {"role": "user", "content": text},
        }
    if kind == "continued":
        content = [{"type": "text", "text": f"{CONTINUATION} {text}"}]
        return {**base, "type": "user", "message": {"role": "user", "content": content}}
    return {**base, "type": kind, "message": {"role": kind, "content": text}}


@SETTINGS
@given(
    entries=st.lists(
        st.tuples(
            st.sampled_from(["user", "assistant", "summary", "compact", "continued"]),
            st.text(min_size=1),
        ),
        max_size=20,
    )
)
def test_compaction_summaries_never_become_turns(entries: list[tuple[str, str]]) -> None:
    marked = [
        (k, f"DERIVED-{i} {t}" if k in ("summary", "compact", "continued") else t)
        for i, (k, t) in enumerate(entries)
    ]
    data = "\n".join(json.dumps(cc_entry(k, t, i)) for i, (k, t) in enumerate(marked)).encode(
        "utf-8", "surrogatepass"
    )
    with written(data) as p:
        stats, it = parse_with_stats(p, "claude-code")
        out = list(it)
    turns = [t for t in out if isinstance(t, TurnIn)]
    assert not any("DERIVED-" in t.text or CONTINUATION in t.text for t in turns)
    assert stats.skipped_derived == sum(
        k in ("summary", "compact", "continued") for k, _ in entries
    )
    assert not any(isinstance(r, Rejected) and b"DERIVED-" in r.raw for r in out)


@settings(max_examples=5, deadline=None)
@given(size=st.integers(min_value=1_000_000, max_value=4_000_000), fmt=st.sampled_from(FORMATS))
def test_several_megabyte_strings(size: int, fmt: str) -> None:
    text = "é" * size
    rows = [
        {"role": "user", "text": text, "content": text},
        {"role": "user", "text": "small", "content": "small"},
    ]
    data = "\n".join(json.dumps(r, ensure_ascii=False) for r in rows).encode()
    with written(data) as p:
        out = list(parse_file(p, fmt))
    assert all(isinstance(x, TurnIn | Rejected) for x in out)
    assert not any(isinstance(t, TurnIn) and len(t.text) > 200_000 for t in out)
