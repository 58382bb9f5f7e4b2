"""The command line as a face of the one memory service: what users saw fixed.

- an unknown user is refused alike by every user-scoped command: exit 1,
  one `error:` line, nothing on stdout (search answered `[]`, plot exit 2);
- `episode` takes the short id `episodes` and `search` print;
- `--json` is the service's views (a turn hit carries its own `seq`);
- tables print user text as text: `#[derive(Parser)]` stayed `#` (rich
  markup), and the search table's turn column shows the hit's own seq.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from episodic.adapters.embedded import Memory
from episodic.service.segment import poll_stream
from tests.integration.api_support import api_client, new_key, run_cli
from tests.integration.cli_support import cli, cli_home, refused
from tests.integration.helpers import synthetic_stream, write_jsonl

RUST = "#[derive(Parser)] struct Cli, the clap attribute for the rust tool"
TAGGED = "use [bold]clap[/bold] with the derive feature, the rust tool's parser"


def _consolidated(m: Memory, tmp_path: Path, user: str = "u1") -> None:
    """A stream of `user` ingested through the CLI and segmented (no Prefect)."""
    turns = synthetic_stream(user=user)
    turns[5]["text"], turns[6]["text"] = RUST, TAGGED
    cli("ingest", str(write_jsonl(tmp_path / f"{user}.jsonl", turns)), "--json")
    for h in m.rt.raw.streams(user):
        poll_stream(m.rt, user, h.stream_id, head_seq=h.head_seq, flush=True)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Memory:
    m = cli_home(monkeypatch, tmp_path / "home")
    _consolidated(m, tmp_path)
    return m


def test_an_unknown_user_is_refused_alike_by_every_user_scoped_command(
    home: Memory, tmp_path: Path
) -> None:
    fact = "f0"
    for args in (
        ["episodes"],
        ["episode", home.episodes("u1")[0].episode_id],
        ["facts"],
        ["facts", "--all"],
        ["history", fact],
        ["invalidate", fact],
        ["restore", fact],
        ["reword", fact, "new text"],
        ["search", "deploy"],
        ["reflections"],
        ["status"],
        ["doctor"],
        ["rejected"],
        ["plot", "--out", str(tmp_path / "p.png")],
        ["export", "--out", str(tmp_path / "x")],
        ["consolidate"],
        ["reflect"],
        ["maintain"],
    ):
        line = refused(*args, "--user", "nobody", "--json")
        assert line.startswith("error: no user 'nobody'"), (args, line)
    assert not (tmp_path / "x").exists() and not (tmp_path / "p.png").exists()
    # the same commands answer for the user who is there
    assert cli("search", "deploy", "--user", "u1", "--json")
    assert cli("status", "--user", "u1", "--json")[0]["user_id"] == "u1"


def test_a_bad_option_value_is_one_error_line(home: Memory) -> None:
    """Click's usage errors (a value of the wrong type, an unknown option or
    command) say so as every refusal does: exit 2, one `error:` line naming
    the option and where its help is, nothing on stdout."""
    for args, said in (
        (["facts", "--user", "u1", "--as-of", "notadate"], "Invalid value for '--as-of'"),
        (["search", "deploy", "--user", "u1", "-k", "abc"], "Invalid value for '-k'"),
        (["episodes", "--user", "u1", "--colour"], "No such option: --colour"),
        (["nosuch"], "No such command 'nosuch'"),
    ):
        line = refused(*args, code=2)
        assert said in line and line.endswith("--help`)"), (args, line)
    # an empty query or no kind: refused alike here, in Python and over HTTP
    assert refused("search", " ", "--user", "u1", code=2) == "error: the query is empty"
    line = refused("search", "deploy", "--user", "u1", "--kinds", ",", code=2)
    assert line.startswith("error: no kind asked for")
    with pytest.raises(ValueError, match="query is empty"):
        home.search("u1", "  ")
    with api_client(home, new_key(home, "u1")) as c:
        for params in ({"q": " "}, {"q": "deploy", "kinds": ""}):
            r = c.get("/v1/search", params=params)
            assert r.status_code == 400, (params, r.text)


def test_episode_takes_the_short_ids_episodes_and_search_print(home: Memory) -> None:
    listed = cli("episodes", "--user", "u1", "--json")
    assert listed == [e.as_json() for e in home.episodes("u1")]  # the service's view
    for e in listed:
        shown = cli("episode", e["episode_id"][:12], "--user", "u1", "--json")
        assert shown["episode_id"] == e["episode_id"]
        assert [t["seq"] for t in shown["turns"]] == list(range(e["first_seq"], e["last_seq"] + 1))
    hits = cli("search", "helm staging", "--user", "u1", "--json")
    hit = next(h for h in hits if h["kind"] == "turn" and h["episode_id"])
    shown = cli("episode", hit["episode_id"][:12], "--user", "u1", "--json")
    assert hit["item_id"] in {t["turn_id"] for t in shown["turns"]}
    # a prefix two episodes share, or one of no episode, is refused like an unknown id
    assert refused("episode", "", "--user", "u1", "--json").startswith("error: no episode")
    assert refused("episode", "zz", "--user", "u1").startswith("error: no episode 'zz'")


def test_a_turn_hit_carries_its_own_seq(home: Memory) -> None:
    hits = cli("search", "derive Parser rust clap", "--user", "u1", "-k", "5", "--json")
    turns = [h for h in hits if h["kind"] == "turn"]
    assert turns
    seqs = {t.turn_id: t.seq for t in home.rt.raw.read("u1", "s1", -1, 10_000)}
    for h in turns:
        assert h["seq"] == seqs[h["item_id"]]
        assert all(t["seq"] == h["seq"] for t in h["turns"] if t["turn_id"] == h["item_id"])
    assert all(h["seq"] is None for h in hits if h["kind"] != "turn")


def _row(table: str, needle: str) -> list[str]:
    """The cells of the table row holding `needle`."""
    line = next(x for x in table.splitlines() if needle in x)
    return [c.strip() for c in line.strip().strip("│").split("│")]


def test_tables_print_brackets_and_the_hit_seq(
    home: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "220")  # the child's terminal width: whole rows
    out = run_cli(tmp_path / "home", "search", "derive Parser rust clap", "--user", "u1")
    assert out.returncode == 0, out.stderr
    seqs = {t.text: t.seq for t in home.rt.raw.read("u1", "s1", -1, 10_000)}
    for text in (RUST, TAGGED):
        cells = _row(out.stdout, text[:30])
        assert cells[1] == "turn" and text[:60] in cells[-1], cells
        assert cells[5] == str(seqs[text]), cells  # its own seq, not its neighbours'
    out = run_cli(tmp_path / "home", "episodes", "--user", "u1")
    assert out.returncode == 0, out.stderr
    short = [e.episode_id[:12] for e in home.episodes("u1")]
    assert short == [line.split("│")[1].strip() for line in out.stdout.splitlines()
                     if line.startswith("│")]  # fmt: skip
    (ep,) = [e for e in home.episodes("u1") if e.first_seq <= seqs[RUST] <= e.last_seq]
    out = run_cli(tmp_path / "home", "episode", ep.episode_id[:12], "--user", "u1")
    assert out.returncode == 0, out.stderr
    turn_id = next(t.turn_id for t in home.episode("u1", ep.episode_id).turns if t.text == RUST)
    assert f"{seqs[RUST]} {turn_id[:12]} assistant: {RUST}" in out.stdout  # turn 5, its short id
