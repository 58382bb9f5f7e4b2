"""`episodic plot`: one stream over time, so a person sees at a glance why it
was cut where it was. Four panels share the turn axis: the turns (lane by
role, colour by kind), the soft signals against their thresholds, the hard
signals, and the combined evidence against the cut threshold. The stored
episodes give the cuts, drawn as vertical lines coloured by reason.

The per-turn scores are not stored: they are recomputed by replaying the
stream's turns and stored vectors through a fresh detector with the stream's
own configuration (read from its checkpoint)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display on servers and in CI

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from episodic.errors import EpisodicError  # noqa: E402
from episodic.models import TURN_KINDS, Episode, Turn  # noqa: E402
from episodic.segment import Detector, DetectorConfig  # noqa: E402
from episodic.service.plot_path import latest_plot_path  # noqa: E402
from episodic.service.runtime import Runtime  # noqa: E402
from episodic.service.segment import to_seg_turn  # noqa: E402

ROLES = ("system", "tool", "assistant", "user")
SOFT = (
    ("semantic_shift", "semantic shift"),
    ("change_point", "change point"),
    ("surprisal", "surprisal"),
)
HARD = (
    ("time_gap", "time gap"),
    ("size_cap", "size cap"),
    ("structural", "structural"),
    ("agent_marker", "agent marker"),
)
REASON_COLOURS = {
    "semantic_shift": "#1f77b4",
    "change_point": "#9467bd",
    "surprisal": "#8c564b",
    "time_gap": "#d62728",
    "size_cap": "#7f7f7f",
    "structural": "#2ca02c",
    "agent_marker": "#e377c2",
    "prediction_error": "#17becf",
    "idle": "#bcbd22",
    "flush": "#000000",
}
READ_BATCH = 2_000


class PlotError(EpisodicError):
    """Nothing to draw: unknown user or stream, or a stream without turns."""


@dataclass
class Timeline:
    user_id: str
    stream_id: str
    config: DetectorConfig
    turns: list[Turn]
    scores: list[dict[str, float]]
    episodes: list[Episode]
    cuts: list[tuple[float, str]] = field(default_factory=list)  # (x between turns, reason)
    replayed: list[tuple[int, str]] = field(default_factory=list)  # (last seq, reason), replay


def pick_stream(rt: Runtime, user_id: str, stream_id: str | None) -> tuple[str, int]:
    heads = rt.raw.streams(user_id)
    if not heads:
        raise PlotError(f"user {user_id!r} has no turns")
    if stream_id is None:
        h = max(heads, key=lambda h: h.n_turns)  # the busiest stream
        return h.stream_id, h.head_seq
    for h in heads:
        if h.stream_id == stream_id:
            return h.stream_id, h.head_seq
    raise PlotError(f"user {user_id!r} has no stream {stream_id!r}")


def _place_decision(det: Detector, turns: list[Turn], scores: list[dict[str, float]]) -> None:
    """The combiner decides a held turn one update late: file its probability under
    that turn, not under the turn whose arrival decided it."""
    got = det.last_decision
    if got is None:
        return
    seq, prob = got
    for i in range(len(turns) - 1, max(-1, len(turns) - 4), -1):
        if turns[i].seq == seq:
            scores[i] = scores[i] | {"combiner": prob}
            return


def build_timeline(rt: Runtime, user_id: str, stream_id: str | None = None) -> Timeline:
    """Replay the stream through a fresh detector and collect its per-turn scores."""
    stream, head = pick_stream(rt, user_id, stream_id)
    cp = rt.checkpoints.load(user_id, stream)
    config = Detector.from_state(cp.detector).config if cp.detector else DetectorConfig()
    det = Detector(config)  # no judge: a replay must not call an LLM
    turns: list[Turn] = []
    scores: list[dict[str, float]] = []
    replayed: list[tuple[int, str]] = []
    after = -1
    while after < head:
        upto = min(head, after + READ_BATCH)
        batch = rt.raw.read(user_id, stream, after, upto)
        after = upto
        if not batch:
            continue
        ids = [t.turn_id for t in batch]
        have = rt.vectors.get(user_id, ids, rt.embedder.name)
        missing = [t for t in batch if t.turn_id not in have]
        if missing:  # not consolidated yet: embed in memory, store nothing
            for t, v in zip(missing, rt.embedder.embed([t.text for t in missing]), strict=True):
                have[t.turn_id] = np.asarray(v, dtype=np.float32)
        for t in batch:
            for seg in det.update(to_seg_turn(t, have[t.turn_id])):
                replayed.append((seg.seqs[-1], seg.reason))
            turns.append(t)
            scores.append(det.last_scores)
            _place_decision(det, turns, scores)
    episodes = rt.episodes.list(user_id, stream)
    tl = Timeline(user_id, stream, config, turns, scores, episodes, replayed=replayed)
    # an episode's reason is why it was closed: the cut sits after its last turn
    tl.cuts = [(e.last_seq + 0.5, e.boundary_reason) for e in episodes]
    return tl


def _turn_panel(ax: Axes, tl: Timeline) -> None:
    kind_colours: dict[str, Any] = {
        k: plt.get_cmap("tab10")(i % 10) for i, k in enumerate(TURN_KINDS)
    }
    seen: list[str] = []
    for t in tl.turns:
        if t.kind not in seen:
            seen.append(t.kind)
    for kind in seen:
        xs = [t.seq for t in tl.turns if t.kind == kind]
        ys = [ROLES.index(t.role) if t.role in ROLES else 0 for t in tl.turns if t.kind == kind]
        ax.scatter(
            xs,
            ys,
            s=28,
            color=kind_colours.get(kind, "grey"),
            label=kind,
            edgecolors="black",
            linewidths=0.3,
            zorder=3,
        )
    ax.set_yticks(range(len(ROLES)), ROLES)
    _frame(ax, (-0.6, len(ROLES) - 0.4), "role", "turn kind")


def _series(tl: Timeline, name: str) -> np.ndarray:
    return np.array([s.get(name, 0.0) for s in tl.scores])


def _soft_panel(ax: Axes, tl: Timeline, xs: np.ndarray) -> None:
    c = tl.config
    # surprisal's score is 0.5 where its z-score reaches surprisal_threshold
    # every score is on 0-1: the semantic score is 0.5 at its distance threshold
    thresholds = {
        "semantic_shift": 0.5,
        "change_point": c.cp_threshold,
        "surprisal": 0.5,
    }
    named = {
        "semantic_shift": f"distance {c.semantic_threshold:.2f} at 0.50",
        "change_point": f"{c.cp_threshold:.2f}",
        "surprisal": f"z {c.surprisal_threshold:.2f} at 0.50",
    }
    colours = {"semantic_shift": "#1f77b4", "change_point": "#9467bd", "surprisal": "#8c564b"}
    for name, label in SOFT:
        ax.plot(
            xs,
            _series(tl, name),
            color=colours[name],
            lw=1.2,
            label=f"{label} (threshold {named[name]})",
        )
        ax.axhline(thresholds[name], color=colours[name], ls="--", lw=0.8, alpha=0.8)
    _frame(ax, (-0.03, 1.05), "soft signal score", "soft signals\n(dashed: threshold)")


def _hard_panel(ax: Axes, tl: Timeline, xs: np.ndarray) -> None:
    colours = {
        "time_gap": "#d62728",
        "size_cap": "#7f7f7f",
        "structural": "#2ca02c",
        "agent_marker": "#e377c2",
    }
    for name, label in HARD:
        ys = _series(tl, name)
        if name in ("time_gap", "size_cap"):
            ax.plot(xs, ys, color=colours[name], lw=1.2, label=label)
        else:  # 0/1 events: markers where they fire
            hit = ys > 0
            ax.scatter(
                xs[hit], ys[hit], color=colours[name], marker="v", s=40, label=label, zorder=3
            )
    ax.axhline(1.0, color="black", ls="--", lw=0.8)
    _frame(ax, (-0.03, 1.12), "hard signal score", "hard signals\n(cut at 1.0)")


def _evidence_panel(ax: Axes, tl: Timeline, xs: np.ndarray) -> None:
    c = tl.config
    if c.combiner:
        thr = c.combiner_threshold or Detector(c).combiner_threshold
        prob = _series(tl, "combiner")
        ax.plot(xs, prob, color="black", lw=1.3, label="combiner P(boundary before turn)")
        ax.axhline(thr, color="#d62728", ls="--", lw=0.9, label=f"cut threshold {thr:.2f}")
        lo = max(0.0, thr - c.combiner_band)
        ax.axhspan(lo, thr, color="#ffbf00", alpha=0.2, label=f"judge band {lo:.2f}-{thr:.2f}")
        ax.set_xlabel("turn (seq in stream)")
        _frame(ax, (-0.03, 1.05), "probability")
        return
    ax.plot(xs, _series(tl, "combined"), color="black", lw=1.3, label="combined soft evidence")
    ax.axhline(
        c.cut_threshold,
        color="#d62728",
        ls="--",
        lw=0.9,
        label=f"cut threshold {c.cut_threshold:.2f}",
    )
    ax.axhspan(
        c.doubt_threshold,
        c.cut_threshold,
        color="#ffbf00",
        alpha=0.2,
        label=f"doubt band {c.doubt_threshold:.2f}-{c.cut_threshold:.2f}",
    )
    ax.set_xlabel("turn (seq in stream)")
    _frame(ax, (-0.03, 1.05), "evidence")


def _frame(ax: Axes, ylim: tuple[float, float], ylabel: str, title: str | None = None) -> None:
    """A panel's y range and label, and its legend outside on the right, as every panel has."""
    ax.set_ylim(*ylim)
    ax.set_ylabel(ylabel)
    titled: dict[str, Any] = {} if title is None else {"title": title, "title_fontsize": 8}
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False, **titled)


