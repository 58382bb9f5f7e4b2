"""LLM cost of consolidation: calls per 1,000 turns, per step, and a cached rerun.

The LoCoMo dev stream (`shared_data/locomo/locomo_dev5.json`) goes through the
consolidate flow twice, each time into a fresh store, with one answer cache:

- first run: every question the flow asks reaches the provider; counted per
  response model (the step: EpisodeDigest = salience + summary + candidate
  facts, MergeDecisions, reflection ...), with its tokens and wall time;
- second run: the same stream again, so every question is a cache hit: 0 calls.

The provider is the offline one by default (what a model would be asked is
the same; answers are deterministic, tokens 0). With `base_url` set to an
OpenAI-compatible server (`episodic llm serve`), the questions go there, and
tokens are the server's `usage`; keep `max_turns` small, a 270M model on two
cores answers at about 8 tokens a second. The fact scenario suite runs
offline beside it (precision, recall, wrong supersessions).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from episodic.llm.accounting import stage_report
from episodic.llm.base import Message, Usage
from episodic.llm.cache import CachedProvider
from episodic.llm.offline import OfflineProvider
from episodic.llm.prices import PRICES_AS_OF

T = TypeVar("T", bound=BaseModel)
TARGET_CALLS_PER_1000 = 100


class StepMeter:
    """Wraps a provider; counts calls, tokens and seconds per response model."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self.usage: Usage = inner.usage
        self.mode = getattr(inner, "mode", None)
        self.calls: Counter[str] = Counter()
        self.seconds: defaultdict[str, float] = defaultdict(float)
        self.tokens: defaultdict[str, list[int]] = defaultdict(lambda: [0, 0])
        self._lock = threading.Lock()

    def structured(
        self, messages: list[Message], response_model: type[T], *, context: Any = None
    ) -> T:
        before = (self.usage.input_tokens, self.usage.output_tokens)
        t0 = time.perf_counter()
        try:
            return self.inner.structured(messages, response_model, context=context)  # type: ignore[no-any-return]
        finally:
            step = response_model.__name__
            with self._lock:
                self.calls[step] += 1
                self.seconds[step] += time.perf_counter() - t0
                self.tokens[step][0] += self.usage.input_tokens - before[0]
                self.tokens[step][1] += self.usage.output_tokens - before[1]

    def per_step(self) -> dict[str, Any]:
        return {
            step: {
                "calls": n,
                "input_tokens": self.tokens[step][0],
                "output_tokens": self.tokens[step][1],
                "seconds": round(self.seconds[step], 3),
            }
            for step, n in sorted(self.calls.items())
        }


