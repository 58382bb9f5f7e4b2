"""Helpers for the fact and consolidation integration tests.

- `Say`: a user (or assistant) turn at a given event time, written as JSONL.
- `memory_for(kind, ...)`: a memory (episodic.adapters.embedded.Memory, to
  pass to the flows) whose provider is offline, a counting wrapper over the
  offline provider, or the real Anthropic SDK talking to the stub server;
  the environment names the same home (for commands run in the test), set
  through `monkeypatch`, so no setting leaks into the next test.
  `runtime_for(...)` is its resources (`memory.rt`).
- `ScriptedModel`: the stub's answers, routed by the tool instructor asks
  for (the response model's name): extraction by phrase, merge by rules,
  salience a fixed rating. It counts the requests per tool.
- `snapshot(rt, user)`: episodes, facts and history without processing
  times, so two runs can be compared for equality.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from episodic.adapters.embedded import Memory
from episodic.config import Settings
from episodic.llm.offline import OfflineProvider
from episodic.service.ingest import IngestReport, ingest_file
from episodic.service.runtime import Runtime
from tests.integration.helpers import MEMORIES, write_jsonl
from tests.stubs.anthropic_stub import AnthropicStub, tool_name
from tests.stubs.scripted import Action, Answer, Status

USER = "u1"
STREAM = "s1"
MERGE = "MergeDecisions"
EXTRACT = "ExtractedFacts"
SALIENCE = "SalienceRating"
DIGEST = "EpisodeDigest"  # salience, summary and candidate facts in one answer


@dataclass(frozen=True)
class Say:
    text: str
    ts: str  # ISO 8601 with offset
    role: str = "user"
    user: str = USER
    stream: str = STREAM

    def row(self) -> dict[str, Any]:
        return {
            "user_id": self.user,
            "stream_id": self.stream,
            "role": self.role,
            "text": self.text,
            "ts": self.ts,
        }


def ingest(rt: Runtime, path: Path, says: list[Say]) -> IngestReport:
    return ingest_file(rt.raw, write_jsonl(path, [s.row() for s in says]), "jsonl")


# ---- providers ---------------------------------------------------------------


class CountingOffline:
    """The offline provider, counting the response models it is asked for.

    Installed as the runtime's provider (the one-method seam), so a test can
    say "no merge call was made" on the offline path too."""

    name = "offline"

    def __init__(self) -> None:
        self.inner = OfflineProvider()
        self.model = self.inner.model
        self.usage = self.inner.usage
        self.calls: Counter[str] = Counter()

    def structured(self, messages: Any, response_model: Any, *, context: Any = None) -> Any:
        self.calls[response_model.__name__] += 1
        return self.inner.structured(messages, response_model, context=context)


_TURN_LINE = re.compile(r"^\[(\d+)\] (\w+) \([^)]*\): (.*)$")
_EXISTING_LINE = re.compile(r"^\[(\d+)\] (.*)$")
_NEW_LINE = re.compile(r"^new_index (\d+): (.*)$")

MergeRule = tuple[str, str, str]  # (phrase in the new fact, event, phrase in the existing fact)


@dataclass
class ScriptedModel:
    """What the stub's model answers, as a function of the request.

    extract: phrase in a user turn -> the fact the model states for it.
    merge_rules: (phrase in new fact, event, phrase in existing fact); the
      first rule whose phrases match decides; otherwise ADD.
    merge_override: when set, the merge answer, verbatim, every time.
    """

    extract: dict[str, str] = field(default_factory=dict)
    merge_rules: list[MergeRule] = field(default_factory=list)
    merge_override: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    salience: int = 6
    calls: Counter[str] = field(default_factory=Counter)
    stub: AnthropicStub | None = None

    def action(self, n: int) -> Action:
        assert self.stub is not None
        body = self.stub.requests[n]
        tool = tool_name(body)
        self.calls[tool] += 1
        prompt = _first_user_text(body)
        if tool == DIGEST:
            rating = {"score": self.salience, "rationale": "scripted", "summary": "scripted"}
            return Answer({"rating": rating, "facts": self._facts(prompt)})
        if tool == SALIENCE:
            return Answer({"score": self.salience, "rationale": "scripted", "summary": "scripted"})
        if tool == EXTRACT:
            return Answer({"facts": self._facts(prompt)})
        if tool == MERGE:
            if self.merge_override is not None:
                return Answer(self.merge_override(body))
            return Answer({"decisions": self._merge(prompt)})
        return Status(400, message=f"the scripted model does not answer {tool}")

    def _facts(self, prompt: str) -> list[dict[str, Any]]:
        out = []
        for line in prompt.splitlines():
            m = _TURN_LINE.match(line.strip())
            if not m or m[2] != "user":
                continue
            for phrase, fact in self.extract.items():
                if phrase.casefold() in m[3].casefold():
                    out.append({"text": fact, "support": [int(m[1])]})
        return out

    def _merge(self, prompt: str) -> list[dict[str, Any]]:
        existing: dict[int, str] = {}
        new: dict[int, str] = {}
        section = ""
        for line in prompt.splitlines():
            s = line.strip()
            if s.startswith("Existing facts:"):
                section = "existing"
            elif s.startswith("New facts:"):
                section = "new"
            elif section == "existing" and (m := _EXISTING_LINE.match(s)):
                existing[int(m[1])] = m[2]
            elif section == "new" and (m := _NEW_LINE.match(s)):
                new[int(m[1])] = m[2]
        decisions = []
        for k, text in sorted(new.items()):
            item: dict[str, Any] = {"event": "ADD", "id": None, "text": text, "new_index": k}
            for phrase, event, old_phrase in self.merge_rules:
                if phrase.casefold() not in text.casefold():
                    continue
                hit = [i for i, t in existing.items() if old_phrase.casefold() in t.casefold()]
                if hit:
                    item = {"event": event, "id": hit[0], "text": text, "new_index": k}
                    break
            decisions.append(item)
        return decisions


def _first_user_text(body: dict[str, Any]) -> str:
    for m in body.get("messages", []):
        if m.get("role") != "user":
            continue
        c = m.get("content")
        if isinstance(c, str):
            return c
        if isinstance(c, list):
            return "\n".join(b.get("text", "") for b in c if isinstance(b, dict))
    return ""


# ---- memories ----------------------------------------------------------------


def memory_for(
    kind: str,
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    stub: AnthropicStub | None = None,
    **settings: Any,
) -> Memory:
    """A memory on `home` (closed when the test ends). kind: offline |
    counting (offline, counted) | anthropic."""
    env = {"EPISODIC_HOME": str(home), "EPISODIC_EMBEDDER": "hash", "EPISODIC_LLM": "offline"}
    if kind == "anthropic":
        assert stub is not None
        env.update(
            EPISODIC_LLM="anthropic",
            EPISODIC_LLM_BASE_URL=stub.url,
            EPISODIC_LLM_MODEL="claude-stub",
            EPISODIC_LLM_RETRIES="1",
            EPISODIC_LLM_TIMEOUT_S="10",
            ANTHROPIC_API_KEY="test-key",
        )
    env.update({f"EPISODIC_{k.upper()}": str(v) for k, v in settings.items()})
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    if kind != "anthropic":
        monkeypatch.delenv("EPISODIC_LLM_BASE_URL", raising=False)
    provider = CountingOffline() if kind == "counting" else None
    return MEMORIES.enter_context(Memory(Settings(), provider=provider))


def runtime_for(
    kind: str,
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    stub: AnthropicStub | None = None,
    **settings: Any,
) -> Runtime:
    """The resources of `memory_for(...)`: a store on `home`, and the
    environment naming it for the commands a test runs."""
    return memory_for(kind, home, monkeypatch, stub, **settings).rt


def merge_calls(rt: Runtime, model: ScriptedModel | None) -> int:
    """Merge calls the model saw so far (the stub's count, or the wrapper's)."""
    if model is not None:
        return model.calls[MERGE]
    assert isinstance(rt.provider, CountingOffline)
    return rt.provider.calls[MERGE]


# ---- comparing runs ----------------------------------------------------------


def _ts(d: datetime | None) -> str | None:
    return None if d is None else d.isoformat()


def snapshot(rt: Runtime, user: str = USER) -> dict[str, Any]:
    """Everything a run decided, without processing times (closed_at, created_at ...)."""
    episodes = [
        (
            e.episode_id,
            e.stream_id,
            e.first_seq,
            e.last_seq,
            tuple(e.turn_ids),
            e.boundary_reason,
            round(e.boundary_score, 6),
            e.salience,
            e.salience_source,
            e.summary,
            e.facts_state,
            e.status,
        )
        for e in rt.episodes.list(user)
    ]
    facts = sorted(
        (
            f.fact_id,
            f.text,
            f.status,
            _ts(f.valid_from),
            _ts(f.valid_to),
            f.supersedes,
            tuple(f.source_episode_ids),
            f.importance,
        )
        for f in rt.facts.list(user, include_inactive=True)
    )
    history = sorted(
        (h.history_id, h.fact_id, h.event, h.old_text, h.new_text, h.new_fact_id, h.episode_id,
         h.decided_by)
        for h in rt.facts.all_history(user)
    )  # fmt: skip
    marks = sorted(
        (c.stream_id, c.watermark, tuple(c.open_turn_ids)) for c in rt.checkpoints.all(user)
    )
    return {"episodes": episodes, "facts": facts, "history": history, "checkpoints": marks}


def active_texts(rt: Runtime, user: str = USER) -> list[str]:
    return sorted(f.text for f in rt.facts.list(user))