def _draw_cuts(fig: Figure, axes: list[Axes], tl: Timeline) -> list[str]:
    """Cut lines on every panel; reason labels on top of the first panel,
    rotated and thinned so that no two labels overlap. Returns the reasons seen."""
    reasons: list[str] = []
    for x, reason in tl.cuts:
        colour = REASON_COLOURS.get(reason, "#444444")
        for ax in axes:
            ax.axvline(x, color=colour, lw=1.0, alpha=0.7, zorder=1)
        if reason not in reasons:
            reasons.append(reason)
    top = axes[0]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    placed: list[tuple[float, float]] = []
    for x, reason in tl.cuts:
        txt = top.text(
            x,
            1.02,
            reason.replace("_", " "),
            transform=top.get_xaxis_transform(),
            rotation=90,
            ha="center",
            va="bottom",
            fontsize=7,
            color=REASON_COLOURS.get(reason, "#444444"),
        )
        box = txt.get_window_extent(renderer)
        if any(box.x0 < hi + 1 and box.x1 > lo - 1 for lo, hi in placed):
            txt.remove()  # too close to a label already drawn: the colour still tells
            continue
        placed.append((box.x0, box.x1))
    handles = [
        Line2D([0], [0], color=REASON_COLOURS.get(r, "#444444"), lw=2, label=r) for r in reasons
    ]
    fig.legend(
        handles=handles,
        title="cut (reason)",
        loc="lower left",
        ncols=min(6, len(handles)) or 1,
        fontsize=8,
        title_fontsize=8,
        frameon=False,
        bbox_to_anchor=(0.06, 0.0),
    )
    return reasons


