"""The lag alert's decision and event, and deployments/automations.yaml built
into Prefect automations (no server: the schema check is Prefect's own)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import cast
from uuid import uuid4

import pytest

from episodic.alerts import LAG_EVENT, MAX_STREAMS, StreamLag, lag_event, lagging
from episodic.errors import ConfigError
from episodic.models import user_tag
from tasks.automations import build, spec

ROOT = Path(__file__).resolve().parents[2]


def _lag(sid: str, turns: int) -> StreamLag:
    return StreamLag("alice", sid, turns, watermark=9, head_seq=9 + turns)


def test_lagging_is_strictly_above_the_threshold_and_zero_is_off() -> None:
    lags = [_lag("a", 4), _lag("b", 5), _lag("c", 6), _lag("d", 0)]
    assert [x.stream_id for x in lagging(lags, 5)] == ["c"]
    assert [x.stream_id for x in lagging(lags, 3)] == ["c", "b", "a"]  # most behind first
    assert [x.stream_id for x in lagging(lags, 3, limit=2)] == ["c", "b"]
    many = [_lag(f"s{i:03}", 10 + i) for i in range(100)]
    assert len(lagging(many, 5)) == MAX_STREAMS
    assert lagging(lags, 0) == []
    with pytest.raises(ValueError, match="threshold"):
        lagging(lags, -1)


def test_lag_event_names_the_stream_and_carries_the_numbers() -> None:
    ev = lag_event(_lag("chat-1", 42), threshold=10, oldest_age_s=61.5)
    assert ev["event"] == LAG_EVENT
    tag = user_tag("alice")  # Prefect keeps events where a forget cannot reach
    assert ev["resource"]["prefect.resource.id"] == f"episodic.stream.{tag}.chat-1"
    assert ev["resource"]["episodic.user"] == tag
    assert "alice" not in str(ev)
    assert ev["resource"]["episodic.stream"] == "chat-1"
    assert ev["payload"] == {
        "unprocessed_turns": 42,
        "threshold": 10,
        "watermark": 9,
        "head_seq": 51,
        "oldest_unprocessed_age_s": 61.5,
    }


def test_the_file_builds_into_automations_notifying_the_block() -> None:
    block = uuid4()
    notifying = {"episodic-flow-run-failed", "episodic-stream-lagging"}
    autos = build(spec(), block)
    by_name = {a.name: a for a in autos}
    assert set(by_name) == notifying | {"episodic-crash-zombie-runs"}
    for a in (by_name[n] for n in notifying):
        assert a.enabled
        assert [x.type for x in a.actions] == ["send-notification"]
        assert all(getattr(x, "block_document_id", None) == block for x in a.actions)
    failed = by_name["episodic-flow-run-failed"].trigger.model_dump()
    assert failed["expect"] == {"prefect.flow-run.Failed", "prefect.flow-run.Crashed"}
    assert failed["posture"] == "Reactive"
    lag = by_name["episodic-stream-lagging"].trigger.model_dump()
    assert lag["expect"] == {LAG_EVENT}


def _flow_names() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "flows").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "flow":
                names |= {
                    cast(str, k.value.value)  # a flow name is a string literal
                    for k in node.keywords
                    if k.arg == "name" and isinstance(k.value, ast.Constant)
                }
    return names


def test_the_failure_alert_covers_every_episodic_flow() -> None:
    trigger = next(a for a in spec()["automations"] if a["name"] == "episodic-flow-run-failed")
    covered = set(trigger["trigger"]["match_related"]["prefect.resource.name"])
    assert _flow_names() == covered == {"consolidate", "reflect", "maintain", "ingest"}


def test_a_bad_automations_file_is_a_config_error(tmp_path: Path) -> None:
    bad = tmp_path / "a.yaml"
    bad.write_text("automations:\n  - name: x\n    trigger: {type: nonsense}\n    actions: []\n")
    with pytest.raises(ConfigError, match="x"):
        build(spec(bad), uuid4())
    bad.write_text("just: text\n")
    with pytest.raises(ConfigError, match="automations"):
        spec(bad)


def test_the_zombie_run_automation_needs_no_block_and_the_alerts_do() -> None:
    from prefect.client.schemas.objects import StateType

    (zombies,) = build(spec(), None, names={"episodic-crash-zombie-runs"})
    flows = zombies.trigger.model_dump()["match_related"]["prefect.resource.name"]
    assert set(flows) == _flow_names()
    (action,) = zombies.actions
    assert getattr(action, "state", None) == StateType.CRASHED
    assert zombies.trigger.posture.value == "Proactive"  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match="notification block"):
        build(spec(), None)
