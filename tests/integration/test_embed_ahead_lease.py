"""Embedding ahead writes a user's vectors only under that user's lease, and
never waits for it: a forget in flight holds it, and must not find vectors of
its turns written back after it."""

from __future__ import annotations

from pathlib import Path

from episodic.service.embed_ahead import EmbedAhead
from episodic.service.ingest import ingest_file
from storage.lease import user_lease
from tests.integration.helpers import make_memory, synthetic_stream, write_jsonl


def test_a_held_user_is_skipped_and_a_free_one_embedded(tmp_path: Path) -> None:
    m = make_memory(tmp_path / "home")
    rt = m.rt
    turns = synthetic_stream(user="u1", n_per_topic=5)
    ingest_file(rt.raw, write_jsonl(tmp_path / "u1.jsonl", turns), "jsonl")
    heads = [(h.stream_id, h.head_seq) for h in rt.raw.streams("u1")]
    vectors = rt.store.table("turn_vectors")
    with EmbedAhead(rt) as ahead:
        with user_lease(rt.store.uri, "u1"):  # as a forget would hold it
            ahead.start([("u1", heads)])
            ahead.wait()
        assert ahead.embedded == 0 and vectors.count_rows() == 0
        ahead.start([("u1", heads)])
        ahead.wait()
    assert ahead.embedded == len(turns) == vectors.count_rows()
