"""One segmentation poll over a user's streams: read the turns above each
watermark, embed the ones not yet embedded, run each stream's detector from
its checkpoint, write closed episodes, then the checkpoints.

Streams are advanced in waves: a wave takes the next slice (up to
`batch_turns`) of as many streams as fit in `batch_turns` turns, and costs a
fixed number of queries and commits whatever its number of streams: one raw
read per 64 distinct seq ranges, one vector read and write, one episode
write, one checkpoint write. A poll over 1,000 streams of 3 turns is two
waves, not 1,000 polls.

Crash safety: episodes are written before the checkpoints, with ids derived
from (user, stream, first seq); a rerun from the old checkpoints closes the
same episodes and the insert-if-absent write adds nothing twice. A wave's
checkpoints are one commit; the crash points fire once per wave."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np

from episodic.crashpoints import crashpoint
from episodic.llm.cache import per_user
from episodic.models import Episode, Turn, now_utc
from episodic.segment import Detector
from episodic.segment.clock import CLAMPED_KEY, segment_time
from episodic.segment.judge import make_judge
from episodic.segment.types import ClosedSegment, Judge, SegTurn
from episodic.service.runtime import Runtime
from episodic.vocab import Stage
from storage.allocator import release
from storage.raw_ranges import read_ranges
from storage.state import Checkpoint


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


def embed_turns(
    rt: Runtime, user_id: str, turns: list[Turn], chunk: int | None = None
) -> tuple[np.ndarray, set[str]]:
    """Vectors for the turns, embedding only those never embedded by this
    model; and the ids of the turns embedded now. `chunk`: texts handed to
    the embedder at a time, so another caller's few texts wait behind at
    most that many (its pool is first come, first served)."""
    model = rt.embedder.name
    ids = [t.turn_id for t in turns]
    with rt.stages.measure(Stage.READ):
        have = rt.vectors.get(user_id, ids, model) if ids else {}
    missing = [t for t in turns if t.turn_id not in have]
    if missing:
        crashpoint("embed")
        texts = [t.text for t in missing]
        step = chunk or len(texts)
        with rt.stages.measure(Stage.EMBED):
            vecs = np.concatenate(
                [rt.embedder.embed(texts[i : i + step]) for i in range(0, len(texts), step)]
            )
        with rt.stages.measure(Stage.WRITE):
            rt.vectors.put(user_id, [t.turn_id for t in missing], model, vecs)
        for t, v in zip(missing, vecs, strict=True):
            have[t.turn_id] = v
    out = np.zeros((len(turns), rt.embedder.dim), dtype=np.float32)
    for i, t in enumerate(turns):
        out[i] = have[t.turn_id]
    return out, {t.turn_id for t in missing}


def to_seg_turn(t: Turn, vec: np.ndarray | None) -> SegTurn:
    """The turn as the detector reads it; a future event time is clamped
    (episodic/segment/clock.py)."""
    ts, _ = segment_time(t.event_ts, t.ingest_ts)
    return SegTurn(
        seq=t.seq,
        turn_id=t.turn_id,
        role=t.role,
        kind=t.kind,
        text=t.text,
        event_ts=ts,
        vector=vec,
    )


def episode_text(turns: list[Turn], max_chars: int = 20_000) -> str:
    parts = [f"{t.role}: {t.text}" for t in turns]
    text = "\n".join(parts)
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def _to_episodes(
    cp: Checkpoint,
    segs: list[ClosedSegment],
    known: dict[str, Turn],
    now: datetime,
) -> tuple[list[Episode], str]:
    """Episodes for one stream's closed segments; `known` holds their turns.

    Start and end are the min and max of the turns' (clamped) event times; a
    turn clamped for being dated in the future is counted in the episode's
    `signal_scores` under `clamped_future_turns`."""
    last_id = cp.last_episode_id
    out: list[Episode] = []
    for s in segs:
        eid = Episode.make_id(cp.user_id, cp.stream_id, s.seqs[0])
        turns = [known[tid] for tid in s.turn_ids if tid in known]
        times = [segment_time(t.event_ts, t.ingest_ts) for t in turns]
        clamped = sum(1 for _, c in times if c)
        scores = dict(s.signal_scores)
        if clamped:
            scores[CLAMPED_KEY] = float(clamped)
        out.append(
            Episode(
                episode_id=eid,
                user_id=cp.user_id,
                stream_id=cp.stream_id,
                first_seq=s.seqs[0],
                last_seq=s.seqs[-1],
                turn_ids=list(s.turn_ids),
                n_turns=len(s.turn_ids),
                started_at=min((ts for ts, _ in times), default=s.started_at),
                ended_at=max((ts for ts, _ in times), default=s.ended_at),
                closed_at=now,
                boundary_reason=s.reason,
                boundary_score=float(s.score),
                signal_scores=scores,
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


IDLE_WAVE = 1_000  # streams whose open episode is checked for idleness, per wave


@dataclass
class _Cursor:
    """One stream in a poll: its checkpoint, its detector, what the poll did.
    Loaded when its first wave comes, dropped once it reaches its head, so a
    poll holds the detectors of one wave, not of every stream."""

    cp: Checkpoint
    det: Detector
    head: int
    poll: StreamPoll
    last_turn: Turn | None = None
    segs: list[ClosedSegment] = field(default_factory=list)
    upto: int = -1

    @property
    def behind(self) -> int:
        return self.head - self.cp.watermark


def poll_stream(
    rt: Runtime,
    user_id: str,
    stream_id: str,
    *,
    head_seq: int,
    now: datetime | None = None,
    judge: Judge | None = None,
    flush: bool = False,
) -> StreamPoll:
    """`poll_streams` for one stream."""
    return poll_streams(rt, user_id, [(stream_id, head_seq)], now=now, judge=judge, flush=flush)[0]


@per_user
def poll_streams(
    rt: Runtime,
    user_id: str,
    heads: list[tuple[str, int]],
    *,
    now: datetime | None = None,
    judge: Judge | None = None,
    flush: bool = False,
) -> list[StreamPoll]:
    """Bring every (stream, head seq) of one user up to its head, in waves,
    closing what has been idle (everything, with `flush`) as each stream
    reaches its head; then the same close for streams with nothing new."""
    now = now or now_utc()
    batch = max(1, rt.settings.batch_turns)
    if judge is None and rt.provider.name != "offline":
        # the LLM check, asked only in the detector's ambiguous band
        judge = make_judge(rt.provider)
    marks = rt.checkpoints.progress(user_id)
    polls = {sid: StreamPoll(user_id=user_id, stream_id=sid) for sid, _ in heads}
    behind: list[tuple[str, int, int]] = []  # (stream, head, watermark): new turns
    waiting: list[str] = []  # nothing new, an open episode to check
    for sid, head in heads:
        watermark, has_open = marks.get((user_id, sid), (-1, False))
        polls[sid].watermark = watermark
        if watermark < head:
            behind.append((sid, head, watermark))
        elif has_open:
            waiting.append(sid)
    active: list[_Cursor | tuple[str, int, int]] = list(behind)
    while active:
        wave: list[_Cursor | tuple[str, int, int]] = []
        room = batch
        for item in active:
            left = item.behind if isinstance(item, _Cursor) else item[1] - item[2]
            take = min(batch, left)
            if wave and take > room:
                break
            room -= take
            wave.append(item)
        cursors = _load(rt, user_id, wave, polls, judge)
        for c in cursors:
            c.upto = c.cp.watermark + min(batch, max(0, c.behind))
        _advance(rt, user_id, cursors, now, flush)
        release()  # the wave's Arrow batches and turns, freed, back to the OS
        done = {id(w) for w in wave}
        # a stream longer than a slice goes on in the next wave, loaded
        carry: list[_Cursor | tuple[str, int, int]] = [c for c in cursors if c.behind > 0]
        active = carry + [a for a in active if id(a) not in done]
    for i in range(0, len(waiting), IDLE_WAVE):
        chunk = [(sid, -1, -1) for sid in waiting[i : i + IDLE_WAVE]]
        cursors = _load(rt, user_id, list(chunk), polls, judge)
        for c in cursors:
            c.upto = c.cp.watermark
        _close_idle(rt, user_id, cursors, now, flush)
        _persist(rt, user_id, [c for c in cursors if c.segs], {}, now)
        _finish(cursors)
    return [polls[sid] for sid, _ in heads]


def idle_due(
    rt: Runtime, user_id: str, stream_ids: list[str], now: datetime | None = None
) -> list[str]:
    """Of streams with nothing new but an open episode, those whose episode
    the idle close would close now (the same test as `_close_idle`): a poll
    with none of these and no new turns has nothing to do."""
    if not stream_ids:
        return []
    now = now or now_utc()
    cps = rt.checkpoints.load_many(user_id, stream_ids)
    last_ids = {sid: cp.open_turn_ids[-1] for sid, cp in cps.items() if cp.open_turn_ids}
    found = {t.turn_id: t for t in rt.raw.by_ids(user_id, list(last_ids.values()))}
    idle = timedelta(minutes=rt.settings.segment.idle_minutes)
    due: list[str] = []
    for sid, tid in last_ids.items():
        last = found.get(tid)
        if last is None:
            due.append(sid)  # cannot tell: let the poll look
            continue
        ts, _ = segment_time(last.event_ts, last.ingest_ts)
        if now - max(last.ingest_ts, ts) > idle:
            due.append(sid)
    return due


def _load(
    rt: Runtime,
    user_id: str,
    items: list[_Cursor | tuple[str, int, int]],
    polls: dict[str, StreamPoll],
    judge: Judge | None,
) -> list[_Cursor]:
    """Cursors for the wave: those already loaded as they are, the others
    from their checkpoints, in one read."""
    fresh = [it for it in items if not isinstance(it, _Cursor)]
    cps = rt.checkpoints.load_many(user_id, [sid for sid, _, _ in fresh])
    config = rt.settings.segment
    out: list[_Cursor] = []
    for it in items:
        if isinstance(it, _Cursor):
            out.append(it)
            continue
        sid, head, _ = it
        cp = cps[sid]
        # the detector's thresholds come from the settings (EPISODIC_SEGMENT__*,
        # EPISODIC_IDLE_MINUTES); a checkpoint keeps its own, but the idle close
        # follows the settings, so the poll's gate and the detector agree
        if cp.detector:
            det = Detector.from_state(cp.detector, judge, idle_minutes=config.idle_minutes)
        else:
            det = Detector(config, judge)
        out.append(_Cursor(cp, det, head if head >= 0 else cp.watermark, polls[sid]))
    return out


def _finish(cursors: list[_Cursor]) -> None:
    for c in cursors:
        c.poll.open_turns = len(c.det.open_turn_ids)
        c.poll.watermark = c.cp.watermark


def _advance(rt: Runtime, user_id: str, wave: list[_Cursor], now: datetime, flush: bool) -> None:
    """Feed each stream of the wave its next slice; close what is idle on the
    streams that reached their head; persist the wave."""
    spans = {c.poll.stream_id: (c.cp.watermark, c.upto) for c in wave}
    with rt.stages.measure(Stage.READ):
        read = read_ranges(rt.raw, user_id, spans)
    turns = [t for c in wave for t in read[c.poll.stream_id]]
    vecs, fresh = embed_turns(rt, user_id, turns)
    row = 0
    known: dict[str, Turn] = {}
    with rt.stages.measure(Stage.SEGMENT):
        for c in wave:
            mine = read[c.poll.stream_id]
            if mine and c.poll.oldest_unprocessed is None:
                c.poll.oldest_unprocessed = mine[0].event_ts
            for t in mine:
                known[t.turn_id] = t
                c.poll.embedded += t.turn_id in fresh
                c.segs.extend(c.det.update(to_seg_turn(t, vecs[row])))
                row += 1
            c.poll.turns_read += len(mine)
            if mine:
                c.last_turn = mine[-1]
    reached = [c for c in wave if c.upto >= c.head]
    _close_idle(rt, user_id, reached, now, flush)
    _persist(rt, user_id, wave, known, now)
    _finish(reached)


def _close_idle(
    rt: Runtime, user_id: str, cursors: list[_Cursor], now: datetime, flush: bool
) -> None:
    """Idle close, measured from when the last turn reached us, so a replay
    of old history is not cut at every poll; `flush` closes everything. The
    closed segments join each cursor's `segs`, for the next persist."""
    waiting = [c for c in cursors if c.det.open_turn_ids]
    lookup = [c.det.open_turn_ids[-1] for c in waiting if c.last_turn is None]
    with rt.stages.measure(Stage.READ):
        found = {t.turn_id: t for t in rt.raw.by_ids(user_id, lookup)} if lookup else {}
    idle = timedelta(minutes=rt.settings.segment.idle_minutes)  # = EPISODIC_IDLE_MINUTES
    with rt.stages.measure(Stage.SEGMENT):
        for c in waiting:
            last = c.last_turn or found.get(c.det.open_turn_ids[-1])
            if flush:
                c.segs.extend(c.det.flush())
            elif last is not None:
                ts, _ = segment_time(last.event_ts, last.ingest_ts)
                idle_for = now - max(last.ingest_ts, ts)
                if idle_for > idle:
                    c.segs.extend(c.det.close_idle(ts + idle_for))


