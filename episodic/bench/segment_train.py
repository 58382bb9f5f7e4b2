"""Fit the boundary combiner from ../shared/data, reproducibly: `episodic train segment`.

Every design choice (features, decision rule, its rate) is selected by
leave-one-corpus-out (LOCO) over the three corpora here: SuperDialseg
validation, TIAGE train+dev, DialSeg711. For each corpus in turn, the space
(PCA of the MiniLM embeddings), the regressions and the thresholds are fitted
on the *other* fitting corpora only, then scored on the one left out:
SuperDialseg <- TIAGE; TIAGE <- SuperDialseg; DialSeg711 <- both (DialSeg711 is
never fitted on: it is read only to be scored). The shipped parameters are then
fitted on SuperDialseg validation + TIAGE train+dev with the design the LOCO
table chose (`SHIPPED`).

Fitting: logistic regressions on standardised online features (numpy Newton
steps, L2), each corpus weighted equally; the threshold of each model is chosen
by the mean Pk over its fitting corpora under the detector's own decision rule
(user turns only, an episode of at least `min_turns`, the size cap, and, for an
adaptive model, the stream's own history of scores: `StreamNorm`). Same data,
same file: nothing is random. LoCoMo is never read here.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from episodic.bench.datasets import USER_ANCHORS, Dialogue, load_dataset
from episodic.bench.metrics import boundaries_to_masses, pk, windowdiff
from episodic.embed import Embedder
from episodic.segment.combiner import CombinerParams, LinearModel, StreamNorm
from episodic.segment.features import BOCPD, LEXICAL, NAMES, SEMANTIC

VERSION = "2"
DIMS, BOC_DIMS = 64, 16
HYPER = {
    "n0": 10.0,
    "hazard_lambda": 5.0,
    "max_run": 30,
    "kappa0": 1.0,
    "alpha0": 2.0,
    "beta0": 0.65,
}
CORPORA: dict[str, tuple[tuple[str, str], ...]] = {
    "superdialseg": (("superdialseg", "superdialseg/superseg_validation.jsonl"),),
    "tiage": (("tiage", "tiage/anno_train.json"), ("tiage", "tiage/anno_dev.json")),
    "dialseg711": (("dialseg711", "dialseg711/dialseg_711.json"),),
}
FITTED = ("superdialseg", "tiage")  # DialSeg711 is never fitted on


@dataclass(frozen=True)
class Design:
    """One candidate: its features, how they are weighed, and its decision rule."""

    features: tuple[str, ...]
    mode: str = "fixed"  # "fixed": probability threshold; "z": against the stream's history
    n0: float = 10.0  # prior weight of the training distribution, in candidates
    floor: float = 0.05  # the history's slowest rate (about the last 1 / floor candidates)
    c: float = 1.0  # inverse L2 strength
    fit: bool = True  # False: the score is the (single) feature itself, nothing regressed
    threshold: float | None = None  # a design threshold (chosen by LOCO); None: fitted
    rule: bool = False  # an ensemble: the previous semantic rule also cuts on its own
    # with the rule: the adaptive member cuts only where the rule's distance is at
    # least its threshold minus `gate` (where the rule is unsure); None: anywhere
    gate: float | None = None


SEM4 = ("dp_ema5", "s_next", "d_next_prev", "coh_prev")
MODELS: dict[str, Design] = {
    # shipped: the rule's own statistic (centred distance of the turn and its reply to
    # the decayed mean of the turns before, in the learned space), z-scored against
    # the stream's past candidates; cut at z >= 1.25, or when the semantic rule fires
    "stream": Design(("dp_ema5",), "z", 10.0, 0.05, fit=False, threshold=1.25, rule=True),
    # not taken: the same, the adaptive member gated to where the rule is unsure
    # (its distance within .05 of the rule's threshold); on a stream where the rule
    # rarely fires (LoCoMo) it silences the member that adapts
    "stream_gated": Design(
        ("dp_ema5",), "z", 10.0, 0.05, fit=False, threshold=1.25, rule=True, gate=0.05
    ),
    # the previous shipped design: z >= 1
    "stream_z1": Design(("dp_ema5",), "z", 10.0, 0.05, fit=False, threshold=1.0, rule=True),
    "stream_alone": Design(("dp_ema5",), "z", 10.0, 0.05, fit=False, threshold=0.5),
    "fitted_adaptive": Design(SEM4, "z", 3.0),
    "fitted_sem4": Design(SEM4),
    # the combiner v1 design, refitted: old checkpoints that name it keep it
    "full": Design((*SEMANTIC, *BOCPD, *LEXICAL, "user")),
    "with_questions": Design(NAMES),
}
SHIPPED = "stream"
C = 1.0
MIN_TURNS, MAX_TURNS = 2, 20
PROB_GRID = tuple(round(0.15 + 0.025 * i, 3) for i in range(27))
Z_GRID = tuple(round(-1.0 + 0.1 * i, 2) for i in range(31))


def fit_space(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    mean = vectors.mean(0)
    _, s, vt = np.linalg.svd(vectors - mean, full_matrices=False)
    # a fixed sign per row, so refits agree bit for bit with the same data
    signs = np.sign(vt[:DIMS, np.argmax(np.abs(vt[:DIMS]), axis=1)].diagonal())
    comps = vt[:DIMS] * signs[:, None]
    scale = s[:BOC_DIMS] / np.sqrt(len(vectors) - 1)
    return mean.astype(np.float32), comps.astype(np.float32), scale


def feature_rows(
    params: CombinerParams, d: Dialogue, vectors: np.ndarray
) -> list[dict[str, float]]:
    fe = params.features()
    rows = []
    for i, (v, role, text) in enumerate(zip(vectors, d.roles, d.utterances, strict=True)):
        x = np.asarray(v, dtype=np.float64)
        n = float(np.sqrt(x @ x))
        r = fe.update(params.project(x / n if n > 0 else x), role, text, i)
        if r is not None:
            rows.append(r)
    last = fe.finish()
    if last is not None:
        rows.append(last)
    return rows


def fit_logistic(
    X: np.ndarray, y: np.ndarray, w: np.ndarray, c: float = C
) -> tuple[np.ndarray, float]:
    """argmin sum_i w_i logloss_i + |beta|^2 / (2c), by Newton steps (deterministic)."""
    n, k = X.shape
    A = np.hstack([X, np.ones((n, 1))])
    beta = np.zeros(k + 1)
    reg = np.full(k + 1, 1.0 / c)
    reg[-1] = 0.0
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(A @ beta)))
        g = A.T @ (w * (p - y)) + reg * beta
        H = (A * (w * p * (1 - p))[:, None]).T @ A + np.diag(reg + 1e-9)
        step = np.linalg.solve(H, g)
        beta -= step
        if np.abs(step).max() < 1e-10:
            break
    return beta[:-1], float(beta[-1])


def _sigmoid(s: float) -> float:
    return 1.0 / (1.0 + math.exp(-s)) if s > -700 else 0.0


def decide(
    logits: Sequence[float] | np.ndarray,
    roles: Sequence[str],
    thr: float,
    norm: StreamNorm | None = None,
    anchors: frozenset[str] = USER_ANCHORS,
) -> set[int]:
    """The detector's rule on one dialogue: soft cuts before turns of the `anchors`
    roles (the user's; either speaker's in a peer dialogue) once the episode holds
    MIN_TURNS, the size cap after MAX_TURNS. With `norm` (a fresh history), each
    candidate is judged against the history before it and then joins it, exactly
    as the detector does (same comparisons, same order)."""
    starts, last = set(), 0
    for t in range(1, len(logits)):
        if t - last >= MAX_TURNS:
            starts.add(t)
            last = t
            continue
        if roles[t] not in anchors or t - last < MIN_TURNS:
            continue
        s = float(logits[t])
        if norm is None:
            cut = _sigmoid(s) >= thr
        else:
            cut = _sigmoid(s) >= _sigmoid(norm.m + thr * math.sqrt(norm.v + 1e-9))
            norm.push(s)
        if cut:
            starts.add(t)
            last = t
    return starts


def model_decide(model: LinearModel, logits: np.ndarray, d: Dialogue) -> set[int]:
    return decide(logits, d.roles, model.threshold, model.norm(), d.anchors)


def mean_pk(dials: Sequence[Dialogue], cuts: Sequence[set[int]]) -> float:
    return float(
        np.mean(
            [
                pk(boundaries_to_masses(len(d.utterances), c), d.masses)
                for d, c in zip(dials, cuts, strict=True)
            ]
        )
    )


def score_cuts(dials: Sequence[Dialogue], cuts: Sequence[set[int]]) -> dict[str, float]:
    """Pk, WindowDiff (segeval convention, per dialogue, averaged) and boundary
    density: the mean segment length predicted and in the reference."""
    pks, wds, n_hyp, n_ref, n_turns = [], [], 0, 0, 0
    for d, c in zip(dials, cuts, strict=True):
        hyp = boundaries_to_masses(len(d.utterances), c)
        pks.append(pk(hyp, d.masses))
        wds.append(windowdiff(hyp, d.masses))
        n_hyp += len(hyp)
        n_ref += len(d.masses)
        n_turns += len(d.utterances)
    return {
        "pk": round(float(np.mean(pks)), 4),
        "windowdiff": round(float(np.mean(wds)), 4),
        "mean_segment_predicted": round(n_turns / n_hyp, 2),
        "mean_segment_reference": round(n_turns / n_ref, 2),
        "n_dialogues": len(dials),
    }


class Table:
    def __init__(self, dials: list[Dialogue], rows: list[list[dict[str, float]]]) -> None:
        self.dials = dials
        self.rows = rows

    def matrix(self, feats: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        X, y = [], []
        for d, rows in zip(self.dials, self.rows, strict=True):
            b = d.boundaries
            for t, r in enumerate(rows):
                if t == 0:
                    continue
                X.append([r[f] for f in feats])
                y.append(1.0 if t in b else 0.0)
        return np.array(X), np.array(y)


def logits(model: LinearModel, t: Table) -> list[np.ndarray]:
    out = []
    for rows in t.rows:
        X = np.array([[r[f] for f in model.features] for r in rows])
        s = ((X - model.mean) / model.scale) @ model.coef + model.intercept
        s[0] = -50.0  # no cut before the first turn
        out.append(s)
    return out


def fit_model(tables: Sequence[Table], design: Design) -> LinearModel:
    """Corpus-balanced regression; the decision's prior from the fitted log-odds of
    the candidates (user turns); the threshold by the mean Pk over the tables."""
    feats = design.features
    if design.fit:
        Xs, ys, ws = [], [], []
        mats = [t.matrix(feats) for t in tables]
        total = sum(len(y) for _, y in mats)
        for X, y in mats:
            Xs.append(X)
            ys.append(y)
            ws.append(np.full(len(y), total / (len(tables) * len(y))))
        X, y, w = np.concatenate(Xs), np.concatenate(ys), np.concatenate(ws)
        mean, scale = X.mean(0), X.std(0)
        scale[scale < 1e-9] = 1.0
        coef, b = fit_logistic((X - mean) / scale, y, w, design.c)
    else:  # the score is the feature itself: its log-odds scale is irrelevant to a z
        if len(feats) != 1 or design.mode != "z":
            raise ValueError("an unfitted design scores one feature, against the stream")
        mean, scale, coef, b = np.zeros(1), np.ones(1), np.ones(1), 0.0
    adapt: dict[str, Any] = {"mode": "fixed"}
    base = LinearModel(feats, mean, scale, coef, b, 0.5)
    probs = [logits(base, t) for t in tables]
    grid: Sequence[float] = PROB_GRID
    if design.mode == "z":
        # the prior: each corpus's candidates weigh equally
        per = []
        for t, S in zip(tables, probs, strict=True):
            vals = np.concatenate(
                [
                    s[[i for i in range(1, len(s)) if d.roles[i] in d.anchors]]
                    for d, s in zip(t.dials, S, strict=True)
                ]
            )
            per.append((float(vals.mean()), float(vals.var())))
        m0 = float(np.mean([m for m, _ in per]))
        v0 = float(np.mean([v + (m - m0) ** 2 for m, v in per]))
        adapt = {"mode": "z", "m0": m0, "v0": v0, "n0": design.n0, "floor": design.floor}
        if design.rule:
            adapt["rule"] = True
            if design.gate is not None:
                adapt["gate"] = design.gate
        grid = Z_GRID
    if design.threshold is not None:
        return LinearModel(feats, mean, scale, coef, b, design.threshold, adapt)

    def cost(th: float) -> float:
        m = LinearModel(feats, mean, scale, coef, b, th, adapt) if design.mode == "z" else None
        return float(
            np.mean(
                [
                    mean_pk(
                        t.dials,
                        [
                            decide(s, d.roles, th, m.norm() if m else None, d.anchors)
                            for d, s in zip(t.dials, S, strict=True)
                        ],
                    )
                    for t, S in zip(tables, probs, strict=True)
                ]
            )
        )

    best = min(grid, key=cost)
    return LinearModel(feats, mean, scale, coef, b, float(best), adapt)


def predict_cuts(model: LinearModel, t: Table) -> list[set[int]]:
    return [model_decide(model, s, d) for d, s in zip(t.dials, logits(model, t), strict=True)]


def load_corpus(root: Path, name: str) -> list[Dialogue]:
    out: list[Dialogue] = []
    for dataset, rel in CORPORA[name]:
        out.extend(load_dataset(dataset, root / rel))
    return out


def corpus_vectors(
    root: Path, name: str, embedder: Embedder, cache_dir: str | Path | None
) -> list[np.ndarray]:
    from episodic.bench.segment_eval import load_vectors

    out: list[np.ndarray] = []
    for dataset, rel in CORPORA[name]:
        out.extend(load_vectors(dataset, load_dataset(dataset, root / rel), embedder, cache_dir))
    return out


def make_space(
    vecs: Sequence[np.ndarray],
    models: dict[str, LinearModel] | None = None,
    meta: dict[str, Any] | None = None,
) -> CombinerParams:
    allv = np.concatenate(list(vecs)).astype(np.float64)
    allv /= np.maximum(np.linalg.norm(allv, axis=1, keepdims=True), 1e-12)
    mean, comps, scale = fit_space(allv)
    return CombinerParams(VERSION, mean, comps, scale, HYPER, models or {}, meta or {})


def tables_in(
    space: CombinerParams, dials: Sequence[Dialogue], vecs: Sequence[np.ndarray]
) -> Table:
    p = CombinerParams(
        VERSION, space.mean.astype(np.float64), space.comps.astype(np.float64),
        space.boc_scale, HYPER, {}, {},
    )  # fmt: skip
    return Table(list(dials), [feature_rows(p, d, v) for d, v in zip(dials, vecs, strict=True)])


def rule_cuts(
    dials: Sequence[Dialogue],
    vecs: Sequence[np.ndarray],
    as_shipped: bool = False,
    as_filed: bool = False,
) -> list[set[int]]:
    """The semantic rule alone (`combiner=False`), run for real; `as_filed`:
    with the threshold and decay it had when issue 27 was filed; `as_shipped`:
    as it shipped then (those values, anchored on user turns whatever the dialogue)."""
    from episodic.bench.segment_eval import RULE_AS_FILED, detect
    from episodic.segment.detector import DetectorConfig

    filed = as_filed or as_shipped
    cfg = DetectorConfig(**RULE_AS_FILED) if filed else DetectorConfig(combiner=False)
    if as_shipped:
        dials = [replace(d, peer=False) for d in dials]
    return [detect(d, v, cfg)[0] for d, v in zip(dials, vecs, strict=True)]


def detector_cuts(
    space: CombinerParams, model: LinearModel, dials: Sequence[Dialogue], vecs: Sequence[np.ndarray]
) -> list[set[int]]:
    """The real detector with `model` in `space` (a temporary parameter file)."""
    import tempfile

    from episodic.bench.segment_eval import detect
    from episodic.segment.detector import DetectorConfig

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fold.npz"
        CombinerParams(
            VERSION, space.mean, space.comps, space.boc_scale, HYPER, {"fold": model}, {}
        ).save(path)
        cfg = DetectorConfig(combiner_path=str(path), combiner_model="fold")
        out = []
        for d, v in zip(dials, vecs, strict=True):
            n = len(d.utterances)
            out.append({s for s in detect(d, v, cfg)[0] if s < n})
    return out


def loco(
    dials: dict[str, list[Dialogue]],
    vecs: dict[str, list[np.ndarray]],
    designs: dict[str, Design],
) -> dict[str, Any]:
    """For each corpus: every design fitted on the other fitting corpora and scored
    on it (out-of-sample), beside no boundary and the previous semantic rule."""
    out: dict[str, Any] = {}
    for left in CORPORA:
        train_on = tuple(c for c in FITTED if c != left)
        space = make_space([v for c in train_on for v in vecs[c]])
        tabs = {c: tables_in(space, dials[c], vecs[c]) for c in {left, *train_on}}
        row: dict[str, Any] = {"fitted_on": list(train_on)}
        peer = any(d.peer for d in dials[left])
        for name, design in designs.items():
            m = fit_model([tabs[c] for c in train_on], design)
            if design.rule:  # the rule member follows the detector's own cuts: run it
                cuts = detector_cuts(space, m, dials[left], vecs[left])
            else:
                cuts = predict_cuts(m, tabs[left])
            row[name] = score_cuts(dials[left], cuts) | {"threshold": m.threshold}
            if peer and name == SHIPPED:  # the same model, anchored on user turns only
                user_led = [replace(d, peer=False) for d in dials[left]]
                cuts = detector_cuts(space, m, user_led, vecs[left])
                row[f"{name}_user_anchored"] = score_cuts(dials[left], cuts)
        row["no_boundary"] = score_cuts(dials[left], [set() for _ in dials[left]])
        row["semantic_rule"] = score_cuts(dials[left], rule_cuts(dials[left], vecs[left]))
        filed = rule_cuts(dials[left], vecs[left], as_filed=True)
        row["semantic_rule_as_filed"] = score_cuts(dials[left], filed)
        if any(d.peer for d in dials[left]):  # the rule as it shipped: user turns only
            cuts = rule_cuts(dials[left], vecs[left], as_shipped=True)
            row["semantic_rule_user_anchored"] = score_cuts(dials[left], cuts)
        out[left] = row
    return out


def train(
    data_dir: str | Path,
    embedder: Embedder,
    cache_dir: str | Path | None = None,
    out: str | Path | None = None,
    designs: dict[str, Design] | None = None,
) -> dict[str, Any]:
    t0 = time.perf_counter()
    root = Path(data_dir)
    designs = designs or MODELS
    dials = {c: load_corpus(root, c) for c in CORPORA}
    vecs = {c: corpus_vectors(root, c, embedder, cache_dir) for c in CORPORA}
    table = loco(dials, vecs, designs)
    space = make_space([v for c in FITTED for v in vecs[c]])
    tabs = {c: tables_in(space, dials[c], vecs[c]) for c in CORPORA}
    models = {name: fit_model([tabs[c] for c in FITTED], d) for name, d in designs.items()}
    report: dict[str, Any] = {"version": VERSION, "shipped": SHIPPED, "loco": table, "models": {}}
    for name, m in models.items():
        run = detector_cuts if designs[name].rule else None
        in_domain = {
            c: score_cuts(
                dials[c],
                run(space, m, dials[c], vecs[c]) if run else predict_cuts(m, tabs[c]),
            )
            for c in CORPORA
        }
        loco_tiage = table["tiage"][name]
        report["models"][name] = {
            "threshold": m.threshold,
            "mode": m.mode,
            # kept for the CLI's table: the out-of-corpus figures (fitted without the corpus)
            "superdialseg_cv_pk": table["superdialseg"][name]["pk"],
            "tiage_dev_pk": loco_tiage["pk"],
            "in_domain": in_domain,
            "coef": dict(zip(m.features, np.round(m.coef, 4).tolist(), strict=True)),
        }
    meta = {
        "fitted_on": [rel for c in FITTED for _, rel in CORPORA[c]],
        "embedder": embedder.name,
        "n_turns": int(sum(len(v) for c in FITTED for v in vecs[c])),
        "shipped": SHIPPED,
        "loco_pk": {
            c: {k: v["pk"] for k, v in row.items() if isinstance(v, dict)}
            for c, row in table.items()
        },
    }
    params = CombinerParams(VERSION, space.mean, space.comps, space.boc_scale, HYPER, models, meta)
    if out is not None:
        params.save(out)
        report["written"] = str(out)
    report["seconds"] = time.perf_counter() - t0
    report["note"] = (
        "loco: each corpus scored by models fitted without it (out-of-sample for fitting; "
        "the design was chosen on this table, so it is in-sample for selection); "
        "models.*.in_domain: the shipped fit (SuperDialseg validation + TIAGE train+dev) scored "
        "on its own fitting corpora (in-sample) and on DialSeg711 (never fitted: out-of-sample); "
        "superdialseg_cv_pk and tiage_dev_pk (names kept for the CLI table) hold the LOCO Pk on "
        "SuperDialseg validation and on TIAGE train+dev."
    )
    return report
