"""Issue 5 scenarios through the real consolidate flow: JSONL turns in, the
flow run, the fact store and its history checked. Each runs twice: through
the offline provider (counted at the provider seam) and through the real
Anthropic SDK and instructor against the stub server, with the model's
answers scripted per tool."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from episodic.adapters.cli.main import app
from episodic.adapters.embedded import Memory
from episodic.facts import MergeDecisions
from episodic.llm.fake import FakeProvider
from episodic.service.runtime import Runtime
from flows.consolidate import consolidate
from tests.integration.facts_support import (
    DIGEST,
    EXTRACT,
    MERGE,
    USER,
    Say,
    ScriptedModel,
    active_texts,
    ingest,
    memory_for,
    merge_calls,
)
from tests.stubs.anthropic_stub import AnthropicStub

pytestmark = pytest.mark.usefixtures("prefect_harness")

# what the scripted model answers; the offline extractor finds its own wording
EXTRACT_SCRIPT = {
    "I live in Paris": "User lives in Paris",
    "I moved to Berlin": "User lives in Berlin",
    "I have a dog named Rex": "User has a dog named Rex",
    "Rex died": "User's dog Rex died last week",
    "I use Emacs": "User uses Emacs",
}
MERGE_RULES = [("Berlin", "UPDATE", "Paris"), ("Rex died", "DELETE", "dog named Rex")]

JAN = "2025-01-10T09:00:00+00:00"
MAR = "2025-03-01T09:00:00+00:00"
cli = CliRunner()


class Env:
    def __init__(self, kind: str, memory: Memory, model: ScriptedModel | None, tmp: Path) -> None:
        self.kind, self.memory, self.model, self.tmp = kind, memory, model, tmp
        self.rt = memory.rt
        self._files = 0

    def episode(self, *says: Say) -> dict[str, Any]:
        """Ingest one conversation and consolidate it to the end."""
        self._files += 1
        rep = ingest(self.rt, self.tmp / f"turns-{self._files}.jsonl", list(says))
        assert rep.accepted == len(says)
        summary = consolidate(user=USER, flush=True, memory=self.memory)
        assert isinstance(summary, dict)
        return summary

    def merge_calls(self) -> int:
        return merge_calls(self.rt, self.model)

    def cli_json(self, *args: str) -> Any:
        res = cli.invoke(app, list(args))
        assert res.exit_code == 0, res.output
        return json.loads(res.stdout)


@pytest.fixture(params=["offline", "anthropic"])
def env(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Env]:
    if request.param == "offline":
        yield Env("offline", memory_for("counting", tmp_path / "home", monkeypatch), None, tmp_path)
        return
    model = ScriptedModel(extract=EXTRACT_SCRIPT, merge_rules=MERGE_RULES)
    with AnthropicStub(default=lambda n: model.action(n)) as stub:
        model.stub = stub
        memory = memory_for("anthropic", tmp_path / "home", monkeypatch, stub=stub)
        yield Env("anthropic", memory, model, tmp_path)


def _history_events(rt: Runtime) -> list[tuple[str, str]]:
    return [(h.event, h.decided_by) for h in rt.facts.all_history(USER)]


def test_empty_store_adds_without_a_call(env: Env) -> None:
    summary = env.episode(Say("I live in Paris.", JAN), Say("Noted!", JAN, role="assistant"))
    assert summary["fact_events"] == {"ADD": 1}
    assert len(env.rt.facts.list(USER)) == 1
    assert "Paris" in env.rt.facts.list(USER)[0].text
    assert env.merge_calls() == 0
    assert _history_events(env.rt) == [("ADD", "rule")]
    if env.model is not None:  # the model did the extraction: the path was really used
        assert env.model.calls[DIGEST] == 1 and env.model.calls[EXTRACT] == 0
        assert env.rt.facts.list(USER)[0].text == "User lives in Paris"
        episode = env.rt.episodes.list(USER)[0]
        assert (episode.salience, episode.salience_source) == (6, "claude-stub")
        # one answer served (the digest: salience, summary and facts), its tokens counted
        assert summary["llm_calls"] == 1
        assert summary["tokens"] == {"input": 20, "output": 7}


def test_same_fact_twice_is_one_fact_and_a_noop_without_a_call(env: Env) -> None:
    env.episode(Say("I live in Paris.", JAN))
    second = env.episode(Say("I live in Paris.", MAR))
    assert second["fact_events"] == {"NOOP": 1}
    facts = env.rt.facts.list(USER, include_inactive=True)
    assert len(facts) == 1 and facts[0].status == "active"
    assert env.merge_calls() == 0  # neither the ADD (empty store) nor the NOOP asked
    assert _history_events(env.rt) == [("ADD", "rule"), ("NOOP", "rule")]
    noop = env.rt.facts.all_history(USER)[1]
    assert noop.fact_id == facts[0].fact_id and noop.old_text == facts[0].text


def test_move_supersedes_with_validity_and_history(env: Env) -> None:
    env.episode(Say("I live in Paris.", JAN))
    env.episode(Say("I moved to Berlin.", MAR))
    assert env.merge_calls() == 1
    active = env.rt.facts.list(USER)
    assert len(active) == 1 and "Berlin" in active[0].text
    berlin = active[0]
    everything = {f.fact_id: f for f in env.rt.facts.list(USER, include_inactive=True)}
    assert len(everything) == 2
    paris = everything[berlin.supersedes or ""]
    assert paris.status == "superseded" and "Paris" in paris.text
    assert paris.valid_to == datetime.fromisoformat(MAR) == berlin.valid_from
    assert paris.expired_at is not None and berlin.valid_to is None
    # both in the history of the chain, from either end
    for fid in (berlin.fact_id, paris.fact_id):
        events = [(h.event, h.old_text, h.new_text) for h in env.rt.facts.history(USER, fid)]
        assert events == [("ADD", None, paris.text), ("UPDATE", paris.text, berlin.text)]
    decided = env.rt.facts.history(USER, berlin.fact_id)[-1].decided_by
    assert decided == ("offline" if env.model is None else "claude-stub")
    # the CLI history command shows the same chain
    rows = env.cli_json("history", berlin.fact_id[:12], "--user", USER, "--json")
    assert [r["event"] for r in rows] == ["ADD", "UPDATE"]


def test_as_of_answers_what_we_believed_then(env: Env) -> None:
    env.episode(Say("I live in Paris.", JAN))
    env.episode(Say("I moved to Berlin.", MAR))
    before = env.cli_json("facts", "--user", USER, "--as-of", "2025-02-01", "--json")
    after = env.cli_json("facts", "--user", USER, "--as-of", "2025-03-02", "--json")
    assert [f["text"] for f in before] == [t for t in _texts(env, "Paris")]
    assert [f["text"] for f in after] == [t for t in _texts(env, "Berlin")]
    # the moment of the move belongs to the new value, not both
    at = env.cli_json("facts", "--user", USER, "--as-of", MAR, "--json")
    assert [f["text"] for f in at] == _texts(env, "Berlin")
    assert env.cli_json("facts", "--user", USER, "--as-of", "2024-12-31", "--json") == []
    assert datetime(2025, 2, 1, tzinfo=UTC) < datetime.fromisoformat(MAR)


def _texts(env: Env, word: str) -> list[str]:
    return [f.text for f in env.rt.facts.list(USER, include_inactive=True) if word in f.text]


def test_dog_died_is_deleted_and_still_readable_with_all(env: Env) -> None:
    env.episode(Say("I have a dog named Rex.", JAN), Say("I use Emacs.", JAN))
    env.episode(Say("Rex died last week.", MAR))
    assert env.merge_calls() == 1
    active = env.cli_json("facts", "--user", USER, "--json")
    assert [f["text"] for f in active] == ["User uses Emacs"]  # the other fact is untouched
    rows = env.cli_json("facts", "--user", USER, "--all", "--json")
    dog = [f for f in rows if "dog named Rex" in f["text"]]
    assert len(dog) == 1
    assert dog[0]["status"] == "deleted"
    assert dog[0]["valid_to"] is not None and dog[0]["expired_at"] is not None
    assert datetime.fromisoformat(dog[0]["valid_to"]) == datetime.fromisoformat(MAR)
    assert "vector" not in dog[0]
    events = [h.event for h in env.rt.facts.history(USER, dog[0]["fact_id"])]
    assert events == ["ADD", "DELETE"]


def test_a_later_word_in_the_same_episode_wins(env: Env) -> None:
    """Berlin, then Paris again within one episode: Paris is what stays active
    (the NOOP of the stored Paris row would have left Berlin active)."""
    env.episode(Say("I live in Paris.", JAN))
    later = "2025-03-01T09:05:00+00:00"
    env.episode(Say("I moved to Berlin.", MAR), Say("I live in Paris.", later))
    active = env.rt.facts.list(USER)
    assert [f.text for f in active] == ["User lives in Paris"]
    assert active[0].valid_from == datetime.fromisoformat(later)
    chain = [(h.event, h.decided_by) for h in env.rt.facts.history(USER, active[0].fact_id)]
    assert ("UPDATE", "rule") in chain  # the rule turned the NOOP into this UPDATE
    statuses = sorted(f.status for f in env.rt.facts.list(USER, include_inactive=True))
    assert statuses == ["active", "superseded", "superseded"]


# ---- an answer that names a fact that was not shown ---------------------------------


def _out_of_range(body: dict[str, Any]) -> dict[str, Any]:
    return {
        "decisions": [{"event": "UPDATE", "id": 7, "text": "User lives in Berlin", "new_index": 1}]
    }


def _fake_handler(messages: Any, response_model: Any, context: dict[str, Any]) -> Any:
    if response_model is MergeDecisions:
        return _out_of_range({})
    return response_model.offline_answer(context)


@pytest.mark.parametrize("kind", ["fake", "anthropic"])
def test_out_of_range_id_is_reasked_then_resolved_offline(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The offline provider never answers out of range, so the in-process
    variant uses the fake provider (the provider seam) with the same answer."""
    model: ScriptedModel | None = None
    stub: AnthropicStub | None = None
    if kind == "anthropic":
        model = ScriptedModel(extract=EXTRACT_SCRIPT, merge_override=_out_of_range)
        stub = AnthropicStub(default=lambda n: model.action(n)).start()
        model.stub = stub
        memory = memory_for("anthropic", tmp_path / "home", monkeypatch, stub=stub)
    else:
        memory = memory_for("offline", tmp_path / "home", monkeypatch)
        fake = FakeProvider(_fake_handler, retries=1)
        memory.rt.provider = fake
    try:
        env = Env(kind, memory, model, tmp_path)
        env.episode(Say("I live in Paris.", JAN))
        env.episode(Say("I moved to Berlin.", MAR))
    finally:
        if stub is not None:
            stub.stop()
    if model is not None:
        assert model.calls[MERGE] == 2  # asked, re-asked with the error, then given up
        reask = stub.requests[-1] if stub else {}
        assert "id 7 is not an existing fact" in json.dumps(reask)
    else:
        merge_asks = [c for c in fake.calls if "Existing facts:" in c[-1]["content"]
                      or any("Existing facts:" in m["content"] for m in c)]  # fmt: skip
        assert len(merge_asks) == 2
    rt = memory.rt
    update = [h for h in rt.facts.all_history(USER) if h.event != "ADD"]
    assert [(h.event, h.decided_by) for h in update] == [("UPDATE", "offline-fallback")]
    assert [f.text for f in rt.facts.list(USER)] == _texts_of(rt, "Berlin")
    assert len(rt.facts.list(USER, include_inactive=True)) == 2
    assert active_texts(rt) == _texts_of(rt, "Berlin")


def _texts_of(rt: Runtime, word: str) -> list[str]:
    return [f.text for f in rt.facts.list(USER) if word in f.text]
