"""Measure the online detector on public topic-segmentation data, beside baselines.

Each dialogue is embedded in one batch (embedding is the cost and is timed on
its own), then fed to a fresh detector turn by turn with no look-ahead (the
detector answers one turn later, by its decision delay; the end-of-dialogue
flush decides a held turn, and that cut counts). The data sets carry no
timestamps: turns are stamped one minute apart, so the time signals stay
silent and the size cap is the only hard signal that can fire.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from episodic.bench.datasets import Dialogue, load_dataset
from episodic.bench.metrics import (
    BoundaryCounts,
    boundaries_to_masses,
    boundary_counts,
    pk,
    windowdiff,
)
from episodic.embed import Embedder
from episodic.segment.detector import Detector, DetectorConfig
from episodic.segment.types import SegTurn

T0 = datetime(2024, 1, 1, tzinfo=UTC)
Segmenter = Callable[[Dialogue, np.ndarray], set[int]]


def to_turns(d: Dialogue, vectors: np.ndarray) -> list[SegTurn]:
    return [
        SegTurn(
            seq=i,
            turn_id=f"{d.dial_id}:{i}",
            role=d.roles[i],
            kind="user-question" if d.roles[i] == "user" else "assistant-answer",
            text=d.utterances[i],
            event_ts=T0 + timedelta(minutes=i),
            vector=vectors[i],
        )
        for i in range(len(d.utterances))
    ]


BAND_HITS = [0]  # judge-band decisions of every detect() call in this process


def detect(d: Dialogue, vectors: np.ndarray, config: DetectorConfig) -> tuple[set[int], int]:
    """Boundaries (utterance indices opening a segment) and detector nanoseconds.
    A dialogue between peers (`Dialogue.peer`) is read as the detector's
    `peer_dialogue`, as a stream's own setup would say."""
    if d.peer and not config.peer_dialogue:
        config = replace(config, peer_dialogue=True)
    det = Detector(config)
    starts: set[int] = set()
    turns = to_turns(d, vectors)
    t = time.perf_counter_ns()
    for turn in turns:
        for seg in det.update(turn):
            starts.add(seg.seqs[-1] + 1)
    # a turn still held for its reply is decided at the flush: keep that cut too
    for seg in det.flush():
        starts.add(seg.seqs[-1] + 1)  # the last one ends the dialogue and is ignored
    BAND_HITS[0] += det.band_hits
    return starts, time.perf_counter_ns() - t


def fixed_window(n: int) -> Segmenter:
    return lambda d, v: set(range(n, len(d.utterances), n))


def no_boundary(d: Dialogue, v: np.ndarray) -> set[int]:
    return set()


def texttiling(d: Dialogue, v: np.ndarray, block: int = 3) -> set[int]:
    """Offline TextTiling on embeddings (Hearst 1997): block similarity across each gap,
    depth scores, boundaries deeper than mean - std / 2."""
    n = len(d.utterances)
    if n < 3:
        return set()
    sims = np.empty(n - 1)
    for g in range(1, n):
        left = v[max(0, g - block) : g].mean(0)
        right = v[g : g + block].mean(0)
        den = float(np.linalg.norm(left) * np.linalg.norm(right))
        sims[g - 1] = float(left @ right) / den if den > 0 else 0.0
    depth = np.zeros_like(sims)
    for i, s in enumerate(sims):
        lpeak = sims[: i + 1].max() if i else s
        rpeak = sims[i:].max()
        depth[i] = (lpeak - s) + (rpeak - s)
    cutoff = depth.mean() - depth.std() / 2
    out = set()
    for i in range(len(depth)):
        is_peak = (i == 0 or depth[i] >= depth[i - 1]) and (
            i == len(depth) - 1 or depth[i] >= depth[i + 1]
        )
        if is_peak and depth[i] > cutoff:
            out.add(i + 1)
    return out


def score(dialogues: Sequence[Dialogue], hyps: Sequence[set[int]]) -> dict[str, float]:
    pks, wds = [], []
    counts = BoundaryCounts(0, 0, 0)
    for d, starts in zip(dialogues, hyps, strict=True):
        hyp = boundaries_to_masses(len(d.utterances), starts)
        pks.append(pk(hyp, d.masses))
        wds.append(windowdiff(hyp, d.masses))
        counts = counts + boundary_counts(hyp, d.masses)
    return {
        "pk": float(np.mean(pks)),
        "windowdiff": float(np.mean(wds)),
        "f1": counts.f1,
        "precision": counts.precision,
        "recall": counts.recall,
        "n_boundaries": float(counts.tp + counts.fp),
    }


def alone(config: DetectorConfig, signal: str) -> DetectorConfig:
    """The detector with one soft signal, firing at that signal's own threshold."""
    w = {
        "semantic_shift": (1.0, 0.0, 0.0),
        "change_point": (0.0, 1.0, 0.0),
        "surprisal": (0.0, 0.0, 1.0),
    }[signal]
    return replace(
        config,
        w_semantic=w[0],
        w_change_point=w[1],
        w_surprisal=w[2],
        cut_threshold=0.5,
        doubt_threshold=0.5,
        combiner=False,
    )


# the semantic rule as issue 27 found it (threshold and decay hand-set on DialSeg711
# and TIAGE); re-chosen since on SuperDialseg + TIAGE (docs/segmentation.md)
RULE_AS_FILED: dict[str, Any] = {
    "combiner": False,
    "semantic_threshold": 1.1,
    "semantic_decay": 0.5,
}

