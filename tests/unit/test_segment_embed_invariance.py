"""The default embedder (ONNX int8) is batch-invariant: a turn's vector is a function
of its text alone, bit for bit, however the texts are batched. Dynamic int8
quantization scales activations per run, so batching would make a vector depend
on its batch-mates (issue 27: one poll and two polls gave different episodes).
The int8 graph is exported from the packaged weights on first use (offline),
once for the run (tests/conftest.py, `onnx_model_dir`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from episodic.embed.onnx import OnnxInt8Embedder

TEXTS = [
    "Can you help me book a table for two tonight?",
    "Sure, which restaurant did you have in mind?",
    "ok",
    "",
    "The build fails with a missing module error after the upgrade. " * 6,
    "Let's switch topics: what did we decide about the quarterly budget?",
    "Traceback (most recent call last): File 'app.py', line 12, in <module> KeyError: 'id'",
    "thanks!",
]


@pytest.fixture(scope="module")
def embedder(onnx_model_dir: Path) -> OnnxInt8Embedder:
    return OnnxInt8Embedder(model_dir=onnx_model_dir)


@pytest.mark.slow  # the first use exports and quantizes the graph (tens of seconds)
def test_vectors_do_not_depend_on_the_batching(embedder: OnnxInt8Embedder) -> None:
    whole = embedder.embed(TEXTS)
    assert whole.shape == (len(TEXTS), 384) and whole.dtype == np.float32
    one_by_one = np.concatenate([embedder.embed([t]) for t in TEXTS])
    split = np.concatenate([embedder.embed(TEXTS[:3]), embedder.embed(TEXTS[3:])])
    reordered = embedder.embed(TEXTS[::-1])[::-1]
    with_others = embedder.embed(["an unrelated long neighbour " * 20, *TEXTS, "x"])[1:-1]
    for other in (one_by_one, split, reordered, with_others):
        assert np.array_equal(whole, other)  # exactly, not approximately
    assert not whole[TEXTS.index("")].any()  # an empty turn stays a zero row


@pytest.mark.slow
def test_a_query_alone_equals_the_same_text_among_turns(embedder: OnnxInt8Embedder) -> None:
    among = embedder.embed(TEXTS)
    for i, t in enumerate(TEXTS):
        assert np.array_equal(embedder.embed([t])[0], among[i])
