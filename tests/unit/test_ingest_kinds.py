"""Kind derivation shared by every parser."""

from __future__ import annotations

import pytest

from episodic.ingest.kinds import derive_kind


@pytest.mark.parametrize(
    "text",
    [
        "no, use the staging database",
        "No. That is the old endpoint.",
        "Actually the bug is in the refresh path",
        "that's wrong, the port is 5433",
        "I meant the integration tests",
        "Hmm, that's not what I asked for",
        "wrong file",
    ],
)
def test_corrections(text: str) -> None:
    assert derive_kind("user", text) == "user-correction"


@pytest.mark.parametrize(
    "text",
    [
        "no problem, thanks",
        "Can you deploy it?",
        "Notebook cells are slow",
        "I live in Paris",
        "nobody uses it",
    ],
)
def test_not_corrections(text: str) -> None:
    assert derive_kind("user", text) == "user-question"


def test_no_after_a_question_is_an_answer() -> None:
    assert derive_kind("user", "Nope, never been there.", after_question=True) == "user-question"
    assert derive_kind("user", "No, that's wrong.", after_question=True) == "user-correction"


@pytest.mark.parametrize(
    ("text", "flag", "kind"),
    [
        ("Traceback (most recent call last):\n  ...", None, "tool-error"),
        ("bash: foo: command not found", None, "tool-error"),
        ("Process exited with code 2", None, "tool-error"),
        ('{"error": "not found"}', None, "tool-error"),
        ("3 passed in 0.2s", None, "tool-success"),
        ("error handling looks fine", False, "tool-success"),  # the flag wins over the text
        ("all good", True, "tool-error"),
    ],
)
def test_tool_kinds(text: str, flag: bool | None, kind: str) -> None:
    assert derive_kind("tool", text, is_error=flag) == kind


def test_other_roles() -> None:
    assert derive_kind("system", "anything") == "system-event"
    assert derive_kind("assistant", "ls -la", tool_call=True) == "tool-call"
    assert derive_kind("assistant", "Done.") == "assistant-answer"
    assert derive_kind("user", "[Request interrupted by user]") == "other"
