"""The anchored salience scale as the digest prompt asks it, and the prompt helpers."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from episodic.facts.types import FactTurn
from episodic.prompts import clip_middle, one_line
from episodic.prompts.digest import digest_messages
from episodic.prompts.salience import ANCHORS

NOW = datetime(2024, 5, 17, 9, 30, tzinfo=UTC)
TURNS = [FactTurn("t1", "user", "hi", NOW)]
KINDS = ["user-question"]


@pytest.mark.parametrize(
    ("domain", "low", "high"),
    [
        ("general", "brushing teeth, making bed", "a break up, college acceptance"),
        ("coding", "boilerplate getter", "core algorithm of the system"),
        ("sre", "one-line clarifying question", "critical production incident"),
    ],
)
def test_both_endpoints_are_named(domain: str, low: str, high: str) -> None:
    messages = digest_messages(TURNS, KINDS, domain=domain, now=NOW)  # type: ignore[arg-type]
    prompt = messages[-1]["content"]
    assert f"where 1 is {ANCHORS[domain][0]} and 10 is {ANCHORS[domain][1]}" in prompt
    assert low in prompt and high in prompt
    assert "rating.score" in prompt and "rating.rationale" in prompt and "rating.summary" in prompt
    assert "2024-05-17" in prompt
    assert [m["role"] for m in messages] == ["system", "user"]


def test_prompt_depends_on_now_not_import_time() -> None:
    a = digest_messages(TURNS, KINDS, now=NOW)
    b = digest_messages(TURNS, KINDS, now=datetime(2030, 1, 1, tzinfo=UTC))
    assert a != b


def test_unknown_domain_is_refused() -> None:
    with pytest.raises(ValueError, match="domain"):
        digest_messages(TURNS, KINDS, domain="legal", now=NOW)  # type: ignore[arg-type]


def test_long_episode_text_is_bounded() -> None:
    turns = [FactTurn(f"t{i}", "user", "y" * 10_000, NOW) for i in range(50)]
    prompt = digest_messages(turns, KINDS * 50, now=NOW, max_tokens=500)[-1]["content"]
    assert len(prompt) < 50 * 40 + 3_000
    assert prompt.count("[... omitted ...]") == 50


def test_one_line_and_clip_middle() -> None:
    assert one_line("a\n b\t c", 10) == "a b c"
    cut = one_line("alpha beta gamma delta epsilon", 20)
    assert len(cut) <= 20 and cut.endswith("…") and "\n" not in cut
    clipped = clip_middle("h" * 100 + "t" * 100, 60)
    assert len(clipped) == 60 and clipped.startswith("h") and clipped.endswith("t")
    with pytest.raises(ValueError):
        one_line("x", 1)
