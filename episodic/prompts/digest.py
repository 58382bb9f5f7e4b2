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


# ---- several closed episodes of one user in one call ------------------------

# The batch budget. One call carries at most BATCH_MAX_EPISODES episodes and
# about BATCH_INPUT_TOKENS tokens of prompt (4 characters a token). Why these
# numbers: the answer grows with the batch (a rating of ~60 tokens and up to 8
# facts of ~35 tokens per episode), and a 270M-4B model on a CPU reads a
# prompt at ~100-300 tokens/s but writes at ~8-20 tokens/s, so the answer, not
# the prompt, bounds the wait: 8 episodes are at most ~2,500 output tokens,
# within a 4k-8k context beside a 3,000-token prompt. Episodes of LoCoMo
# average ~6 turns (~400 tokens rendered): a batch of 8 fits the budget, which
# turns ~160 digest calls per 1,000 turns into ~20. A single episode over the
# budget goes alone, clipped per turn as the one-episode prompt clips it.
BATCH_MAX_EPISODES = 8
BATCH_INPUT_TOKENS = 3000

_BATCH_SYSTEM = """\
You file closed episodes of one user's conversation into a long-term memory. \
For EACH episode shown, answer with three things: how much it should weigh on \
future recall, what it was about, and the durable facts about the user (or \
their team) it states. Episodes are independent: rate each on its own; \
scores differ when the episodes differ.
Facts: only what the user states in that episode (an assistant's or a tool's \
words count only when the user confirms them); each one short sentence with \
its subject named ("User", "Team", or a name), no pronouns needing the \
conversation; include things that ended ("no longer", "sold", "moved"). \
Ignore questions, small talk and guesses. Cite the numbers of the turns of \
that episode that state each fact. Never copy these instructions into an \
answer. Be brief and deterministic."""


def episode_block_chars(n_turns: int, max_tokens: int = DEFAULT_MAX_TOKENS) -> int:
    """The per-turn clip of one episode, as in the one-episode prompt."""
    return max(40, min(MAX_TURN_CHARS, max_tokens * CHARS_PER_TOKEN // max(1, n_turns)))


def render_block(
    turns: Sequence[FactTurn], kinds: Sequence[str], max_tokens: int = DEFAULT_MAX_TOKENS
) -> list[str]:
    if len(kinds) != len(turns):
        raise ValueError("kinds and turns differ in length")
    per_turn = episode_block_chars(len(turns), max_tokens)
    return [
        f"[{i}] {t.role} ({k}): {clip_middle(' '.join(t.text.split()), per_turn)}"
        for i, (t, k) in enumerate(zip(turns, kinds, strict=True), start=1)
    ]


def estimate_tokens(turns: Sequence[FactTurn], max_tokens: int = DEFAULT_MAX_TOKENS) -> int:
    """Rough prompt tokens of one episode's block (what the batch budget counts)."""
    per_turn = episode_block_chars(len(turns), max_tokens)
    chars = sum(min(len(" ".join(t.text.split())), per_turn) + 30 for t in turns)
    return chars // CHARS_PER_TOKEN + 10


def digest_batch_messages(
    episodes: Sequence[tuple[Sequence[FactTurn], Sequence[str], datetime]],
    *,
    domain: Domain = "general",
    now: datetime,
    max_tokens: int = DEFAULT_MAX_TOKENS,
) -> list[Message]:
    """Messages for several episodes (turns, kinds, end), numbered from 1; each
    episode's turns numbered from 1, as that episode's facts cite them."""
    low, high = anchors(domain)
    blocks = []
    for n, (turns, kinds, ended) in enumerate(episodes, start=1):
        lines = render_block(turns, kinds, max_tokens)
        blocks.append(f"Episode {n} (ended {today(ended)}):\n" + "\n".join(lines))
    k = len(episodes)
    user = (
        f"{today(now)}\n\n" + "\n\n".join(blocks) + "\n\n"
        f"Return `episodes`: exactly {k} items, one per episode, in order, each with:\n"
        "- episode: its number\n"
        f"- rating.score: 1 to 10, where 1 is {low} and 10 is {high}; "
        "most episodes are neither\n"
        "- rating.rationale: why, one sentence (at most 200 characters)\n"
        "- rating.summary: one line in your own words about that episode "
        "(at most 160 characters)\n"
        "- facts: at most 8 durable facts, each with `text` (at most 150 characters) "
        "and `support` (that episode's turn numbers); an empty list when there are none"
    )
    return system_and_user(_BATCH_SYSTEM, user)


def instruction_texts() -> list[str]:
    """Every instruction a digest prompt carries (to catch an answer that echoes one)."""
    return [
        _SYSTEM,
        _BATCH_SYSTEM,
        "what the user asked and what came of it",
        "why, one sentence",
        "one line in your own words about that episode",
        "durable facts about the user",
        "At least one episode should weigh on future recall",
        "how much the episode should weigh on future recall",
        "One short, self-contained fact about the user or their team, "
        "understandable without the conversation",
        "Numbers of the turns (as shown, starting at 1) that state this fact",
        "1 = mundane ... 10 = extremely poignant",
        "one line: what happened",
    ]