def _time_axis(ax: Axes, tl: Timeline) -> None:
    """Event time of the turns under a few ticks, on a second axis under the turn axis."""
    seqs = [t.seq for t in tl.turns]
    times = [t.event_ts for t in tl.turns]
    ticks = np.linspace(0, len(seqs) - 1, num=min(7, len(seqs))).round().astype(int)
    sec = ax.secondary_xaxis(-0.42)
    sec.set_xticks([seqs[i] for i in ticks], [_fmt(times[i]) for i in ticks], fontsize=8)
    sec.set_xlabel("event time of the turn (UTC)", fontsize=9)


def _fmt(ts: datetime) -> str:
    return ts.strftime("%m-%d %H:%M")


def render(tl: Timeline) -> Figure:
    """The picture of `tl` as a matplotlib figure (the caller closes it)."""
    if not tl.turns:
        raise PlotError(f"stream {tl.stream_id!r} has no turns")
    n = len(tl.turns)
    width = float(min(40.0, max(12.0, 4.0 + n * 0.09)))
    fig, axes = plt.subplots(
        4,
        1,
        sharex=True,
        figsize=(width, 11.0),
        gridspec_kw={"height_ratios": [1.1, 1.3, 1.0, 1.0]},
    )
    xs = np.array([t.seq for t in tl.turns], dtype=float)
    _turn_panel(axes[0], tl)
    _soft_panel(axes[1], tl, xs)
    _hard_panel(axes[2], tl, xs)
    _evidence_panel(axes[3], tl, xs)
    axes[3].set_xlim(xs[0] - 1, xs[-1] + 1)
    fig.suptitle(
        f"user {tl.user_id} · stream {tl.stream_id}: {n} turns, "
        f"{len(tl.episodes)} episodes (why each cut happened)",
        fontsize=12,
        y=0.99,
    )
    fig.subplots_adjust(left=0.06, right=0.8, top=0.88, bottom=0.17, hspace=0.12)
    _time_axis(axes[3], tl)
    with _missing_glyphs_quiet():
        _draw_cuts(fig, list(axes), tl)
    return fig


@contextmanager
def _missing_glyphs_quiet() -> Iterator[None]:
    """A user id or turn in a script the font lacks (CJK, emoji) draws as
    boxes; matplotlib's warning per glyph says nothing the user can act on."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", r"Glyph \d+ .*missing from font", UserWarning)
        yield


def draw(tl: Timeline, out: Path) -> Path:
    """Write the picture of `tl` to `out` (PNG)."""
    fig = render(tl)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with _missing_glyphs_quiet():
            fig.savefig(out, dpi=110, bbox_inches="tight")  # the legends right of the panels whole
    finally:
        plt.close(fig)
    return out


def plot_stream(rt: Runtime, user_id: str, stream_id: str | None, out: Path) -> Timeline:
    tl = build_timeline(rt, user_id, stream_id)
    draw(tl, out)
    return tl


def plot_latest(rt: Runtime, user_id: str) -> Path:
    """Redraw the user's busiest stream into its latest picture."""
    out = latest_plot_path(rt.settings.home, user_id)
    plot_stream(rt, user_id, None, out)
    return out