ABLATIONS: dict[str, dict[str, Any]] = {
    # the parameter file's models (combiner v2, docs/segmentation.md); the shipped
    # one is the detector's default and is the top-level figure of the output
    "stream_alone": {"combiner_model": "stream_alone"},  # the adaptive score, no rule
    "fitted_adaptive": {"combiner_model": "fitted_adaptive"},
    "fitted_sem4": {"combiner_model": "fitted_sem4"},
    "combiner_v1_design": {"combiner_model": "full"},  # v1's features, refitted
    "with_question_features": {"combiner_model": "with_questions"},
    # ADR-0051's rule on the same learned projection: P(new run) >= .65 or surprisal z >= 1.5
    "seed_dual_criteria": {"combiner_model": "seed_dual"},
    # the detector before the combiner: semantic shift alone, its threshold and decay
    # chosen on SuperDialseg + TIAGE; and as it was before that choice
    "semantic_rule": {"combiner": False},
    "semantic_rule_as_filed": RULE_AS_FILED,
}


def ablations(
    dialogues: Sequence[Dialogue], vectors: Sequence[np.ndarray], config: DetectorConfig
) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for name, change in ABLATIONS.items():
        cfg = replace(config, combiner_threshold=0.0, **change)
        out[name] = score(
            dialogues, [detect(d, v, cfg)[0] for d, v in zip(dialogues, vectors, strict=True)]
        )
    return out


def evaluate_vectors(
    dialogues: Sequence[Dialogue],
    vectors: Sequence[np.ndarray],
    config: DetectorConfig,
    baselines: bool = True,
) -> dict[str, Any]:
    hyps, ns = [], 0
    mark = BAND_HITS[0]
    for d, v in zip(dialogues, vectors, strict=True):
        starts, dt = detect(d, v, config)
        hyps.append(starts)
        ns += dt
    n_turns = sum(len(d.utterances) for d in dialogues)
    out: dict[str, Any] = score(dialogues, hyps) | {
        "n_dialogues": len(dialogues),
        "n_turns": n_turns,
        "us_per_turn": ns / 1000.0 / max(1, n_turns),
        # how often a configured judge would be asked (combiner band), per 1,000 turns
        "judge_band_per_1000_turns": 1000.0 * (BAND_HITS[0] - mark) / max(1, n_turns),
    }
    if baselines:
        base: dict[str, dict[str, float]] = {}
        for sig in ("semantic_shift", "change_point", "surprisal"):
            cfg = alone(config, sig)
            base[f"{sig}_alone"] = score(
                dialogues, [detect(d, v, cfg)[0] for d, v in zip(dialogues, vectors, strict=True)]
            )
        others: dict[str, Segmenter] = {
            "fixed_5": fixed_window(5),
            "fixed_10": fixed_window(10),
            "fixed_20": fixed_window(20),
            "no_boundary": no_boundary,
            "texttiling_offline": texttiling,
        }
        for name, fn in others.items():
            base[name] = score(
                dialogues, [fn(d, v) for d, v in zip(dialogues, vectors, strict=True)]
            )
        out["baselines"] = base
        out["ablations"] = ablations(dialogues, vectors, config)
    return out


def embed_dialogues(
    dialogues: Sequence[Dialogue], embedder: Embedder
) -> tuple[list[np.ndarray], float]:
    """One batch per dialogue; returns the vectors and embedding milliseconds per turn."""
    t = time.perf_counter()
    vectors = [embedder.embed(list(d.utterances)) for d in dialogues]
    n = max(1, sum(len(d.utterances) for d in dialogues))
    return vectors, (time.perf_counter() - t) * 1000.0 / n


def load_vectors_timed(
    dataset: str,
    dialogues: Sequence[Dialogue],
    embedder: Embedder,
    cache_dir: str | Path | None = None,
) -> tuple[list[np.ndarray], float | None]:
    """Each dialogue's vectors, from the .npz cache when there (embedding ms: None)."""
    cache = None
    if cache_dir is not None:
        n_turns = sum(len(d.utterances) for d in dialogues)
        cache = Path(cache_dir) / f"{dataset}-{embedder.name}-{len(dialogues)}-{n_turns}.npz"
    if cache is not None and cache.exists():
        with np.load(cache) as z:
            flat = z["vectors"]
        vectors, pos = [], 0
        for d in dialogues:
            vectors.append(flat[pos : pos + len(d.utterances)])
            pos += len(d.utterances)
        return vectors, None
    vectors, embed_ms = embed_dialogues(dialogues, embedder)
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        np.savez(cache, vectors=np.concatenate(vectors))
    return vectors, embed_ms


def load_vectors(
    dataset: str,
    dialogues: Sequence[Dialogue],
    embedder: Embedder,
    cache_dir: str | Path | None = None,
) -> list[np.ndarray]:
    return load_vectors_timed(dataset, dialogues, embedder, cache_dir)[0]


def run_segment_eval(
    dataset: str,
    path: str | Path,
    embedder: Embedder,
    *,
    config: DetectorConfig | None = None,
    limit: int | None = None,
    cache_dir: str | Path | None = None,
) -> dict[str, Any]:
    """Pk, WindowDiff and boundary F1 of the detector and every baseline on one data set.

    `cache_dir`: keep the embeddings in an .npz there, keyed by data set, embedder and
    size, so that recalibrating does not re-embed.
    """
    config = config or DetectorConfig()
    dialogues = load_dataset(dataset, path)
    if limit is not None:
        dialogues = dialogues[:limit]
    vectors, embed_ms = load_vectors_timed(dataset, dialogues, embedder, cache_dir)
    out = evaluate_vectors(dialogues, vectors, config)
    return {
        "dataset": dataset,
        "embedder": embedder.name,
        "embed_ms_per_turn": embed_ms,
        **out,
        "config": asdict(config),
    }
