"""An evaluation's throwaway text index is made without a word on stderr
(`mode="overwrite"` of a table not there yet made lance warn, once per
baseline, on every `episodic eval locomo`), and is made again when asked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CODE = """
import sys
from storage.db import Store
from storage.search import TextIndex
store = Store(sys.argv[1], dim=8)
first = TextIndex(store, "eval_turn")
first.put("u", ["the deploy pipeline failed", "lunch at noon"])
print(first.query("u", "deploy", 2))
again = TextIndex(store, "eval_turn")  # the next conversation's index, made anew
again.put("u", ["a cat named rex"])
print(again.query("u", "rex", 2), again.query("u", "deploy", 2))
"""


def test_a_text_index_is_made_quietly(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    res = subprocess.run(
        [sys.executable, "-c", CODE, str(tmp_path / "db")],
        capture_output=True, text=True, cwd=root, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["[0]", "[0]", "[]"] and res.stderr == ""
