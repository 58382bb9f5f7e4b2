"""Candidate facts of episodes digested by the salience step, held for the fact step.

The salience step asks one question per closed episode (`episodic.digest`)
whose answer carries the episode's candidate facts too; the fact step of the
same run takes them from here instead of asking again. A miss (a run that
died between the two steps, or facts pending from an earlier run) costs the
fact step its own extraction call, as before. Bounded: the oldest entries go.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from episodic.facts.types import NewFact

CAPACITY = 20_000
_LOCK = threading.Lock()
_HELD: OrderedDict[tuple[str, str], list[NewFact]] = OrderedDict()


def hold(user_id: str, episode_id: str, facts: list[NewFact]) -> None:
    with _LOCK:
        _HELD[(user_id, episode_id)] = list(facts)
        _HELD.move_to_end((user_id, episode_id))
        while len(_HELD) > CAPACITY:
            _HELD.popitem(last=False)


def take(user_id: str, episode_id: str) -> list[NewFact] | None:
    """The held facts (removed), or None when this episode was not digested here."""
    with _LOCK:
        return _HELD.pop((user_id, episode_id), None)


def held(user_id: str, episode_ids: list[str]) -> set[str]:
    """Of these episodes, those whose facts are held (left in place)."""
    with _LOCK:
        return {e for e in episode_ids if (user_id, e) in _HELD}
