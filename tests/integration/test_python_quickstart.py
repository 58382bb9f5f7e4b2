"""The README's Python quick start runs as written (on a temporary home) and
does what its comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from episodic.config import Settings

README = Path(__file__).resolve().parents[2] / "README.md"


def quickstart() -> str:
    section = README.read_text(encoding="utf-8").split("## From Python", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "the README lost its Python quick start"
    return found.group(1)


@pytest.mark.usefixtures("prefect_harness")
def test_readme_python_quickstart_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # as written: the default embedder, not the suite's hash one
    monkeypatch.setenv("EPISODIC_EMBEDDER", Settings.model_fields["embedder"].default)
    code = quickstart()
    assert '"./agent-memory"' in code
    code = code.replace('"./agent-memory"', repr(str(tmp_path / "memory")))
    out = io.StringIO()
    scope: dict[str, object] = {}
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), scope)
    lines = out.getvalue().strip().splitlines()
    assert lines[-1] == "['User moved to Berlin last week']"
    hits = [line.split(" ", 2) for line in lines[:-1]]
    assert hits and {h[0] for h in hits} <= {"turn", "fact", "reflection"}
    assert any("Berlin" in h[2] for h in hits)
    # the question names the user by the id it is kept under: the fact leads
    assert hits[0][0] == "fact" and "Berlin" in hits[0][2]
    memory = scope["memory"]
    # the block's `with` closed the memory; its data stays on disk
    from episodic import Memory

    assert isinstance(memory, Memory)
    with Memory(Settings(home=tmp_path / "memory")) as again:
        assert (
            again.add(
                "alice",
                [
                    {
                        "role": "user",
                        "text": "I moved to Berlin last week",
                        "ts": "2025-03-01T10:00:00Z",
                        "id": "m1",
                    }
                ],
            ).duplicates
            == 1
        )
