"""Every call accounted per user (issues 28 and 30): a consolidate run over two
users records each user's share of its model calls in the ledger; the shares
add up to the run's own count; `episodic usage --json`, `GET /v1/usage` and the
memory browser's overview show the same; a run that asks nothing records
nothing; forgetting a user removes that user's rows and no one else's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from flows.consolidate import consolidate
from storage.ledger import Ledger
from tests.integration.api_support import api_client, new_key
from tests.integration.cli_support import cli, cli_home
from tests.integration.helpers import moving_turns

pytestmark = pytest.mark.usefixtures("prefect_harness")


def test_each_users_share_of_a_run_is_recorded_and_shown_everywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = cli_home(monkeypatch, tmp_path / "home")
    memory.add("ann", moving_turns("lisbon", 6))
    memory.add("bob", moving_turns("oslo", 3))
    run = consolidate(flush=True, memory=memory)
    assert isinstance(run, dict)
    total = run["llm"]["calls"]
    ann, bob = memory.usage("ann"), memory.usage("bob")
    assert ann.runs == bob.runs == 1 and ann.calls > 0 and bob.calls > 0
    assert ann.calls + bob.calls == total, (ann.calls, bob.calls, total)
    assert ann.recent[0].provider == "offline" and ann.recent[0].cost_usd == 0.0

    # the CLI's --json, the API and the browser say what the service says
    assert cli("usage", "--user", "ann", "--json") == ann.as_json()
    key = new_key(memory, "ann", ("read",))
    with api_client(memory, key) as http:
        got = http.get("/v1/usage")
        assert got.status_code == 200 and got.json() == ann.as_json()
        page = http.post("/ui/login", data={"key": key})
        assert page.status_code == 200 and page.url.path == "/ui/overview"
        shown = re.findall(r'<td class="num calls">(\d+)</td>', page.text)
        assert shown == [str(ann.calls)], shown

    # a run that asks nothing records nothing; a user's next run adds a row
    consolidate(flush=True, memory=memory)
    assert memory.usage("ann").runs == 1
    memory.add("ann", moving_turns("porto", 3), stream_id="s2")
    consolidate(user="ann", flush=True, memory=memory)
    again = memory.usage("ann")
    assert again.runs == 2 and again.calls > ann.calls
    assert memory.usage("bob") == bob  # bob's rows are bob's

    memory.forget("bob")
    assert Ledger(memory.rt.store).runs("bob") == []
    assert memory.usage("ann").runs == 2
