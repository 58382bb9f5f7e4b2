"""One pass equals many polls on the default embedder (ONNX int8), not only on
precomputed vectors: each poll embeds only the turns it reads, in one call, and
restores the detector from the previous poll's checkpoint. Before the embedder
became batch-invariant, a turn's int8 vector depended on which turns shared its
batch, and a 786-turn stream gave 142 episodes in one poll and 141 in two
(issue 27). Runs the default detector (combiner on, one-turn delay)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from episodic.embed.onnx import OnnxInt8Embedder
from episodic.segment.detector import Detector, DetectorConfig
from episodic.segment.types import ClosedSegment, SegTurn

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
TOPICS = [
    ("Can you book a table for four at an Italian place tonight?",
     "Sure, I found Trattoria Roma at 7pm, shall I reserve it?",
     "Yes please, and ask for a table by the window.",
     "Done: a window table for four at 7pm is reserved."),
    ("The CI build fails with ModuleNotFoundError: No module named 'yaml'.",
     "Add pyyaml to the dev dependencies and rerun the pipeline.",
     "It passes now, but the lint step complains about line length.",
     "Set the line length to 100 in pyproject.toml to match the formatter."),
    ("What's the weather going to be like in Oslo this weekend?",
     "Cold and clear: around minus four on Saturday, light snow on Sunday.",
     "Should I pack crampons for the hike?",
     "Microspikes are enough for the forest trails near the city."),
    ("ok thanks", "You're welcome!",
     "By the way, how do I cancel my gym membership?",
     "Most gyms need a written notice; check the contract's cancellation clause."),
]  # fmt: skip
TEXTS = [t for block in TOPICS * 2 for t in block]  # 32 turns, topics recurring


def turns_with(vectors: np.ndarray, lo: int, hi: int) -> list[SegTurn]:
    return [
        SegTurn(
            i,
            f"t{i}",
            "user" if i % 2 == 0 else "assistant",
            "user-question" if i % 2 == 0 else "assistant-answer",
            TEXTS[i],
            T0 + timedelta(minutes=i),
            vectors[i - lo],
        )
        for i in range(lo, hi)
    ]


@pytest.fixture(scope="module")
def embedder(onnx_model_dir: Path) -> OnnxInt8Embedder:
    return OnnxInt8Embedder(model_dir=onnx_model_dir)


@pytest.fixture(scope="module")
def one_pass(embedder: OnnxInt8Embedder) -> tuple[list[ClosedSegment], bytes]:
    det = Detector(DetectorConfig())
    segs = [s for t in turns_with(embedder.embed(TEXTS), 0, len(TEXTS)) for s in det.update(t)]
    state = det.to_state()
    return segs + det.flush(), state


@pytest.mark.slow  # the first use exports and quantizes the int8 graph
@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cuts=st.lists(st.integers(1, len(TEXTS) - 1), min_size=1, max_size=5))
def test_one_poll_equals_any_split_into_polls(
    embedder: OnnxInt8Embedder, one_pass: tuple[list[ClosedSegment], bytes], cuts: list[int]
) -> None:
    expected, expected_state = one_pass
    bounds = sorted({0, len(TEXTS), *cuts})
    state = Detector(DetectorConfig()).to_state()
    got: list[ClosedSegment] = []
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        det = Detector.from_state(state)
        vectors = embedder.embed(TEXTS[lo:hi])  # a poll embeds what it reads, in one call
        for t in turns_with(vectors, lo, hi):
            got.extend(det.update(t))
        state = det.to_state()
    assert state == expected_state
    got.extend(Detector.from_state(state).flush())
    assert got == expected
    assert len(expected) >= 2  # the stream is cut somewhere: the check has teeth
