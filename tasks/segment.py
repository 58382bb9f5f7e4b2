"""One segmentation poll of one stream: read the turns above the watermark in
bounded batches, embed the ones not yet embedded, run the detector from its
checkpoint, write closed episodes, then the checkpoint.

Crash safety: episodes are written before the checkpoint, with ids derived
from (user, stream, first seq); a rerun from the old checkpoint closes the
same episodes and the insert-if-absent write adds nothing twice."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np

from episodic.models import Episode, Turn, now_utc
from episodic.prediction_error import make_judge
from episodic.segment import Detector
from episodic.segment.types import ClosedSegment, SegTurn
from storage.state import Checkpoint
from tasks.crashpoints import crashpoint
from tasks.runtime import Runtime


@dataclass
class StreamPoll:
    user_id: str
    stream_id: str
    turns_read: int = 0
    embedded: int = 0
    episodes: list[str] = field(default_factory=list)
    by_reason: Counter[str] = field(default_factory=Counter)
    open_turns: int = 0
    watermark: int = -1
    oldest_unprocessed: datetime | None = None


def embed_turns(rt: Runtime, user_id: str, turns: list[Turn]) -> tuple[np.ndarray, int]:
    """Vectors for the turns, embedding only those never embedded by this model."""
    model = rt.embedder.name
    ids = [t.turn_id for t in turns]
    have = rt.vectors.get(user_id, ids, model) if ids else {}
    missing = [t for t in turns if t.turn_id not in have]
    if missing:
        crashpoint("embed")
        vecs = rt.embedder.embed([t.text for t in missing])
        rt.vectors.put(user_id, [t.turn_id for t in missing], model, vecs)
        for t, v in zip(missing, vecs, strict=True):
            have[t.turn_id] = v
    out = np.zeros((len(turns), rt.embedder.dim), dtype=np.float32)
    for i, t in enumerate(turns):
        out[i] = have[t.turn_id]
    return out, len(missing)


def to_seg_turn(t: Turn, vec: np.ndarray | None) -> SegTurn:
    return SegTurn(
        seq=t.seq,
        turn_id=t.turn_id,
        role=t.role,
        kind=t.kind,
        text=t.text,
        event_ts=t.event_ts,
        vector=vec,
    )


def episode_text(turns: list[Turn], max_chars: int = 20_000) -> str:
    parts = [f"{t.role}: {t.text}" for t in turns]
    text = "\n".join(parts)
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def _to_episodes(
    rt: Runtime,
    cp: Checkpoint,
    segs: list[ClosedSegment],
    known: dict[str, Turn],
    now: datetime,
) -> tuple[list[Episode], str]:
    need = [tid for s in segs for tid in s.turn_ids if tid not in known]
    if need:
        for t in rt.raw.by_ids(cp.user_id, need):
            known[t.turn_id] = t
    last_id = cp.last_episode_id
    out: list[Episode] = []
    for s in segs:
        eid = Episode.make_id(cp.user_id, cp.stream_id, s.seqs[0])
        turns = [known[tid] for tid in s.turn_ids if tid in known]
        out.append(
            Episode(
                episode_id=eid,
                user_id=cp.user_id,
                stream_id=cp.stream_id,
                first_seq=s.seqs[0],
                last_seq=s.seqs[-1],
                turn_ids=list(s.turn_ids),
                n_turns=len(s.turn_ids),
                started_at=s.started_at,
                ended_at=s.ended_at,
                closed_at=now,
                boundary_reason=s.reason,
                boundary_score=float(s.score),
                signal_scores=dict(s.signal_scores),
                centroid=list(s.centroid),
                peak_surprisal=float(s.peak_surprisal),
                summary=s.summary or "",
                text=episode_text(turns),
                parent_episode_id=last_id or None if s.is_sub_episode else None,
                continues_episode_id=last_id or None if s.continues_previous else None,
            )
        )
        last_id = eid
    return out, last_id


def poll_stream(
    rt: Runtime,
    user_id: str,
    stream_id: str,
    *,
    head_seq: int,
    now: datetime | None = None,
    judge: object | None = None,
    flush: bool = False,
) -> StreamPoll:
    now = now or now_utc()
    batch = max(1, rt.settings.batch_turns)
    if judge is None and rt.provider.name != "offline":
        # the LLM check, asked only in the detector's ambiguous band
        judge = make_judge(rt.provider)
    result = StreamPoll(user_id=user_id, stream_id=stream_id)
    cp = rt.checkpoints.load(user_id, stream_id)
    det = (
        Detector.from_state(cp.detector, judge=judge)  # type: ignore[arg-type]
        if cp.detector
        else Detector(judge=judge)  # type: ignore[arg-type]
    )
    last_turn: Turn | None = None
    while cp.watermark < head_seq:
        upto = min(head_seq, cp.watermark + batch)
        turns = rt.raw.read(user_id, stream_id, cp.watermark, upto)
        if turns and result.oldest_unprocessed is None:
            result.oldest_unprocessed = turns[0].event_ts
        vecs, n_new = embed_turns(rt, user_id, turns)
        result.embedded += n_new
        known = {t.turn_id: t for t in turns}
        segs: list[ClosedSegment] = []
        for t, v in zip(turns, vecs, strict=True):
            segs.extend(det.update(to_seg_turn(t, v)))
        result.turns_read += len(turns)
        if turns:
            last_turn = turns[-1]
        cp = _persist(rt, cp, det, segs, known, upto, now, result)
    # idle close: measured from when the last turn reached us, so a replay of
    # old history is not cut at every poll
    if det.open_turn_ids:
        if last_turn is None:
            found = rt.raw.by_ids(user_id, [det.open_turn_ids[-1]])
            last_turn = found[0] if found else None
        segs = []
        if flush:
            segs = det.flush()
        elif last_turn is not None:
            idle_for = now - max(last_turn.ingest_ts, last_turn.event_ts)
            if idle_for > timedelta(minutes=rt.settings.idle_minutes):
                segs = det.close_idle(last_turn.event_ts + idle_for)
        if segs:
            cp = _persist(rt, cp, det, segs, {}, cp.watermark, now, result)
    result.open_turns = len(det.open_turn_ids)
    result.watermark = cp.watermark
    return result


def _persist(
    rt: Runtime,
    cp: Checkpoint,
    det: Detector,
    segs: list[ClosedSegment],
    known: dict[str, Turn],
    watermark: int,
    now: datetime,
    result: StreamPoll,
) -> Checkpoint:
    episodes, last_id = _to_episodes(rt, cp, segs, known, now)
    if episodes:
        crashpoint("before_episodes")
        rt.episodes.write(episodes)
        crashpoint("after_episodes")
    for e in episodes:
        result.episodes.append(e.episode_id)
        result.by_reason[e.boundary_reason] += 1
    new = Checkpoint(
        user_id=cp.user_id,
        stream_id=cp.stream_id,
        watermark=watermark,
        open_turn_ids=list(det.open_turn_ids),
        detector=det.to_state(),
        version=cp.version,
        last_closed_seq=episodes[-1].last_seq if episodes else cp.last_closed_seq,
        last_episode_id=last_id,
        last_run=cp.last_run,
        last_run_state=cp.last_run_state,
    )
    saved = rt.checkpoints.save(new)
    crashpoint("after_checkpoint")
    return saved
