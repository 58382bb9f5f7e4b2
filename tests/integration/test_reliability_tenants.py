"""Tenant isolation: every read and write path, run as one user, neither reads
nor changes another user's rows.

Nine users share one store; their ids carry quotes, `%`, `_`, SQL keywords,
unicode and 2,000 characters (longer than a turn's user id may be: its
ingest is refused and quarantined, and every read finds nothing). Each user's
text carries a token no other user has. For each user in turn, the command
line runs ingest, episodes, facts, history, search, status and plot as that
user, and the consolidate, reflect and maintain flows (maintain for two of
them) run for that user; then

- a full scan of every table must show every other user's rows
  byte-identical to the scan taken before (no write crossed over);
- no output may contain another user's token or row id (no read crossed over).
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.integration.reliability_support import (
    HOSTILE_IDS,
    fact_turns,
    record,
    rows_of_others,
    use_home,
    write_jsonl,
)

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_harness")]

USERS = ["victim", *HOSTILE_IDS]
MAINTAIN_AS = {"victim", "x'; DROP TABLE raw_turns; --"}


def token(i: int) -> str:
    return f"tok{i}q"  # no token is a substring of another (i < 10)


def invoke(args: list[str]) -> tuple[int, str]:
    from episodic.adapters.cli.main import app

    res = CliRunner().invoke(app, args)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise AssertionError(f"{args[0]} raised {res.exception!r}\n{res.output[-2000:]}")
    return res.exit_code, res.output


def as_json(out: str) -> Any:
    start = min(i for i in (out.find("["), out.find("{")) if i >= 0)
    return json.loads(out[start:])


def listing(run: Any, args: list[str]) -> Any:
    """A user-scoped read as JSON (every user here sent input: each is known)."""
    return as_json(run(args))


def foreign(rt: Any, me: str) -> set[str]:
    """Strings that must never appear in what `me` is shown."""
    out: set[str] = set()
    for i, u in enumerate(USERS):
        if u == me:
            continue
        out.add(token(i))
        out.update(e.episode_id for e in rt.episodes.list(u))
        out.update(f.fact_id for f in rt.facts.list(u, include_inactive=True))
        out.update(r.reflection_id for r in rt.reflections.list(u, include_archived=True))
    return out


class Actor:
    """Runs commands as one user and keeps everything they printed."""

    def __init__(self, user: str, memory: Any) -> None:
        self.user, self.memory = user, memory
        self.outputs: list[str] = []
        self.commands = 0

    def flow(self, name: str, **params: Any) -> Any:
        # the flows the CLI commands call, called directly: Prefect's console
        # log handler and typer's CliRunner do not share stdout well
        self.commands += 1
        mod = importlib.import_module(f"flows.{name}")
        res = getattr(mod, name)(**params, memory=self.memory)
        self.outputs.append(json.dumps(res, default=str, ensure_ascii=False))
        return res

    def run(self, args: list[str], ok: tuple[int, ...] = (0,)) -> str:
        self.commands += 1
        code, out = invoke(args)
        assert code in ok, f"{args[:1]} as {self.user[:30]!r}: exit {code}\n{out[-2000:]}"
        self.outputs.append(out)
        return out


def unattributed(before: list[str], after: list[str]) -> bool:
    """Only new quarantine rows that carry no user (an id too long to keep)
    were added; nothing that was there changed."""
    added = set(after) - set(before)
    return set(before) <= set(after) and all(json.loads(r)["user_id"] == "" for r in added)


def test_no_path_crosses_users(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    memory = use_home(monkeypatch, tmp_path / "home", reflection_threshold=5)
    rt = memory.rt
    files = {}
    for i, u in enumerate(USERS):
        turns = fact_turns("placeholder", "s", episodes=4, marker=token(i), offset=i)
        half = len(turns) // 2
        files[u] = (
            write_jsonl(tmp_path / f"a{i}.jsonl", turns[:half]),
            write_jsonl(tmp_path / f"b{i}.jsonl", turns[half:]),
        )
        code, out = invoke(["ingest", str(files[u][0]), "--user", u, "--json"])
        assert code == (1 if len(u) > 512 else 0), out
    assert rt.raw.count("L" * 2000) == 0
    assert len(rt.raw.rejected()) == len(fact_turns("x", "s", episodes=4)) // 2

    probe = " ".join(token(i) for i in range(len(USERS))) + " dog Rex Berlin vim"
    leaks = writes_crossed = commands = 0
    for i, u in enumerate(USERS):
        before = rows_of_others(rt.store, u)
        actor = Actor(u, memory)
        flow, run, outputs = actor.flow, actor.run, actor.outputs

        run(["ingest", str(files[u][1]), "--user", u, "--json"], ok=(0, 1))
        summary = flow("consolidate", user=u, flush=True)
        assert summary["users"] == ([u] if len(u) <= 512 else [])
        # a longer id is refused at ingest: no turns, only its input quarantined,
        # which makes it a user whose memory is empty (`episodic rejected` lists it)
        stored = len(u) <= 512
        eps = listing(run, ["episodes", "--user", u, "--json"])
        facts = listing(run, ["facts", "--user", u, "--all", "--json"])
        if stored:
            assert eps and facts, f"{u[:30]!r} should have episodes and facts"
        for f in facts[:3]:
            hist = as_json(run(["history", f["fact_id"], "--user", u, "--json"]))
            assert hist and all(h["fact_id"] == f["fact_id"] for h in hist)
            assert {h["episode_id"] for h in hist} <= {e["episode_id"] for e in eps}
        # another user's fact id, asked for as this user: refused as a missing
        # one (the refusal names the id asked for, so it is kept out of outputs)
        other = USERS[0] if u != USERS[0] else USERS[1]
        for f in rt.facts.list(other, include_inactive=True)[:2]:
            actor.commands += 1
            code, out = invoke(["history", f.fact_id, "--user", u, "--json"])
            assert code == 1 and "no fact" in out, out
            assert f.text not in out
        hits = listing(run, ["search", probe, "--user", u, "--json", "-k", "50"])
        mine = (
            {e.episode_id for e in rt.episodes.list(u)}
            | {f.fact_id for f in rt.facts.list(u, include_inactive=True)}
            | {r.reflection_id for r in rt.reflections.list(u, include_archived=True)}
            | {
                t.turn_id
                for h in rt.raw.streams(u)
                for t in rt.raw.read(u, h.stream_id, -1, h.head_seq)
            }
        )
        assert {h["item_id"] for h in hits} <= mine
        assert {t["turn_id"] for h in hits for t in h["turns"]} <= mine
        flow("reflect", user=u, force=True)
        status = listing(run, ["status", "--user", u, "--json"])
        assert all(s["user_id"] == u for s in status)
        if stored:
            png = str(tmp_path / f"plot{i}.png")
            drawn = as_json(run(["plot", "--user", u, "--out", png, "--json"]))
            assert drawn["turns"] == rt.raw.count(u) and drawn["path"] == png
        else:
            said = run(["plot", "--user", u], ok=(2,))  # no turns, no picture
            assert said.startswith("error: user ") and said.count("\n") == 1
        if u in MAINTAIN_AS:
            flow("maintain", user=u)

        commands += actor.commands
        after = rows_of_others(rt.store, u)
        changed = [
            t for t in before if before[t] != after[t] and not unattributed(before[t], after[t])
        ]
        writes_crossed += len(changed)
        assert not changed, f"acting as {u[:30]!r} changed other users' rows in {changed}"
        seen = "\n".join(outputs)
        leaked = sorted(s for s in foreign(rt, u) if s in seen)
        leaks += len(leaked)
        assert not leaked, f"acting as {u[:30]!r} showed other users' {leaked[:5]}"

    # and nobody's memories were lost on the way
    for i, u in enumerate(USERS):
        if len(u) <= 512:
            assert rt.raw.count(u) == len(fact_turns("x", "s", episodes=4))
            assert all(token(i) in e.text for e in rt.episodes.list(u) if "part" in e.text)
    record(
        "tenants",
        users=len(USERS),
        commands=commands,
        cross_tenant_reads=leaks,
        cross_tenant_writes=writes_crossed,
    )
