"""Kind derivation shared by every parser."""

from __future__ import annotations

import pytest

from episodic.ingest.kinds import derive_kind

# a user's text, with no question before it, and the kind it must get
USER_TEXTS = {
    "no, use the staging database": "user-correction",
    "No. That is the old endpoint.": "user-correction",
    "Actually the bug is in the refresh path": "user-correction",
    "that's wrong, the port is 5433": "user-correction",
    "I meant the integration tests": "user-correction",
    "Hmm, that's not what I asked for": "user-correction",
    "wrong file": "user-correction",
    "no problem, thanks": "user-question",
    "Can you deploy it?": "user-question",
    "Notebook cells are slow": "user-question",
    "I live in Paris": "user-question",
    "nobody uses it": "user-question",
}


@pytest.mark.parametrize(("text", "kind"), USER_TEXTS.items())
def test_corrections_and_not(text: str, kind: str) -> None:
    assert derive_kind("user", text) == kind


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
