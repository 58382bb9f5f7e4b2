"""The anchored salience prompt and the rendering of an episode."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from episodic.prompts import clip_middle, one_line
from episodic.prompts.salience import ANCHORS, render_episode, salience_messages
from episodic.salience import EpisodeTurn

NOW = datetime(2024, 5, 17, 9, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("domain", "low", "high"),
    [
        ("general", "brushing teeth, making bed", "a break up, college acceptance"),
        ("coding", "boilerplate getter", "core algorithm of the system"),
        ("sre", "one-line clarifying question", "critical production incident"),
    ],
)
def test_both_endpoints_are_named(domain: str, low: str, high: str) -> None:
    messages = salience_messages("user: hi", domain=domain, now=NOW)  # type: ignore[arg-type]
    prompt = messages[-1]["content"]
    assert f"where 1 is {ANCHORS[domain][0]} and 10 is {ANCHORS[domain][1]}" in prompt
    assert low in prompt and high in prompt
    assert "score" in prompt and "rationale" in prompt and "summary" in prompt
    assert "2024-05-17" in prompt
    assert [m["role"] for m in messages] == ["system", "user"]


def test_prompt_depends_on_now_not_import_time() -> None:
    a = salience_messages("x", domain="general", now=NOW)
    b = salience_messages("x", domain="general", now=datetime(2030, 1, 1, tzinfo=UTC))
    assert a != b


def test_unknown_domain_is_refused() -> None:
    with pytest.raises(ValueError, match="domain"):
        salience_messages("x", domain="legal", now=NOW)  # type: ignore[arg-type]


def test_long_episode_text_is_bounded() -> None:
    text = "y" * 100_000
    prompt = salience_messages(text, domain="general", now=NOW, max_tokens=500)[-1]["content"]
    assert len(prompt) < 500 * 4 + 1_000
    assert "[... omitted ...]" in prompt


def test_render_episode_is_compact_and_labelled() -> None:
    turns = [
        EpisodeTurn("user", "user-correction", "no,\n  use   tabs"),
        EpisodeTurn("tool", "tool-error", "boom"),
        EpisodeTurn("assistant", "other", "ok"),
    ]
    assert (
        render_episode(turns) == "user (correction): no, use tabs\ntool error: boom\nassistant: ok"
    )


def test_render_episode_keeps_head_and_tail_within_budget() -> None:
    turns = [EpisodeTurn("user", "user-question", f"turn {i} " + "x" * 90) for i in range(200)]
    text = render_episode(turns, max_tokens=500)
    assert len(text) <= 500 * 4 + 40
    assert text.startswith("user: turn 0 ")
    assert "user: turn 199 " in text
    omitted = int(text.split("[... ")[1].split(" turns")[0])
    assert omitted == 200 - text.count("user: turn ")


def test_one_line_and_clip_middle() -> None:
    assert one_line("a\n b\t c", 10) == "a b c"
    cut = one_line("alpha beta gamma delta epsilon", 20)
    assert len(cut) <= 20 and cut.endswith("…") and "\n" not in cut
    clipped = clip_middle("h" * 100 + "t" * 100, 60)
    assert len(clipped) == 60 and clipped.startswith("h") and clipped.endswith("t")
    with pytest.raises(ValueError):
        one_line("x", 1)
