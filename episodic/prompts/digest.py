"""The one prompt per closed episode: salience, summary and candidate facts at once.

It joins the anchored salience question (`prompts.salience`) and the fact
question (`prompts.facts`) over one numbered rendering of the turns, so one
call answers what two did. Lengths are stated in the prompt as the schema
bounds them: a small local model otherwise runs to `max_tokens`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from episodic.facts.types import FactTurn
from episodic.llm.base import Message
from episodic.prompts import clip_middle, system_and_user, today
from episodic.prompts.salience import CHARS_PER_TOKEN, DEFAULT_MAX_TOKENS, Domain, anchors

MAX_TURN_CHARS = 600

_SYSTEM = """\
You file one closed episode of a conversation into a long-term memory. \
Answer with three things: how much the episode should weigh on future recall, \
what it was about, and the durable facts about the user (or their team) it states.
Facts: only what the user states (an assistant's or a tool's words count only \
when the user confirms them); each one short sentence with its subject named \
("User", "Team", or a name), no pronouns needing the conversation; include \
things that ended ("no longer", "sold", "moved"). Ignore questions, small talk \
and guesses. Cite the numbers of the turns that state each fact. Be brief and \
deterministic."""


def digest_messages(
    turns: Sequence[FactTurn],
    kinds: Sequence[str],
    *,
    domain: Domain = "general",
    now: datetime,
    max_tokens: int = DEFAULT_MAX_TOKENS,
) -> list[Message]:
    """Messages for one episode; turns numbered from 1, as the facts' support cites them."""
    low, high = anchors(domain)
    if len(kinds) != len(turns):
        raise ValueError("kinds and turns differ in length")
    per_turn = max(40, min(MAX_TURN_CHARS, max_tokens * CHARS_PER_TOKEN // max(1, len(turns))))
    lines = [
        f"[{i}] {t.role} ({k}): {clip_middle(' '.join(t.text.split()), per_turn)}"
        for i, (t, k) in enumerate(zip(turns, kinds, strict=True), start=1)
    ]
    user = (
        f"{today(now)}\n\nEpisode:\n" + "\n".join(lines) + "\n\n"
        "Return:\n"
        f"- rating.score: 1 to 10, where 1 is {low} and 10 is {high}; "
        "most episodes are neither\n"
        "- rating.rationale: why, one sentence (at most 200 characters)\n"
        "- rating.summary: what the user asked and what came of it, one line "
        "(at most 160 characters)\n"
        "- facts: at most 8 durable facts, each with `text` (at most 150 characters) "
        "and `support` (turn numbers); an empty list when there are none"
    )
    return system_and_user(_SYSTEM, user)
