"""LoCoMo evidence recall: episodes against fixed windows, whole sessions and single turns.

Each conversation of the file is ingested as one stream (one user per
conversation) into a temporary store and segmented with flush, so every turn
ends in an episode: the segmentation step of the consolidate flow, called as a
plain function (salience, facts and reflection play no part in a one-shot
similarity ranking, so they are not run). Every QA item with evidence asks:
which units come back for the question, and how many of its evidence turns do
they hold?

Fairness rules, the same for every method:
- one representation per unit: by default the normalised mean of its turn
  vectors (for episodes this is exactly the stored centroid); `text` embeds
  the unit's text instead, `max` scores a unit by its best turn;
- ranking by cosine similarity to the question alone (alpha = beta = 0,
  gamma = 1): recency and importance mean nothing in a one-shot evaluation;
- recall at k units, with the turns those k units hold reported beside it,
  and recall at an equal budget of turns: units in rank order until the
  budget is filled, the last one cut to its first turns in conversation order.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from episodic.bench.locomo_hybrid import (
    BASELINES,
    SHIPPED,
    UNIT_KINDS,
    Tallies,
    best_baselines,
    score_conversation,
    summarise,
    tokens,
    unit_groups,
)
from episodic.bench.metrics import evidence_recall
from episodic.config import Settings
from episodic.embed import make_embedder
from episodic.retrieval import turn_line
from episodic.segment import Detector
from episodic.segment.detector import DetectorConfig
from episodic.service.ingest import ingest_file
from episodic.service.memory import Memory
from episodic.service.runtime import Runtime
from episodic.service.segment import poll_stream, to_seg_turn
from storage.search import TextIndex

# window_matched: fixed windows as long as the mean episode of the conversation,
# the control that tells segmentation apart from granularity
METHODS = ("episodes", "window10", "window_matched", "session", "turn")
REPRESENTATIONS = ("mean", "text", "max")
WINDOW = 10
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")


# --- pure pieces --------------------------------------------------------------------


def normalise_evidence(items: Iterable[object]) -> tuple[list[str], int]:
    """Canonical `D<session>:<turn>` ids and the number of unusable pieces.

    Repairs the known defects: "D8:6; D9:17" is two ids, "D:11:26" is D11:26,
    "D30:05" is D30:5. A piece with no session and turn number ("D") is
    counted as malformed and left out. Order kept, duplicates dropped.
    """
    out: list[str] = []
    bad = 0
    for item in items:
        for piece in re.split(r"[;,\s]+", str(item)):
            if not piece:
                continue
            m = _EVIDENCE.fullmatch(piece)
            if m is None:
                bad += 1
                continue
            canon = f"D{int(m.group(1))}:{int(m.group(2))}"
            if canon not in out:
                out.append(canon)
    return out, bad


def _canonical(dia_id: str) -> str:
    found, _ = normalise_evidence([dia_id])
    return found[0] if len(found) == 1 else dia_id


@dataclass(frozen=True)
class Unit:
    """A retrievable span: its turns' dia ids in conversation order, its turn rows."""

    dia_ids: tuple[str, ...]
    rows: tuple[int, ...]  # indices into the conversation's turn matrix


def windows(sessions: Sequence[Sequence[int]], size: int = WINDOW) -> list[list[int]]:
    """Fixed windows of `size` consecutive turns, restarted at every session."""
    if size < 1:
        raise ValueError(f"window size must be >= 1, got {size}")
    return [list(s[i : i + size]) for s in sessions for i in range(0, len(s), size)]


def take_budget(ranked: Sequence[Unit], budget: int) -> list[str]:
    """Dia ids of units in rank order until `budget` turns; the last unit is cut
    to its first turns in conversation order."""
    if budget < 1:
        raise ValueError(f"budget must be >= 1, got {budget}")
    got: list[str] = []
    for unit in ranked:
        room = budget - len(got)
        if room <= 0:
            break
        got.extend(unit.dia_ids[:room])
    return got


