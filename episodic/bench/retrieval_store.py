"""A large synthetic store for the retrieval benchmark, written with the
project's own schemas, ids and indexes, built once under a
directory and reused (a `built.json` beside the tables marks it complete).

Texts: the 8,400 words of the public dialogues (../shared/data; made-up
words when the data is absent), ranked by frequency. Each user talks in 4 streams about a few
of 200 topics; a turn mixes common words, its stream's current topic and
background words, so BM25 has a real vocabulary to rank on. Vectors come from
the hash embedder (`hash-384`, the same one embeds the queries). Every stream
has a head, episodes of 10 to 40 turns, and each user 50 facts and 10
reflections, so every query of `search_memory` reads what it reads in use."""

from __future__ import annotations

import json
import re
import shutil
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from episodic.embed.hash import HashEmbedder
from episodic.models import Episode, Fact, Reflection, stable_id
from storage.codec import to_row, to_table
from storage.db import Store
from storage.rows import stream_key
from storage.schemas import schema
from storage.vectors import vector_key

DIM = 384
USERS = 100
STREAMS = 4
TOPICS = 200
TOPICS_PER_USER = 8
COMMON = 120  # the most frequent words: function words, chit-chat
TOPIC_WORDS = 30
NOW = datetime(2026, 11, 1, tzinfo=UTC)
SPEAKERS = ("Ana", "Ben", "Caro", "Dev", "Eli", "Fay", "Gus", "Hal")
MARK = "built.json"


def vocabulary(seed: int = 0) -> list[str]:
    """Distinct words by falling frequency: the dialogues' words, else made up."""
    try:
        from episodic.bench.corpus import dialogues

        counts: Counter[str] = Counter()
        for d in dialogues():
            for u in d:
                counts.update(re.findall(r"[a-z]{2,}", u.lower()))
        words = [w for w, _ in counts.most_common()]
        if len(words) >= COMMON + TOPICS * TOPIC_WORDS + 1000:
            return words[:20000]
    except FileNotFoundError:
        pass
    syl = [c + v for c in "bcdfghklmnprstvz" for v in "aeiou"]
    made = [a + b + c for a in syl for b in syl for c in ("", "n", "s")]
    np.random.default_rng(seed).shuffle(made)
    return made[:10000]


@dataclass(frozen=True)
class Words:
    common: list[str]
    topics: list[list[str]]  # TOPICS disjoint word lists
    background: list[str]

    @staticmethod
    def make(seed: int = 0) -> Words:
        words = vocabulary(seed)
        rng = np.random.default_rng(seed)
        mid = list(words[COMMON : COMMON + TOPICS * TOPIC_WORDS])
        rng.shuffle(mid)
        topics = [mid[i::TOPICS] for i in range(TOPICS)]
        return Words(words[:COMMON], topics, words[COMMON:])


def _zipf(rng: np.random.Generator, n: int, size: int) -> np.ndarray:
    """Indexes into a list of `n`, the first ones most likely (Zipf-like)."""
    return np.minimum((rng.pareto(1.1, size) * n / 8).astype(np.int64), n - 1)


def sentences(
    rng: np.random.Generator, w: Words, topics: np.ndarray, lengths: np.ndarray
) -> list[str]:
    """One text per (topic, length): 45% common words, 40% the topic's, 15%
    background, each Zipf-like within its list (drawn in bulk: 1M texts)."""
    total = int(lengths.sum())
    kind = rng.random(total)
    common = np.asarray(w.common, dtype=object)[_zipf(rng, len(w.common), total)]
    mat = np.asarray(w.topics, dtype=object)
    topical = mat[np.repeat(topics, lengths), _zipf(rng, TOPIC_WORDS, total)]
    back = np.asarray(w.background, dtype=object)[_zipf(rng, len(w.background), total)]
    words = np.where(kind < 0.45, common, np.where(kind < 0.85, topical, back))
    ends = np.cumsum(lengths)
    return [" ".join(words[e - n : e]) for e, n in zip(ends, lengths, strict=True)]


def sentence(rng: np.random.Generator, w: Words, topic: int, length: int) -> str:
    return sentences(rng, w, np.asarray([topic]), np.asarray([length]))[0]


def user_topics(user: int, seed: int = 0) -> list[int]:
    rng = np.random.default_rng([seed, user])
    return [int(t) for t in rng.choice(TOPICS, TOPICS_PER_USER, replace=False)]


def user_id(u: int) -> str:
    return f"user-{u:03d}"


