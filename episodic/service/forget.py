"""Forget a user, a turn, an episode or a fact (README: "Forgetting").

A user: every row of every user table (storage/forget.py's registry), the
user's cached model answers, spooled hook entries and timeline pictures,
then every older table version, so no file under the home still holds them.
It runs under the user's lease: a consolidation of that user in flight
finishes first (up to `wait_s`, then LeaseBusy with nothing erased), and
none starts until the forget is done.

A turn or an episode: raw keeps its place in the stream (seqs stay
contiguous: the log's invariants hold) but the turn's text and metadata are
replaced by a tombstone (whole rows rewritten: a column update would leave
the old text in the fragment's first file); its vector and search document
go, and its words leave the stream's saved detector; the episode that held
it is re-derived from what is left (text, centroid; its salience, summary
and facts by the next consolidation), the facts whose only source was that
episode are removed with their history, and the reflections citing it are
removed. A fact: its row, the wordings a person reworded into it,
and every history row that names them; reflections citing it go.

Either way the supersession chains close over what is erased: a kept fact
that superseded an erased one now supersedes the nearest kept fact before
it. Where a forgotten turn took a believed fact, the value it had replaced
is believed again (an ADD by `forget`) until the next consolidation finds
the change in the turns left; a fact forgotten itself believes nothing in
its place.

Every forget appends an audit row (no content) and returns it as a receipt;
a repeated forget of a user, turn or episode is a no-op with the same
receipt shape (a fact forgotten is not found again).
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Sequence
from typing import Any

from episodic.errors import NotFoundError
from episodic.llm.cache import user_folder
from episodic.models import TOMBSTONE, Episode, Turn
from episodic.service.plot_path import plot_paths
from episodic.service.runtime import Runtime
from episodic.spool import claim, done
from episodic.vocab import FactsState
from storage import filters
from storage.forget import TURN_DOCS, erase_user, present, purge_versions, record
from storage.lease import user_lease


def forget_user(rt: Runtime, user_id: str, actor: str, wait_s: float) -> dict[str, Any]:
    store = rt.store
    with user_lease(store.uri, user_id, wait_s=wait_s):
        rt.recalls.flush()
        counts = erase_user(store, user_id)
        purge_versions(store, [n for n, c in counts.items() if c])
        counts["llm_cache"] = _drop_cached(rt, user_id)
        counts["spool"] = _drop_spooled(rt, user_id)
        plots = [p for p in plot_paths(rt.settings.home, user_id) if p.exists()]
        counts["plots"] = len(plots)
        for plot in plots:
            plot.unlink(missing_ok=True)
    return record(store, actor=actor, kind="user", user_id=user_id, target="", counts=counts)


def _drop_cached(rt: Runtime, user_id: str) -> int:
    """The user's cached model answers (all of them: an entry does not say
    which turns its prompt held; the cost is a model call on a rerun)."""
    folder = user_folder(rt.settings.cache_dir / "llm", user_id)
    n = sum(1 for _ in folder.rglob("*.json")) if folder.exists() else 0
    shutil.rmtree(folder, ignore_errors=True)
    return n


def _drop_spooled(rt: Runtime, user_id: str) -> int:
    """Spooled hook entries of the user go; the others are put back."""
    from episodic.spool import enqueue

    dropped = 0
    for entry in claim(rt.settings.home):
        done(entry)
        if entry.user_id == user_id:
            dropped += 1
        else:
            enqueue(rt.settings.home, entry.user_id, entry.path, entry.fmt)
    return dropped


def forget_fact(
    rt: Runtime, user_id: str, fact_id: str, actor: str, wait_s: float
) -> dict[str, Any]:
    store = rt.store
    with user_lease(store.uri, user_id, wait_s=wait_s):
        wordings = _wordings(rt, user_id, fact_id)
        counts = _erase_facts(rt, user_id, wordings, rederived=False)
        counts["reflections"] = _erase_reflections(rt, user_id, facts=wordings)
        counts["llm_cache"] = _drop_cached(rt, user_id)
        purge_versions(store, [n for n, c in counts.items() if c])
    return record(store, actor=actor, kind="fact", user_id=user_id, target=fact_id, counts=counts)


def _wordings(rt: Runtime, user_id: str, fact_id: str) -> list[str]:
    """The fact and the wordings a person reworded into it: one fact recorded
    wrong before, so forgetting it leaves none of them. A reworded successor
    holds from the same moment (as search's `stale_facts` reads it); a
    value that changed later is another fact, and stays."""
    by_id = {f.fact_id: f for f in rt.facts.list(user_id, include_inactive=True)}
    out = [fact_id]
    new = by_id.get(fact_id)
    while new is not None and new.supersedes and new.supersedes not in out:
        old = by_id.get(new.supersedes)
        if old is None or old.valid_from != new.valid_from:
            break
        out.append(old.fact_id)
        new = old
    return out


def forget_turns(
    rt: Runtime,
    user_id: str,
    turn_ids: Sequence[str],
    kind: str,
    target: str,
    actor: str,
    wait_s: float,
) -> dict[str, Any]:
    """Tombstone the turns, re-derive their episodes (see the module docstring)."""
    store = rt.store
    # every key on every receipt: a repeat is a no-op of the same shape
    keys = ("raw_turns", "segmenter_state", "turn_vectors", "episodes", "facts",
            "fact_history", "reflections", "llm_cache")  # fmt: skip
    counts: Counter[str] = Counter(dict.fromkeys(keys, 0))
    with user_lease(store.uri, user_id, wait_s=wait_s):
        turns = rt.raw.by_ids(user_id, list(turn_ids))
        ids = [t.turn_id for t in turns if t.text != TOMBSTONE]
        if ids:
            store.rewrite_columns(
                "raw_turns", user_id, [{"turn_id": i, "text": TOMBSTONE, "meta": "{}"} for i in ids]
            )
        counts["raw_turns"] = len(ids)
        counts["segmenter_state"] = _scrub_detectors(rt, [t for t in turns if t.turn_id in ids])
        if ids and "turn_vectors" in present(store):
            cond = filters.user_in(user_id, "turn_id", ids)
            counts["turn_vectors"] = store.delete("turn_vectors", cond)
        if ids and TURN_DOCS in present(store):
            # stores written before the search built its documents in memory: a
            # document holds the turn before it too, so the stream's documents go
            streams = sorted({t.stream_id for t in turns if t.turn_id in set(ids)})
            cond = filters.user(user_id) & filters.within("stream_id", streams)
            counts[TURN_DOCS] = store.delete(TURN_DOCS, cond)
        for e in _episodes_holding(rt, user_id, ids):  # none again on a repeat
            counts["episodes"] += _rederive(rt, e)
            sole = [f.fact_id for f in rt.facts.list(user_id, include_inactive=True)
                    if f.source_episode_ids == [e.episode_id]]  # fmt: skip
            counts.update(_erase_facts(rt, user_id, sole, rederived=True))
            counts["reflections"] += _erase_reflections(
                rt, user_id, episodes=[e.episode_id], facts=sole
            )
        counts["llm_cache"] = _drop_cached(rt, user_id) if ids else 0
        purge_versions(store, [n for n, c in counts.items() if c])
    return record(store, actor=actor, kind=kind, user_id=user_id, target=target, counts=counts)


def _scrub_detectors(rt: Runtime, turns: Sequence[Turn]) -> int:
    """The forgotten turns' words out of their streams' saved detectors."""
    from episodic.segment.scrub import scrub

    by_stream: dict[tuple[str, str], list[Turn]] = {}
    for t in turns:
        by_stream.setdefault((t.user_id, t.stream_id), []).append(t)
    rows: list[tuple[str, dict[str, Any]]] = []
    for (user_id, stream_id), held in by_stream.items():
        cp = rt.checkpoints.load(user_id, stream_id)
        if not cp.detector:
            continue
        seqs, ids = [t.seq for t in held], [t.turn_id for t in held]
        new = scrub(cp.detector, seqs, ids, TOMBSTONE)
        if new is not None:
            rows.append((user_id, {"key": cp.key, "detector": new}))
    return sum(rt.store.rewrite_columns("segmenter_state", u, [r]) for u, r in rows)


def forget_episode(
    rt: Runtime, user_id: str, episode_id: str, actor: str, wait_s: float
) -> dict[str, Any]:
    found = rt.episodes.by_ids(user_id, [episode_id])
    if not found:
        raise NotFoundError("episode", episode_id, "not stored for this user")
    turns = list(found[0].turn_ids)
    return forget_turns(rt, user_id, turns, "episode", episode_id, actor, wait_s)


def _episodes_holding(rt: Runtime, user_id: str, turn_ids: list[str]) -> list[Episode]:
    wanted = set(turn_ids)
    return [e for e in rt.episodes.list(user_id) if wanted & set(e.turn_ids)]


def _rederive(rt: Runtime, e: Episode) -> int:
    """The episode's text and centroid from its turns as they are now; its
    salience, summary and facts derived again by the next consolidation."""
    from episodic.service.segment import episode_text

    turns = sorted(rt.raw.by_ids(e.user_id, list(e.turn_ids)), key=lambda t: t.seq)
    kept = [t for t in turns if t.text != TOMBSTONE]
    text = episode_text(kept) if kept else ""
    vec = rt.embedder.embed([text])[0] if text else None
    centroid = [float(x) for x in vec] if vec is not None else [0.0] * rt.store.dim
    rt.store.rewrite_columns(
        "episodes",
        e.user_id,
        [
            {
                "episode_id": e.episode_id,
                "text": text,
                "summary": "",
                "salience_rationale": "",
                "salience_source": "" if text else e.salience_source,  # "": scored and
                "centroid": centroid,  # summarised again from what is left
                "facts_state": FactsState.PENDING.value,
                "fact_plan": "",
            }
        ],
    )
    return 1


def _erase_facts(
    rt: Runtime, user_id: str, fact_ids: list[str], *, rederived: bool
) -> dict[str, int]:
    """Erase the facts and their history rows; close the chains over them.
    `rederived`: their episodes are mined again (a forgotten turn), so the
    value an erased believed fact had replaced is believed until then; a
    person's forget of the fact itself believes nothing in its place."""
    store = rt.store
    if not fact_ids:
        return {"facts": 0, "fact_history": 0}
    splices, reopen = _chains_after(rt, user_id, fact_ids)
    reopen = reopen if rederived else []
    n_facts = store.delete("facts", filters.user_in(user_id, "fact_id", fact_ids))
    n_hist = sum(
        store.delete("fact_history", filters.user_in(user_id, column, fact_ids))
        for column in ("fact_id", "new_fact_id")
    )
    if splices:
        store.update_columns("facts", splices)
    for fact_id in reopen:
        rt.facts.reopen(user_id, fact_id, "forget")
    return {"facts": n_facts, "fact_history": n_hist}


def _chains_after(
    rt: Runtime, user_id: str, fact_ids: list[str]
) -> tuple[list[dict[str, Any]], list[str]]:
    """How the supersession chains close over the erased facts: a kept
    successor now supersedes the nearest kept predecessor (or none); a kept
    predecessor of an erased fact that was believed is believed again (the
    change it recorded is forgotten; a consolidation that finds the change in
    what is left supersedes it anew)."""
    by_id = {f.fact_id: f for f in rt.facts.list(user_id, include_inactive=True)}
    gone = set(fact_ids)
    splices: list[dict[str, Any]] = []
    reopen: list[str] = []

    def kept_before(fact_id: str | None) -> str | None:
        while fact_id in gone:
            fact_id = by_id[fact_id].supersedes if fact_id in by_id else None
        return fact_id

    for f in by_id.values():
        if f.fact_id not in gone and f.supersedes in gone:  # its predecessor goes
            splices.append({"fact_id": f.fact_id, "supersedes": kept_before(f.supersedes)})
    for fid in fact_ids:
        x = by_id.get(fid)
        if x is None or x.status != "active":
            continue  # an active fact has no successor of its own
        before = kept_before(x.supersedes)
        if before in by_id and by_id[before].status == "superseded":
            reopen.append(before)
    return splices, reopen


def _erase_reflections(
    rt: Runtime, user_id: str, *, episodes: Sequence[str] = (), facts: Sequence[str] = ()
) -> int:
    cited = set(episodes) | set(facts)
    gone = [
        r.reflection_id
        for r in rt.reflections.list(user_id, include_archived=True)
        if cited & (set(r.evidence_episode_ids) | set(r.evidence_fact_ids))
    ]
    if gone:
        rt.store.delete("reflections", filters.user_in(user_id, "reflection_id", gone))
    return len(gone)
