"""Check a model's answer before it is trusted.

A small local model answers in the schema's shape and still says nothing:
it echoes a field's description or the prompt ("what the user asked and what
came of it"), gives every episode the same score, or "extracts" facts the
episode never stated. Each check here names what it caught; the caller
counts it for the run and answers that item offline instead. Offline
answers are never checked (they are the reference).

    echoes_prompt(text, instructions) -> bool
    unsupported_fact(fact, episode_text) -> bool
    flat_scores(scores) -> bool
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

ECHO = "echoed-prompt"
FLAT = "same-score-for-all"
UNSUPPORTED = "fact-not-in-episode"
TWO_ACTIVE = "two-active-values"

_WORD = re.compile(r"[a-z0-9']+")
_STOP = frozenset(
    """a an the of to in on at for and or but with from by as is are was were be been
    being it its this that these those user user's users team i me my we our you your he
    she they them his her their has have had do does did not no so very really just also
    now still then than there here about into over after before since will would can
    could should may might must one two who whom which what when where why how all any
    some more most much many new old""".split()
)
ECHO_WORDS = 5  # this many words in a row, copied from the instructions
FLAT_MIN = 3  # a batch of fewer episodes may well share a score
MIN_SUPPORT = 0.5  # share of a fact's content words the episode must contain


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _stem(w: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(w) > len(suffix) + 2 and w.endswith(suffix):
            return w[: -len(suffix)]
    return w


def _shingles(words: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def echoes_prompt(text: str, instructions: Iterable[str], episode_text: str = "") -> bool:
    """True when `text` copies ECHO_WORDS words in a row from an instruction
    that the episode itself does not contain (a user may quote a phrase)."""
    words = _words(text)
    if len(words) < ECHO_WORDS:
        # a short answer is an echo only when it is a whole instruction phrase
        key = " ".join(words)
        return bool(key) and any(key == " ".join(_words(i)) for i in instructions)
    mine = _shingles(words, ECHO_WORDS)
    theirs: set[tuple[str, ...]] = set()
    for ins in instructions:
        theirs |= _shingles(_words(ins), ECHO_WORDS)
    copied = mine & theirs
    if not copied:
        return False
    said = _shingles(_words(episode_text), ECHO_WORDS)
    return bool(copied - said)


def unsupported_fact(fact: str, episode_text: str) -> bool:
    """True when fewer than half the fact's content words occur in the episode."""
    content = [_stem(w) for w in _words(fact) if w not in _STOP and len(w) > 1]
    if not content:
        return True
    said = {_stem(w) for w in _words(episode_text)}
    found = sum(1 for w in content if w in said)
    return found / len(content) < MIN_SUPPORT


def flat_scores(scores: Sequence[int]) -> bool:
    """Every episode of a batch of at least FLAT_MIN got the same score."""
    return len(scores) >= FLAT_MIN and len(set(scores)) == 1