def _persist(
    rt: Runtime, user_id: str, wave: list[_Cursor], known: dict[str, Turn], now: datetime
) -> None:
    """Closed episodes of the wave in one write, then its checkpoints in one."""
    if not wave:
        return
    need = [tid for c in wave for s in c.segs for tid in s.turn_ids if tid not in known]
    if need:
        with rt.stages.measure(Stage.READ):
            for t in rt.raw.by_ids(user_id, need):
                known[t.turn_id] = t
    episodes: list[Episode] = []
    updated: list[Checkpoint] = []
    for c in wave:
        eps, last_id = _to_episodes(c.cp, c.segs, known, now)
        episodes.extend(eps)
        for e in eps:
            c.poll.episodes.append(e.episode_id)
            c.poll.by_reason[e.boundary_reason] += 1
        cp = c.cp
        updated.append(
            Checkpoint(
                user_id=cp.user_id,
                stream_id=cp.stream_id,
                watermark=c.upto,
                open_turn_ids=list(c.det.open_turn_ids),
                detector=c.det.to_state(),
                version=cp.version,
                last_closed_seq=eps[-1].last_seq if eps else cp.last_closed_seq,
                last_episode_id=last_id,
                last_run=cp.last_run,
                last_run_state=cp.last_run_state,
            )
        )
        c.segs = []
    if episodes:
        crashpoint("before_episodes")
        with rt.stages.measure(Stage.WRITE):
            rt.episodes.write(episodes)
        crashpoint("after_episodes")
    with rt.stages.measure(Stage.WRITE):
        saved = rt.checkpoints.save_many(updated)
    for c, cp in zip(wave, saved, strict=True):
        c.cp = cp
    crashpoint("after_checkpoint")
