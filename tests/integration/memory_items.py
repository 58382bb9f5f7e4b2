"""Episodes and reflections written straight to a real store, with the times,
salience and recall statistics a retrieval, decay or reflection test needs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from episodic.models import Episode, Reflection, TurnIn, stable_id
from episodic.service.runtime import Runtime

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def episode(
    rt: Runtime,
    user: str,
    text: str,
    *,
    seq: int,
    last_recalled_at: datetime | None = None,
    recall_count: int = 0,
    salience: int = 5,
    closed_at: datetime = T0,
    status: str = "closed",
    stream: str = "s1",
) -> Episode:
    """One two-turn episode whose centroid is the embedding of its text."""
    vec = rt.embedder.embed([text])[0]
    started = closed_at - timedelta(minutes=5)
    return Episode(
        episode_id=Episode.make_id(user, stream, seq),
        user_id=user,
        stream_id=stream,
        first_seq=seq,
        last_seq=seq + 1,
        turn_ids=[stable_id("turn", user, stream, seq), stable_id("turn", user, stream, seq + 1)],
        n_turns=2,
        started_at=started,
        ended_at=started + timedelta(minutes=1),
        closed_at=closed_at,
        boundary_reason="semantic_shift",
        boundary_score=0.6,
        centroid=[float(x) for x in vec],
        text=text,
        salience=salience,
        salience_source="offline",
        recall_count=recall_count,
        last_recalled_at=last_recalled_at,
        status=status,  # type: ignore[arg-type]
    )


def told(rt: Runtime, user: str, text: str, *, stream: str = "s1", **kw: Any) -> Episode:
    """`episode(...)` over two turns appended to the raw log at the stream's
    next two seqs (the user's `text`, then a short reply), so that the
    shipped search finds its turns and notes the episode's recall."""
    head = max((h.head_seq for h in rt.raw.streams(user) if h.stream_id == stream), default=-1)
    ep = episode(rt, user, text, seq=head + 1, stream=stream, **kw)
    turns = [
        TurnIn(
            user_id=user,
            stream_id=stream,
            role=role,  # type: ignore[arg-type]
            kind="other",
            text=said,
            event_ts=ep.started_at + timedelta(seconds=30 * i),
            source="test",
            position=f"{stream}:{ep.first_seq + i}",
        )
        for i, (role, said) in enumerate((("user", text), ("assistant", "noted.")))
    ]
    rt.raw.append(turns)
    return ep.model_copy(update={"turn_ids": [t.turn_id for t in turns]})


def put(rt: Runtime, *episodes: Episode) -> list[Episode]:
    rt.episodes.write(list(episodes))
    rt.store.ensure_indexes()
    return list(episodes)


def reflection(rt: Runtime, user: str, text: str, *, importance: float = 6.0) -> Reflection:
    vec = rt.embedder.embed([text])[0]
    return Reflection(
        reflection_id=stable_id("reflection", user, text),
        user_id=user,
        text=text,
        vector=[float(x) for x in vec],
        importance=importance,
        created_at=T0,
    )