def _samples(path: Path, max_turns: int | None) -> list[dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if max_turns is None:
        return list(data)
    out, n = [], 0
    for sample in data:
        if n >= max_turns:
            break
        out.append(sample)
        n += sum(len(v) for k, v in sample["conversation"].items() if isinstance(v, list))
    return out


def _run(samples: list[dict[str, Any]], provider: Any, work: Path, embedder: str) -> dict[str, Any]:
    from episodic.bench.corpus import bench_settings, open_memory

    with open_memory(bench_settings(work / "lancedb", embedder), provider=provider) as memory:
        turns = 0
        for i, sample in enumerate(samples):
            sid = str(sample.get("sample_id") or f"sample-{i}")
            src = work / f"{i}.json"
            src.write_text(json.dumps([sample]), encoding="utf-8")
            turns += memory.ingest(src, "locomo", user_id=sid, stream_id=sid).accepted
        t0 = time.perf_counter()
        summary = memory.consolidate(flush=True)
        wall = time.perf_counter() - t0
        episodes = memory.rt.episodes
        unscored = sum(len(episodes.unscored(str(s.get("sample_id")))) for s in samples)
    return {"turns": turns, "summary": summary, "wall_s": round(wall, 2), "unscored": unscored}


def _groups(by_written: dict[str, Any]) -> dict[str, Any]:
    return {
        g: {k: r[k] for k in ("cases", "recall", "precision", "wrong_supersessions")}
        | {"failed_cases": [f["case"] for f in r["failures"]]}
        for g, r in by_written.items()
    }


def bench_llm(
    data: Path | None = None,
    *,
    max_turns: int | None = None,
    base_url: str | None = None,
    embedder: str | None = None,
) -> dict[str, Any]:
    """`embedder` defaults to the configured one (MiniLM): episode lengths, and
    so calls per turn, follow the segmenter's semantic signal."""
    from episodic.bench.corpus import data_dir
    from episodic.bench.fact_cases import CASES, HELD_OUT
    from episodic.bench.fact_scenarios import run_by_written, run_suite
    from episodic.config import load_settings

    path = data or data_dir() / "locomo" / "locomo_dev5.json"
    samples = _samples(path, max_turns)
    embedder = embedder or load_settings().embedder
    tmp = Path(tempfile.mkdtemp(prefix="episodic-bench-llm-"))
    try:
        inner: Any
        if base_url:
            from episodic.llm.openai_provider import OpenAIProvider

            inner = OpenAIProvider(
                "gemma-3-270m", base_url=base_url, mode="tools", max_tokens=256,
                timeout_s=120.0, retries=1,
            )  # fmt: skip
        else:
            inner = OfflineProvider()
        meter = StepMeter(inner)
        stages_before = inner.usage.stages_dict()
        first = _run(samples, CachedProvider(meter, tmp / "cache"), tmp / "run1", embedder)
        first_steps = meter.per_step()
        calls_first = sum(meter.calls.values())
        after = inner.usage.stages_dict()
        first_stages = stage_report(stages_before, after, inner.name, inner.model)
        meter.calls.clear()
        cached_before = inner.usage.cached
        second = _run(samples, CachedProvider(meter, tmp / "cache"), tmp / "run2", embedder)
        calls_second = sum(meter.calls.values())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    turns = first["turns"]
    episodes = first["summary"].get("episodes_closed", 0)
    per_1000 = round(1000 * calls_first / turns, 1) if turns else 0.0
    suite = run_suite(cases=CASES + HELD_OUT)
    suite.pop("failures", None)
    suite["by_written"] = _groups(run_by_written(cases=CASES + HELD_OUT))
    if base_url:  # the model path on the same cases (issue 28), beside the offline one
        fallbacks = inner.usage.fallbacks
        suite["model_by_written"] = _groups(run_by_written(inner, CASES + HELD_OUT))
        suite["model_fallbacks"] = inner.usage.fallbacks - fallbacks
    return {
        "benchmark": "llm",
        "provider": inner.name,
        "model": inner.model,
        "stream": path.name,
        "embedder": embedder,
        "turns": turns,
        "episodes": episodes,
        "calls": calls_first,
        "calls_per_1000_turns": per_1000,
        "calls_per_episode": round(calls_first / episodes, 2) if episodes else None,
        "target_calls_per_1000_turns": TARGET_CALLS_PER_1000,
        "meets_target": per_1000 <= TARGET_CALLS_PER_1000,
        "per_step": first_steps,
        "per_stage": first_stages,
        "per_stage_per_1000_turns": {
            stage: {
                k: (round(1000 * v / turns, 2) if turns and isinstance(v, int | float) else v)
                for k, v in row.items()
            }
            for stage, row in first_stages.items()
        },
        "llm": first["summary"].get("llm"),
        "prices_as_of": PRICES_AS_OF,
        "wall_s": first["wall_s"],
        "unscored_episodes": first["unscored"],
        "cached_rerun": {
            "calls": calls_second,
            "cache_hits": inner.usage.cached - cached_before,
            "wall_s": second["wall_s"],
            "unscored_episodes": second["unscored"],
        },
        "fact_scenarios": suite,
    }
