"""A command's table on a narrow terminal: every value whole, never cut to
"codi…"; on a wide one, still one table."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from episodic.adapters.cli import output

COLUMNS = ("user", "stream", "raw turns", "watermark", "last run", "state")
ROWS = (
    ("alice", "coding-agent", "96", "95", "consolidate-all-20261207T131800Z", "Completed"),
    ("alice", "ops-agent", "14", "13", "consolidate-all-20261207T131800Z", "Completed"),
)


def _render(monkeypatch: pytest.MonkeyPatch, width: int) -> str:
    buf = io.StringIO()
    monkeypatch.setattr(output, "console", Console(file=buf, width=width, color_system=None))
    output.show(False, None, "streams", COLUMNS, (r for r in ROWS))
    return buf.getvalue()


def test_a_narrow_terminal_gets_each_row_as_a_block_with_every_value_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = _render(monkeypatch, 60)
    lines = [line.rstrip() for line in text.splitlines()]
    for row in ROWS:
        for col, cell in zip(COLUMNS, row, strict=True):
            assert any(line.split() == [*col.split(), cell] for line in lines), (col, cell)
    assert "…" not in text
    assert all(len(line) <= 60 for line in lines)


def test_a_wide_terminal_gets_one_table(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _render(monkeypatch, 200)
    row_lines = [line for line in text.splitlines() if "coding-agent" in line]
    assert len(row_lines) == 1
    assert all(cell in row_lines[0] for cell in ROWS[0])


def test_long_text_wraps_inside_the_table_when_the_short_columns_fit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    buf = io.StringIO()
    monkeypatch.setattr(output, "console", Console(file=buf, width=80, color_system=None))
    text = "word " * 40
    output.show(False, None, "facts", ("status", "text"), [("active", text.strip())])
    lines = buf.getvalue().splitlines()
    assert sum("active" in line for line in lines) == 1  # one table row, wrapped
    assert sum(line.count("word") for line in lines) == 40


def test_a_title_wider_than_its_table_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    buf = io.StringIO()
    monkeypatch.setattr(output, "console", Console(file=buf, width=80, color_system=None))
    title = "forgot fact: 2 rows gone (audit 1aa388aa315fa1a9abf89ff96fa18bac)"
    output.show(False, None, title, ("table", "rows"), [("facts", "1"), ("fact_history", "1")])
    lines = buf.getvalue().splitlines()
    assert lines[0].strip() == title  # not wrapped to the two columns' width
    assert sum("facts" in line for line in lines) == 1
