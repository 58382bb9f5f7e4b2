"""Each signal built on its own agrees with the detector's defaults: the
values are declared once, in DetectorConfig."""

from __future__ import annotations

from episodic.segment.bocpd import BocpdKernel, ChangePoint, Surprisal
from episodic.segment.config import DEFAULTS, DetectorConfig
from episodic.segment.semantic import SemanticShift
from episodic.segment.signals import IdleClose, SizeCap, TimeGap


def test_signals_default_to_the_detector_config() -> None:
    c = DetectorConfig()
    assert DEFAULTS == c
    sem, cp = SemanticShift(), ChangePoint()
    assert (sem.threshold, sem.decay) == (c.semantic_threshold, c.semantic_decay)
    assert (sem.center, sem.prior_turns) == (c.center, c.center_prior_turns)
    assert (cp.threshold, cp.dims) == (c.cp_threshold, c.bocpd_dims)
    assert (cp.max_run_length, cp.hazard_lambda) == (c.max_run_length, c.hazard_lambda)
    assert (cp.obs_var, cp.prior_var, cp.seed) == (c.obs_var, c.prior_var, c.seed)
    assert BocpdKernel().hazard_lambda == c.hazard_lambda
    sur = Surprisal()
    assert (sur.threshold, sur.rate) == (c.surprisal_threshold, c.surprisal_rate)
    size = SizeCap()
    assert (size.max_turns, size.max_minutes) == (c.max_turns, c.max_minutes)
    assert TimeGap().gap_minutes == c.time_gap_minutes
    assert IdleClose().idle_minutes == c.idle_minutes


def test_the_detector_package_exports_the_same_config() -> None:
    from episodic.segment import DetectorConfig as Exported
    from episodic.segment.detector import DetectorConfig as FromDetector

    assert Exported is DetectorConfig is FromDetector
