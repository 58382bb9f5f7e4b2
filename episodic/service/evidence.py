"""Reflection's evidence searches: every focal question of one reflection
searched together, before any insight is asked for.

The search reads the user's working set (episodic/service/working_set.py):
every turn of the user with its BM25 terms and vector, built in memory on
first use. A consolidation reflects users on several threads, and each
loading its own user's set at the same moment made the peak grow with the
users' histories (at 200,000 turns of 20 users, two sets of 10,000 turns were
most of the peak, docs/perf/notes.md). So a user nobody has searched is loaded
by one reflection at a time, searched for every question, and let go; a user
the API searches stays in the set as it was.

Searching first changes nothing: the searches neither write nor read what
the insights produce, so each question gets the hits it got when searched
between two insight calls."""

from __future__ import annotations

import threading
from datetime import datetime

from episodic.service.runtime import Runtime
from episodic.service.search import MemoryOptions, search_memory
from episodic.service.views import Hit

_ONE_USER_AT_A_TIME = threading.Lock()


def evidence_hits(
    rt: Runtime, user_id: str, questions: list[str], opts: MemoryOptions, now: datetime
) -> list[list[Hit]]:
    """The search's hits for each question, in order."""
    if rt.working.holds(user_id):
        return [search_memory(rt, user_id, q, opts, now=now) for q in questions]
    with _ONE_USER_AT_A_TIME:
        try:
            return [search_memory(rt, user_id, q, opts, now=now) for q in questions]
        finally:
            rt.working.drop(user_id)