def unit_scores(
    q: np.ndarray, turns: np.ndarray, units: Sequence[Unit], rep: str, texts: np.ndarray | None
) -> np.ndarray:
    """(n_questions, n_units) similarities under one representation rule."""
    if rep == "mean":
        mat = np.stack([turns[list(u.rows)].sum(axis=0) for u in units])
        norms = np.linalg.norm(mat, axis=1, keepdims=True)
        mat = np.divide(mat, norms, out=np.zeros_like(mat), where=norms > 0)
        return np.asarray(q @ mat.T)
    if rep == "text":
        if texts is None:
            raise ValueError("the text representation needs unit text embeddings")
        return np.asarray(q @ texts.T)
    if rep == "max":
        per_turn = q @ turns.T
        return np.stack([per_turn[:, list(u.rows)].max(axis=1) for u in units], axis=1)
    raise ValueError(f"unknown representation {rep!r}; choose from {', '.join(REPRESENTATIONS)}")


# --- one conversation ---------------------------------------------------------------


@dataclass
class Conversation:
    sample_id: str
    dia_ids: list[str]  # canonical, in stream order
    texts: list[str]
    turns: np.ndarray  # (n_turns, dim) unit rows
    units: dict[str, list[Unit]]
    questions: list[tuple[str, list[str], int]]  # (question, evidence, category)
    by_reason: Counter[str]
    turn_ids: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # "speaker: text [image: caption]"
    end: datetime | None = None
    sessions: list[list[int]] = field(default_factory=list)
    episodes: list[list[int]] = field(default_factory=list)


def _resegment(turns: Sequence[Any], mat: np.ndarray, config: DetectorConfig) -> list[list[int]]:
    """The detector run afresh over the stored turns and vectors, in one pass."""
    det = Detector(config)
    segs = []
    for t, v in zip(turns, mat, strict=True):
        segs.extend(det.update(to_seg_turn(t, v)))
    segs.extend(det.flush())
    row_of = {t.turn_id: i for i, t in enumerate(turns)}
    return [[row_of[tid] for tid in s.turn_ids] for s in segs]


def _load_conversation(
    memory: Memory,
    sample: dict[str, Any],
    work: Path,
    index: int,
    config: DetectorConfig | None = None,
) -> Conversation:
    sid = str(sample.get("sample_id") or f"sample-{index}")
    src = work / f"{index}.json"
    src.write_text(json.dumps([sample]), encoding="utf-8")
    rt = memory.rt
    # the file straight into the raw log (Memory.ingest would also build the
    # store's indexes after each conversation)
    report = ingest_file(rt.raw, src, "locomo", user_id=sid, stream_id=sid)
    head = next(h.head_seq for h in rt.raw.streams(sid) if h.stream_id == sid)
    poll_stream(rt, sid, sid, head_seq=head, flush=True)
    turns = rt.raw.read(sid, sid, -1, head)
    if len(turns) != report.accepted + report.duplicates:
        raise RuntimeError(f"{sid}: read {len(turns)} turns, ingested {report.accepted}")
    vecs = rt.vectors.get(sid, [t.turn_id for t in turns], rt.embedder.name)
    mat = np.stack([vecs[t.turn_id] for t in turns]).astype(np.float32)
    row_of = {t.turn_id: i for i, t in enumerate(turns)}
    dia = [_canonical(str(t.meta.get("dia_id", ""))) for t in turns]
    sessions: dict[int, list[int]] = {}
    for i, t in enumerate(turns):
        sessions.setdefault(int(t.meta.get("session", 0)), []).append(i)
    if config is None:
        eps = rt.episodes.list(sid, sid)
        spans = [[row_of[tid] for tid in e.turn_ids] for e in eps]
        reasons = Counter(e.boundary_reason for e in eps)
    else:
        spans = _resegment(turns, mat, config)
        reasons = Counter({"resegmented": len(spans)})
    matched = max(1, round(len(turns) / max(1, len(spans))))
    groups = {
        "episodes": spans,
        "window10": windows(list(sessions.values())),
        "window_matched": windows(list(sessions.values()), matched),
        "session": list(sessions.values()),
        "turn": [[i] for i in range(len(turns))],
    }
    units = {
        name: [Unit(tuple(dia[i] for i in g), tuple(g)) for g in gs if g]
        for name, gs in groups.items()
    }
    return Conversation(
        sample_id=sid,
        dia_ids=dia,
        texts=[f"{t.meta.get('speaker', t.role)}: {t.text}" for t in turns],
        turns=mat,
        units=units,
        questions=[],
        by_reason=reasons,
        turn_ids=[t.turn_id for t in turns],
        lines=[
            turn_line(
                str(t.meta.get("speaker") or t.role),
                t.text,
                t.meta.get("blip_caption") if isinstance(t.meta.get("blip_caption"), str) else None,
            )
            for t in turns
        ],
        end=max(t.event_ts for t in turns),
        sessions=list(sessions.values()),
        episodes=spans,
    )


