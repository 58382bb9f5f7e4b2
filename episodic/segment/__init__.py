"""Online episode segmentation: boundary signals, the BOCPD kernel, the detector.

The names below load on first use (PEP 562): `episodic.config` imports
`episodic.segment.config` for the detector's settings, and with it this
package; eager, every command paid for the detector, BOCPD and the combiner
(12 modules) before it started, `episodic status` included."""

from __future__ import annotations

from collections.abc import Iterable
from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from episodic.segment.detector import Detector, DetectorConfig
    from episodic.segment.types import (
        ClosedSegment,
        Judge,
        JudgeAnswer,
        JudgeRequest,
        SegTurn,
    )

__all__ = [
    "ClosedSegment",
    "Detector",
    "DetectorConfig",
    "Judge",
    "JudgeAnswer",
    "JudgeRequest",
    "SegTurn",
    "segment_stream",
]

_HOME = {
    "Detector": "episodic.segment.detector",
    "DetectorConfig": "episodic.segment.config",
    **dict.fromkeys(
        ("ClosedSegment", "Judge", "JudgeAnswer", "JudgeRequest", "SegTurn"),
        "episodic.segment.types",
    ),
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'episodic.segment' has no attribute {name!r}")
    return getattr(import_module(home), name)


def segment_stream(
    turns: Iterable[SegTurn], config: DetectorConfig | None = None, judge: Judge | None = None
) -> list[ClosedSegment]:
    """One pass over a stream, then flush."""
    from episodic.segment.detector import Detector

    det = Detector(config, judge)
    out: list[ClosedSegment] = []
    for turn in turns:
        out.extend(det.update(turn))
    out.extend(det.flush())
    return out