def _user_rows(
    u: int, n: int, w: Words, emb: HashEmbedder, seed: int
) -> dict[str, list[dict[str, Any]] | pa.Table]:
    rng = np.random.default_rng([seed, u, 1])
    uid = user_id(u)
    mine = user_topics(u, seed)
    names = [str(x) for x in rng.choice(SPEAKERS, 2, replace=False)]
    raw: dict[str, list[Any]] = {c: [] for c in schema("raw_turns", DIM).names}
    heads, episodes = [], []
    for s in range(STREAMS):
        sid = f"s{s}"
        m = n // STREAMS + (1 if s < n % STREAMS else 0)
        gaps = rng.uniform(20, 90, m)
        gaps[rng.random(m) < 0.03] = rng.uniform(3600, 8 * 3600)  # a new session
        ts0 = NOW - timedelta(seconds=float(gaps.sum()))
        times = [ts0 + timedelta(seconds=float(x)) for x in np.cumsum(gaps)]
        topics = np.empty(m, dtype=np.int64)
        at = 0
        while at < m:  # the stream's topic changes every 10 to 60 turns
            run = int(rng.integers(10, 60))
            topics[at : at + run] = mine[int(rng.integers(len(mine)))]
            at += run
        texts = sentences(rng, w, topics, rng.integers(6, 21, m))
        first = len(raw["turn_id"])
        for seq in range(m):
            text = texts[seq]
            role = "user" if seq % 2 == 0 else "assistant"
            speaker = names[seq % 2]
            tid = stable_id("turn", uid, sid, seq)
            for col, v in (
                ("turn_id", tid),
                ("user_id", uid),
                ("stream_id", sid),
                ("seq", seq),
                ("role", role),
                ("kind", "other"),
                ("text", text),
                ("event_ts", times[seq].replace(tzinfo=None)),
                ("ingest_ts", times[seq].replace(tzinfo=None)),
                ("source", "bench"),
                ("position", f"{sid}:{seq}"),
                ("meta", json.dumps({"speaker": speaker})),
            ):
                raw[col].append(v)
        heads.append(
            {
                "key": stream_key(uid, sid),
                "user_id": uid,
                "stream_id": sid,
                "head_seq": m - 1,
                "n_turns": m,
                "last_event_ts": times[-1].replace(tzinfo=None),
                "updated_at": times[-1].replace(tzinfo=None),
            }
        )
        episodes += _episodes(rng, uid, sid, raw, first, m)
    vecs = emb.embed(raw["text"])
    vec_arr = pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), DIM)
    tv = pa.Table.from_arrays(
        [
            pa.array([vector_key(t, emb.name) for t in raw["turn_id"]]),
            pa.array(raw["turn_id"]),
            pa.array([uid] * len(raw["turn_id"])),
            pa.array([emb.name] * len(raw["turn_id"])),
            vec_arr,
        ],
        schema=schema("turn_vectors", DIM),
    )
    for e in episodes:  # centroid: the mean of the episode's turn vectors
        c = vecs[e["_lo"] : e["_hi"]].mean(axis=0)
        e["centroid"] = [float(x) for x in c / (np.linalg.norm(c) or 1.0)]
    ep_ids = [e["episode_id"] for e in episodes]
    return {
        "raw_turns": pa.Table.from_pydict(raw, schema=schema("raw_turns", DIM)),
        "turn_vectors": tv,
        "streams": heads,
        "episodes": [
            to_row(Episode(**{k: v for k, v in e.items() if k[0] != "_"}), DIM) for e in episodes
        ],
        **_memory(rng, uid, mine, w, emb, ep_ids),
    }


def _episodes(
    rng: np.random.Generator, uid: str, sid: str, raw: dict[str, list[Any]], first: int, m: int
) -> list[dict[str, Any]]:
    out = []
    lo = 0
    while lo < m:
        hi = min(m, lo + int(rng.integers(10, 41)))
        a, b = first + lo, first + hi
        texts = raw["text"][a:b]
        out.append(
            {
                "episode_id": Episode.make_id(uid, sid, lo),
                "user_id": uid,
                "stream_id": sid,
                "first_seq": lo,
                "last_seq": hi - 1,
                "turn_ids": raw["turn_id"][a:b],
                "n_turns": hi - lo,
                "started_at": raw["event_ts"][a].replace(tzinfo=UTC),
                "ended_at": raw["event_ts"][b - 1].replace(tzinfo=UTC),
                "closed_at": raw["event_ts"][b - 1].replace(tzinfo=UTC),
                "boundary_reason": "semantic_shift",
                "boundary_score": 0.5,
                "summary": texts[0],
                "text": "\n".join(texts),
                "salience": int(rng.integers(0, 11)),
                "salience_source": "offline",
                "_lo": a,
                "_hi": b,
            }
        )
        lo = hi
    return out