# --- the evaluation -----------------------------------------------------------------


@dataclass
class _Tally:
    at_k: dict[int, list[float]]
    turns_at_k: dict[int, list[int]]
    at_budget: list[float]
    by_category: dict[int, list[float]]
    units: int = 0
    unit_turns: int = 0


def run_locomo_eval(
    path: str | Path,
    *,
    ks: Sequence[int] = (5, 10, 25),
    budget: int = 50,
    embedder: str = "minilm",
    representation: str = "mean",
    max_conversations: int | None = None,
    workdir: str | Path | None = None,
    detector: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Evidence recall per method at each k and at an equal budget of turns.

    The store lives in a temporary directory (or `workdir`, reused when run
    again: ingest and segmentation are idempotent), never in the user's
    EPISODIC_HOME, and is removed afterwards unless `workdir` is given.
    `detector` (DetectorConfig fields) re-segments the stored turns with other
    settings, to study segmentation without touching the production defaults.
    """
    config = DetectorConfig.from_dict(detector) if detector else None
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] < 1:
        raise ValueError(f"k values must be >= 1, got {ks}")
    if budget < 1:
        raise ValueError(f"budget must be >= 1, got {budget}")
    if representation not in REPRESENTATIONS:
        raise ValueError(f"unknown representation {representation!r}")
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    samples = data if isinstance(data, list) else [data]
    samples = samples[:max_conversations] if max_conversations else samples
    started = time.monotonic()
    home = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="episodic-locomo-"))
    try:
        emb = make_embedder(embedder)  # an unknown name raises ValueError here
        settings = Settings.model_validate(
            {"home": home, "db_uri": str(home / "lancedb"), "embedder": embedder, "llm": "offline"}
        )
        memory = Memory(settings, embedder=emb)  # the service `episodic search` calls
        rt = memory.rt
        tallies = {m: _Tally({k: [] for k in ks}, {k: [] for k in ks}, [], {}) for m in METHODS}
        malformed = unknown = skipped = 0
        reasons: Counter[str] = Counter()
        convs: list[Conversation] = []
        for i, sample in enumerate(samples):
            conv = _load_conversation(memory, sample, home, i, config)
            convs.append(conv)
            reasons.update(conv.by_reason)
            known = set(conv.dia_ids)
            for qa in sample.get("qa", []):
                evidence, bad = normalise_evidence(qa.get("evidence") or [])
                malformed += bad
                kept = [e for e in evidence if e in known]
                unknown += len(evidence) - len(kept)
                if not kept:
                    skipped += 1
                    continue
                conv.questions.append(
                    (str(qa.get("question", "")), kept, int(qa.get("category", 0)))
                )
            _score(rt, conv, tallies, ks, budget, representation)
        all_tokens = [tokens(x) for c in convs for x in c.lines]
        token_budget = round(budget * float(np.mean(all_tokens))) if all_tokens else budget
        hybrid = Tallies()
        indexes = {kind: TextIndex(rt.store, f"eval_{kind}") for kind in UNIT_KINDS}
        for conv in convs:
            if not conv.questions:
                continue
            qv = rt.embedder.embed([q for q, _, _ in conv.questions]).astype(np.float32)
            score_conversation(
                memory,
                conv.sample_id,
                conv.lines,
                conv.dia_ids,
                conv.turns,
                unit_groups(len(conv.lines), conv.sessions, conv.episodes),
                {t: i for i, t in enumerate(conv.turn_ids)},
                conv.questions,
                qv,
                budget,
                token_budget,
                indexes,
                conv.end,
                hybrid,
            )
        methods = {m: _summary(t, ks) for m, t in tallies.items()}
        for m in tallies:
            cos_name = {
                "episodes": "episode_cos",
                "turn": "turn_cos",
                "session": "session_cos",
                "window10": "window10_cos",
            }.get(m)
            if cos_name and cos_name in hybrid.tokens:
                methods[m]["recall_at_token_budget"] = round(
                    float(np.mean(hybrid.tokens[cos_name])), 4
                )
        methods.update(summarise(hybrid))
        n_questions = len(tallies["turn"].at_budget)
        return {
            "dataset": str(path),
            "embedder": rt.embedder.name,
            "representation": representation,
            "ranking": (
                "episodes, window10, window_matched, session, turn: cosine only; "
                "<unit>_cos / <unit>_hybrid / turn_pm<k>_*: see episodic/bench/locomo_hybrid.py; "
                "shipped: Memory.search (episodic.service.memory)"
            ),
            "n_conversations": len(samples),
            "n_questions": n_questions,
            "questions_without_evidence": skipped,
            "evidence_malformed_dropped": malformed,
            "evidence_unknown_dropped": unknown,
            "ks": ks,
            "budget": budget,
            "episode_boundaries": dict(reasons.most_common()),
            "detector_overrides": detector or {},
            "token_budget": token_budget,
            "shipped": SHIPPED,
            "baselines": list(BASELINES),
            "methods": methods,
            "best_baseline": best_baselines(methods, SHIPPED),
            "seconds": round(time.monotonic() - started, 1),
        }
    finally:
        if workdir is None:
            shutil.rmtree(home, ignore_errors=True)


def _score(
    rt: Runtime,
    conv: Conversation,
    tallies: dict[str, _Tally],
    ks: Sequence[int],
    budget: int,
    rep: str,
) -> None:
    if not conv.questions:
        return
    q = rt.embedder.embed([text for text, _, _ in conv.questions]).astype(np.float32)
    for method in METHODS:
        units = conv.units[method]
        texts = None
        if rep == "text":
            texts = rt.embedder.embed(["\n".join(conv.texts[i] for i in u.rows) for u in units])
        scores = unit_scores(q, conv.turns, units, rep, texts)
        tally = tallies[method]
        tally.units += len(units)
        tally.unit_turns += sum(len(u.rows) for u in units)
        for qi, (_, evidence, category) in enumerate(conv.questions):
            # stable sort: ties keep conversation order
            order = np.argsort(-scores[qi], kind="stable")
            ranked = [units[j] for j in order]
            for k in ks:
                top = ranked[:k]
                tally.at_k[k].append(evidence_recall(evidence, (u.dia_ids for u in top)))
                tally.turns_at_k[k].append(sum(len(u.dia_ids) for u in top))
            r = evidence_recall(evidence, [take_budget(ranked, budget)])
            tally.at_budget.append(r)
            tally.by_category.setdefault(category, []).append(r)


def _mean(xs: Sequence[float]) -> float:
    return round(float(np.mean(xs)), 4) if xs else 0.0


def _summary(t: _Tally, ks: Sequence[int]) -> dict[str, Any]:
    return {
        "recall_at_k": {str(k): _mean(t.at_k[k]) for k in ks},
        "turns_at_k": {
            str(k): round(float(np.mean(t.turns_at_k[k])), 1) if t.turns_at_k[k] else 0.0
            for k in ks
        },
        "recall_at_budget": _mean(t.at_budget),
        "recall_at_budget_by_category": {
            str(c): _mean(v) for c, v in sorted(t.by_category.items())
        },
        "mean_turns_per_unit": round(t.unit_turns / t.units, 2) if t.units else 0.0,
        "n_units": t.units,
    }
