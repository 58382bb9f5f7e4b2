"""all-MiniLM-L6-v2 on ONNX Runtime with int8 dynamic quantization.

The graph is exported locally from the packaged weights (never from a hub)
on first use and cached once per machine (`Settings.models_dir`); later loads need neither
torch nor transformers. Mean pooling over the attention mask and L2
normalisation, as sentence-transformers does for this model.

Batch-invariant: dynamic int8 quantization computes each activation's scale
over the whole input tensor, so in a batch a turn's vector would depend on its
batch-mates (and on their padding), and a query embedded alone would be scaled
differently from the turns it is compared with. Each text therefore runs in a
batch of its own, unpadded: its vector is a function of its text alone, so the
same stream gives the same vectors, and the same episodes, whether it arrives
in one poll or in many (tests/unit/test_segment_embed_invariance.py). The cost
is throughput (docs/segmentation.md, "Batch-invariant embedding")."""

from __future__ import annotations

import logging
import os
import threading
import warnings
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from filelock import FileLock

from episodic.embed.base import models_dir, normalise, offline_hub, weights_path

MAX_TOKENS = 256  # the model's max_seq_length (sentence_bert_config.json)


def export_int8(out_dir: Path | None = None) -> Path:
    """Export fp32 ONNX from the packaged weights, quantize to int8; returns the
    int8 file. Idempotent: an existing file is reused."""
    out = out_dir or models_dir() / "all-MiniLM-L6-v2-onnx"
    q8 = out / "model-int8.onnx"
    if q8.exists():
        return q8
    out.mkdir(parents=True, exist_ok=True)
    # the default embedder: workers starting together on a fresh home would
    # otherwise export into the same files at once
    with FileLock(str(out / ".export.lock")):
        if not q8.exists():
            _export(out, q8)
    return q8


def _export(out: Path, q8: Path) -> None:
    # once per machine; what torch, transformers and onnxruntime say on the way
    # (a weights report, tracer and quantization warnings) is not the user's concern
    with warnings.catch_warnings(), _quiet_loggers("", "transformers", "onnxruntime", "torch"):
        warnings.simplefilter("ignore")
        _export_quietly(out, q8)


@contextmanager
def _quiet_loggers(*names: str) -> Iterator[None]:
    loggers = [logging.getLogger(n) for n in names]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def _export_quietly(out: Path, q8: Path) -> None:
    offline_hub()
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    quiet: Any = hf_logging  # untyped: its progress bar and load report stay off
    quiet.set_verbosity_error()
    quiet.disable_progress_bar()
    bert = AutoModel.from_pretrained(str(weights_path()))
    bert.eval()

    class _Hidden(torch.nn.Module):
        # keyword call: the positional order of forward() changes between versions
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    model = _Hidden()
    fp32 = out / "model-fp32.onnx"
    ids = torch.ones((2, 16), dtype=torch.int64)
    with torch.no_grad():
        torch.onnx.export(
            model,
            (ids, torch.ones_like(ids), torch.zeros_like(ids)),
            str(fp32),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "seq"},
                "attention_mask": {0: "batch", 1: "seq"},
                "token_type_ids": {0: "batch", 1: "seq"},
                "last_hidden_state": {0: "batch", 1: "seq"},
            },
            opset_version=17,
            dynamo=False,
        )
    tmp = out / "model-int8.onnx.tmp"
    # per-channel weights: cosine to fp32 0.99 on short turns (per-tensor: 0.93 to 0.97)
    quantize_dynamic(str(fp32), str(tmp), weight_type=QuantType.QInt8, per_channel=True)
    tmp.replace(q8)  # a crash mid-quantization leaves no half file behind


class OnnxInt8Embedder:
    """The ONNX int8 backend: same model, same pooling, about 2-3x faster on CPU.

    A text alone is too small for ONNX Runtime's threads to share (two threads
    on one 20-token text ran 164 texts/s here): each run is single-threaded and
    the texts of a call go to a pool of one thread per core (278 texts/s), the
    vectors bit-identical. Concurrent callers share the pool, so they cannot
    oversubscribe the cores."""

    name = "all-MiniLM-L6-v2-onnx-int8"
    dim = 384

    def __init__(
        self, batch_size: int = 64, model_dir: Path | None = None, workers: int | None = None
    ) -> None:
        # `batch_size` is kept for the callers' signature: every text runs alone
        # (batch-invariance, see the module docstring)
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.batch_size = batch_size
        self.model_dir = model_dir
        self.workers = max(1, workers or os.cpu_count() or 1)
        self._session: Any = None
        self._tokenizer: Any = None
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def _load(self) -> tuple[Any, Any, ThreadPoolExecutor]:
        with self._lock:  # callers on several threads load once
            if self._session is None:
                import onnxruntime as ort
                from tokenizers import Tokenizer

                path = export_int8(self.model_dir)
                opts = ort.SessionOptions()
                opts.intra_op_num_threads = 1  # the pool is the parallelism
                opts.inter_op_num_threads = 1
                tok = Tokenizer.from_file(str(weights_path() / "tokenizer.json"))
                tok.enable_truncation(MAX_TOKENS)
                tok.no_padding()  # the file pads to 128; each text runs alone, unpadded
                self._tokenizer = tok
                self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="embed")
                self._session = ort.InferenceSession(
                    str(path), opts, providers=["CPUExecutionProvider"]
                )
            assert self._pool is not None
            return self._session, self._tokenizer, self._pool

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        keep = [i for i, t in enumerate(texts) if t.strip()]
        if not keep:
            return out
        session, tok, pool = self._load()

        def pooled(ids: list[int]) -> np.ndarray:
            # one text per run: no batch-mate can move its scales
            a = np.asarray([ids], dtype=np.int64)
            feed = {"input_ids": a, "attention_mask": np.ones_like(a),
                    "token_type_ids": np.zeros_like(a)}  # fmt: skip
            hidden: np.ndarray = session.run(None, feed)[0]
            pooled_row: np.ndarray = hidden[0].mean(axis=0)  # unpadded: the mask is all ones
            return pooled_row

        ids = [e.ids for e in tok.encode_batch([texts[i] for i in keep])]
        # a lone text (a query) runs here: a hop to the pool would only add latency
        vectors = [pooled(ids[0])] if len(ids) == 1 else pool.map(pooled, ids)
        for i, v in zip(keep, vectors, strict=True):
            out[i] = v
        return normalise(out)
