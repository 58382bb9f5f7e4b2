"""The calibrated boundary combiner: a logistic regression over the online features.

Its parameters ship in the package as `combiner_v1.npz` (written by
`episodic train segment`): the learned space (training mean and PCA rows,
float32), the BOCPD prior and whitening scales, and one or more named models
(feature names, standardisation, coefficients, intercept, threshold). The
runtime path is numpy only. `CombinerModel.score(row)` returns the probability
of a boundary and every feature's contribution to its log-odds, which the
detector records on each cut.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from episodic.segment.features import BOCPD, LEXICAL, NAMES, BoundaryFeatures

FORMAT = "episodic.segment.combiner"
DEFAULT_MODEL = "full"


ADAPT_MODES = ("fixed", "z")


class StreamNorm:
    """The stream's own recent history of boundary scores, past-only: an exponentially
    weighted mean and variance of the log-odds of every candidate scored so far,
    starting from the training distribution (`m0`, `v0`) held with the weight of
    `n0` candidates; each new candidate weighs max(`floor`, 1 / (n + 1)). A
    candidate is judged by its z-score against the history before it, so the
    density of cuts follows the stream rather than the corpus fitted on."""

    __slots__ = ("m", "v", "n", "floor")

    def __init__(self, m0: float, v0: float, n0: float, floor: float) -> None:
        self.m, self.v, self.n, self.floor = m0, v0, n0, floor

    def z(self, s: float) -> float:
        return (s - self.m) / math.sqrt(self.v + 1e-9)

    def push(self, s: float) -> None:
        a = max(self.floor, 1.0 / (self.n + 1.0))
        d = s - self.m
        self.m += a * d
        self.v = (1.0 - a) * (self.v + a * d * d)
        self.n += 1.0

    def state(self) -> list[float]:
        return [self.m, self.v, self.n]

    def load(self, st: list[float]) -> None:
        m, v, n = (float(x) for x in st)
        if not (math.isfinite(m) and math.isfinite(v) and v >= 0 and n >= 0):
            raise ValueError("stream score history out of range")
        self.m, self.v, self.n = m, v, n


@dataclass(frozen=True)
class LinearModel:
    """One fitted logistic regression on named features, with its decision rule:
    `adapt["mode"]` "fixed" cuts at probability >= `threshold`; "z" cuts when the
    log-odds' z-score against the stream's history (`StreamNorm`, prior and rate
    in `adapt`) is >= `threshold`."""

    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float
    threshold: float
    adapt: dict[str, Any] | None = None
    # (coef, mean, scale) per feature as floats, for `contributions`
    _terms: tuple[tuple[float, float, float], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        n = len(self.features)
        unknown = set(self.features) - set(NAMES) - {f for f in self.features if "*" in f}
        if unknown:
            raise ValueError(f"unknown combiner features: {sorted(unknown)}")
        if not (self.mean.shape == self.scale.shape == self.coef.shape == (n,)):
            raise ValueError("combiner arrays do not match its feature list")
        if not (self.scale > 0).all():
            raise ValueError("combiner scales must be > 0")
        if self.mode not in ADAPT_MODES:
            raise ValueError(f"unknown decision mode {self.mode!r}")
        if self.mode == "fixed" and not 0.0 < self.threshold < 1.0:
            raise ValueError("a fixed combiner threshold must be in (0, 1)")
        if not math.isfinite(self.threshold):
            raise ValueError("combiner threshold must be finite")
        terms = zip(self.coef.tolist(), self.mean.tolist(), self.scale.tolist(), strict=True)
        object.__setattr__(self, "_terms", tuple(terms))

    @property
    def mode(self) -> str:
        return str((self.adapt or {}).get("mode", "fixed"))

    def norm(self) -> StreamNorm | None:
        """A fresh history for a new stream (None for a fixed threshold)."""
        if self.mode == "fixed":
            return None
        a = self.adapt or {}
        return StreamNorm(float(a["m0"]), float(a["v0"]), float(a["n0"]), float(a["floor"]))

    def contributions(self, row: dict[str, float]) -> dict[str, float]:
        """What each feature adds to the log-odds. Plain floats, not numpy: per
        turn, on a handful of features, numpy's call overhead was most of the cost."""
        terms = zip(self.features, self._terms, strict=True)
        return {f: c * (_value(row, f) - m) / sd for f, (c, m, sd) in terms}

    def logit(self, row: dict[str, float]) -> float:
        return sum(self.contributions(row).values()) + self.intercept

    def score(self, row: dict[str, float]) -> tuple[float, dict[str, float]]:
        contrib = self.contributions(row)
        s = sum(contrib.values()) + self.intercept
        p = 1.0 / (1.0 + math.exp(-s)) if s > -700 else 0.0
        return p, contrib

    def to_json(self) -> dict[str, Any]:
        return {
            "features": list(self.features),
            "mean": self.mean.tolist(),
            "scale": self.scale.tolist(),
            "coef": self.coef.tolist(),
            "intercept": self.intercept,
            "threshold": self.threshold,
            "adapt": self.adapt or {"mode": "fixed"},
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> LinearModel:
        return cls(
            tuple(str(f) for f in d["features"]),
            np.asarray(d["mean"], dtype=np.float64),
            np.asarray(d["scale"], dtype=np.float64),
            np.asarray(d["coef"], dtype=np.float64),
            float(d["intercept"]),
            float(d["threshold"]),
            dict(d.get("adapt") or {"mode": "fixed"}),
        )


def _value(row: dict[str, float], f: str) -> float:
    if "*" in f:
        a, b = f.split("*", 1)
        return row[a] * row[b]
    return row[f]


@dataclass(frozen=True)
class CombinerParams:
    """Everything the combiner ships: the learned space and the named models."""

    version: str
    mean: np.ndarray  # (embedding dim,)
    comps: np.ndarray  # (dims, embedding dim)
    boc_scale: np.ndarray  # (BOCPD dims,)
    hyper: dict[str, float]  # n0, hazard_lambda, max_run, kappa0, alpha0, beta0
    models: dict[str, LinearModel]
    meta: dict[str, Any]

    def project(self, x: np.ndarray) -> np.ndarray:
        out: np.ndarray = self.comps.dot(x - self.mean)  # the method: least call overhead
        return out

    def features(self, reads: tuple[str, ...] | None = None) -> BoundaryFeatures:
        """The online features; `reads`: the names a model reads (None: all), so
        that groups no model reads (BOCPD, lexical) are not computed."""
        h = self.hyper
        need = set(NAMES) if reads is None else {p for f in reads for p in f.split("*")}
        return BoundaryFeatures(
            self.comps.shape[0],
            self.boc_scale,
            n0=float(h["n0"]),
            hazard_lambda=float(h["hazard_lambda"]),
            max_run=int(h["max_run"]),
            kappa0=float(h["kappa0"]),
            alpha0=float(h["alpha0"]),
            beta0=float(h["beta0"]),
            bocpd=bool(need & set(BOCPD)),
            lexical=bool(need & set(LEXICAL)),
            pair_ema5_only=need == {"dp_ema5"},
        )

    def save(self, path: str | Path) -> None:
        meta = {
            "format": FORMAT,
            "version": self.version,
            "hyper": self.hyper,
            "models": {k: m.to_json() for k, m in self.models.items()},
            "meta": self.meta,
        }
        with open(path, "wb") as fh:
            np.savez_compressed(
                fh,
                mean=self.mean.astype(np.float32),
                comps=self.comps.astype(np.float32),
                boc_scale=self.boc_scale.astype(np.float64),
                meta=np.frombuffer(json.dumps(meta, sort_keys=True).encode(), dtype=np.uint8),
            )

    @classmethod
    def load(cls, path: str | Path | None = None) -> CombinerParams:
        """The packaged parameters, or a file written by `save`."""
        if path is None:
            ref = resources.files("episodic.segment").joinpath("combiner_v1.npz")
            with resources.as_file(ref) as p:
                return cls.load(p)
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(bytes(z["meta"]).decode())
            if meta.get("format") != FORMAT:
                raise ValueError(f"{path}: not a combiner parameter file")
            mean = z["mean"].astype(np.float64)
            comps = z["comps"].astype(np.float64)
            boc = z["boc_scale"].astype(np.float64)
        if comps.ndim != 2 or comps.shape[1] != mean.shape[0]:
            raise ValueError(f"{path}: projection shape {comps.shape} vs mean {mean.shape}")
        models = {k: LinearModel.from_json(v) for k, v in meta["models"].items()}
        return cls(str(meta["version"]), mean, comps, boc, meta["hyper"], models, meta["meta"])


_CACHE: dict[str, CombinerParams] = {}


def packaged(path: str | None = None) -> CombinerParams:
    """Load once per process (the arrays are read-only in use)."""
    key = path or ""
    if key not in _CACHE:
        _CACHE[key] = CombinerParams.load(path)
    return _CACHE[key]