def _sentences_on(
    rng: np.random.Generator, w: Words, mine: list[int], n: int, length: int
) -> list[str]:
    """`n` sentences of `length` words, on the user's topics in turn."""
    topics = np.asarray([mine[i % len(mine)] for i in range(n)])
    return sentences(rng, w, topics, np.full(n, length))


def _memory(
    rng: np.random.Generator,
    uid: str,
    mine: list[int],
    w: Words,
    emb: HashEmbedder,
    eps: list[str],
) -> dict[str, list[dict[str, Any]]]:
    """The user's 50 facts and 10 reflections, each citing one of the user's episodes."""
    fact_texts = [f"{uid} {t}" for t in _sentences_on(rng, w, mine, 50, 8)]
    facts = []
    for i, (t, v) in enumerate(zip(fact_texts, emb.embed(fact_texts), strict=True)):
        at = NOW - timedelta(days=float(rng.uniform(0, 60)))
        f = Fact(
            fact_id=stable_id("fact", uid, i),
            user_id=uid,
            text=t,
            vector=[float(x) for x in v],
            valid_from=at,
            created_at=at,
            source_episode_ids=[eps[int(rng.integers(len(eps)))]],
            importance=float(rng.integers(1, 10)),
        )
        facts.append(to_row(f, DIM, norm=t.lower()))
    texts = _sentences_on(rng, w, mine, 10, 14)
    reflections = [
        to_row(
            Reflection(
                reflection_id=stable_id("reflection", uid, i),
                user_id=uid,
                text=t,
                vector=[float(x) for x in v],
                evidence_episode_ids=[eps[int(rng.integers(len(eps)))]],
                importance=float(rng.integers(1, 10)),
                created_at=NOW - timedelta(days=float(rng.uniform(0, 60))),
            ),
            DIM,
        )
        for i, (t, v) in enumerate(zip(texts, emb.embed(texts), strict=True))
    ]
    return {"facts": facts, "reflections": reflections}


def build(root: Path, n: int, seed: int = 0, log: Any = None) -> dict[str, Any]:
    """The store of `n` turns under `root` (USERS users), reused when a
    complete one is there; returns the build record (seconds, sizes)."""
    mark = root / MARK
    if mark.exists():
        rec: dict[str, Any] = json.loads(mark.read_text(encoding="utf-8"))
        if rec.get("items") == n and rec.get("seed") == seed:
            return {**rec, "reused": True}
    shutil.rmtree(root, ignore_errors=True)
    store = Store(str(root / "lancedb"), dim=DIM)
    w = Words.make(seed)
    emb = HashEmbedder(DIM)
    t0 = time.perf_counter()
    pending: dict[str, list[Any]] = {}
    per = n // USERS
    step = max(1, 100_000 // max(1, per))  # users per write: about 100k turns
    for u in range(USERS):
        for name, part in _user_rows(u, per, w, emb, seed).items():
            pending.setdefault(name, []).append(part)
        if (u + 1) % step == 0 or u == USERS - 1:
            _write(store, pending)
            pending = {}
            if log:
                log(f"users 0..{u} written, {time.perf_counter() - t0:.0f} s")
    write_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    made = store.ensure_indexes()
    for name in store.table_names():
        store.table(name).optimize(cleanup_older_than=timedelta(seconds=1))
    index_s = time.perf_counter() - t1
    rec = {
        "items": n,
        "users": USERS,
        "seed": seed,
        "write_s": round(write_s, 1),
        "index_s": round(index_s, 1),
        "indexes": made,
        "built_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }
    mark.write_text(json.dumps(rec, indent=1), encoding="utf-8")
    return {**rec, "reused": False}


def _write(store: Store, pending: dict[str, list[Any]]) -> None:
    for name, parts in pending.items():
        if isinstance(parts[0], pa.Table):
            data = pa.concat_tables(parts)
        else:
            data = to_table(name, [r for p in parts for r in p], DIM)
        store.table(name).add(data)


def disk_mb(root: Path, skip: str = "") -> float:
    """MiB of the files under `root`, those under a directory named `skip` left out."""
    files = (p for p in root.rglob("*") if p.is_file() and skip not in p.relative_to(root).parts)
    return round(sum(p.stat().st_size for p in files) / 2**20, 1)
