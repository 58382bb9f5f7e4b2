"""Online episode segmentation: boundary signals, the BOCPD kernel, the detector."""

from __future__ import annotations

from collections.abc import Iterable

from episodic.segment.detector import Detector, DetectorConfig
from episodic.segment.types import ClosedSegment, Judge, JudgeAnswer, JudgeRequest, SegTurn

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


def segment_stream(
    turns: Iterable[SegTurn], config: DetectorConfig | None = None, judge: Judge | None = None
) -> list[ClosedSegment]:
    """One pass over a stream, then flush."""
    det = Detector(config, judge)
    out: list[ClosedSegment] = []
    for turn in turns:
        out.extend(det.update(turn))
    out.extend(det.flush())
    return out
