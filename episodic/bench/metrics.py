"""Segmentation and retrieval metrics, computed as the literature computes them.

Pk and WindowDiff follow segeval (Fournier 2013): segmentations are given as
masses (segment lengths), the window is k = max(2, round(mean reference mass /
2)), and a window spans k + 1 units, of which there are n - k. Both are per
dialogue; average them over dialogues yourself (segment_eval does).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


def masses_to_labels(masses: Sequence[int]) -> list[int]:
    """(3, 2) -> [0, 0, 0, 1, 1]."""
    out: list[int] = []
    for i, m in enumerate(masses):
        if m < 1:
            raise ValueError(f"segment mass must be >= 1, got {m}")
        out.extend([i] * m)
    return out


def boundaries_to_masses(n: int, starts: Iterable[int]) -> tuple[int, ...]:
    """Utterance indices that open a segment (0 and out-of-range ignored) -> masses."""
    cuts = [0, *sorted({s for s in starts if 0 < s < n}), n]
    return tuple(b - a for a, b in zip(cuts, cuts[1:], strict=False))


def window_size(reference: Sequence[int]) -> int:
    return max(2, round(sum(reference) / len(reference) / 2))


def _check(hyp: Sequence[int], ref: Sequence[int]) -> tuple[list[int], list[int]]:
    h, r = masses_to_labels(hyp), masses_to_labels(ref)
    if len(h) != len(r):
        raise ValueError(f"hypothesis covers {len(h)} units, reference {len(r)}")
    return h, r


def pk(hyp: Sequence[int], ref: Sequence[int], k: int | None = None) -> float:
    """Probability that a window's two ends are put in the same/different segments wrongly."""
    h, r = _check(hyp, ref)
    k = window_size(ref) if k is None else k
    n = len(r)
    if n <= k:  # one window over the whole dialogue
        return float((h[0] == h[-1]) != (r[0] == r[-1]))
    errors = sum((h[i] == h[i + k]) != (r[i] == r[i + k]) for i in range(n - k))
    return errors / (n - k)


def windowdiff(hyp: Sequence[int], ref: Sequence[int], k: int | None = None) -> float:
    """Share of windows in which the two segmentations count different boundaries."""
    h, r = _check(hyp, ref)
    k = window_size(ref) if k is None else k
    n = len(r)
    if n <= k:
        return float((h[-1] - h[0]) != (r[-1] - r[0]))
    errors = sum((h[i + k] - h[i]) != (r[i + k] - r[i]) for i in range(n - k))
    return errors / (n - k)


@dataclass(frozen=True)
class BoundaryCounts:
    tp: int
    fp: int
    fn: int

    def __add__(self, other: BoundaryCounts) -> BoundaryCounts:
        return BoundaryCounts(self.tp + other.tp, self.fp + other.fp, self.fn + other.fn)

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def boundary_counts(hyp: Sequence[int], ref: Sequence[int]) -> BoundaryCounts:
    """Exact-position boundary matches; sum over dialogues for a micro-averaged F1."""
    _check(hyp, ref)

    def starts(masses: Sequence[int]) -> set[int]:
        out, pos = set(), 0
        for m in masses[:-1]:
            pos += m
            out.add(pos)
        return out

    hs, rs = starts(hyp), starts(ref)
    return BoundaryCounts(len(hs & rs), len(hs - rs), len(rs - hs))


def evidence_recall(evidence: Iterable[str], retrieved: Iterable[Iterable[str]]) -> float:
    """|evidence turns inside the retrieved units| / |evidence| (LoCoMo recall@k).

    `retrieved` holds the turn ids of each retrieved unit (an episode, a window).
    Report the number of turns retrieved beside it, so bigger units do not win
    by size alone. Raises ValueError on empty evidence (leave such questions out).
    """
    ev = set(evidence)
    if not ev:
        raise ValueError("no evidence to recall")
    got: set[str] = set()
    for unit in retrieved:
        got.update(unit)
    return len(ev & got) / len(ev)
