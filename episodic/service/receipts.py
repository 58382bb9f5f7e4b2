"""What became of an acknowledged write: its turns traced to the episodes
that hold them and the facts those episodes changed."""

from __future__ import annotations

from episodic.service.runtime import Runtime
from episodic.service.views import IngestStatus
from episodic.vocab import FactsState
from storage.receipts import Receipt
from storage.search import episodes_holding


def ingest_status(rt: Runtime, receipt: Receipt) -> IngestStatus:
    user_id = receipt.user_id
    turns = rt.raw.by_ids(user_id, receipt.turn_ids)
    seqs: dict[str, list[int]] = {}
    for t in turns:
        seqs.setdefault(t.stream_id, []).append(t.seq)
    held = episodes_holding(rt.store, user_id, seqs)
    episode_ids = sorted({str(r["episode_id"]) for r in held.values()})
    episodes = {e.episode_id: e for e in rt.episodes.by_ids(user_id, episode_ids)}
    merged = all(e.facts_state == FactsState.DONE for e in episodes.values())
    done = bool(turns) and len(held) == len(turns) and merged
    state = "consolidated" if done or not receipt.turn_ids else "queued"
    if state == "queued":
        failed = {
            s.stream_id
            for s in rt.checkpoints.all(user_id)
            if s.last_run_state == "Failed" and s.stream_id in seqs
        }
        state = "failed" if failed else state
    facts = sorted(
        f.fact_id
        for f in rt.facts.list(user_id, include_inactive=True)
        if set(f.source_episode_ids) & set(episode_ids)
    )
    return IngestStatus(
        ingest_id=receipt.ingest_id,
        at=receipt.at,
        state=state,
        turns=len(receipt.turn_ids),
        episodes=episode_ids,
        facts=facts,
    )
