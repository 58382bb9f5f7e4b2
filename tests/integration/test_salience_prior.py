"""The salience prior reads four columns of a user's episodes, and gets the
centroids reading whole rows would have given."""

from __future__ import annotations

from pathlib import Path

from tests.integration.helpers import make_memory
from tests.integration.memory_items import episode


def test_scored_centroids_are_those_of_the_whole_rows(tmp_path: Path) -> None:
    m = make_memory(tmp_path / "home")
    rt = m.rt
    eps = [episode(rt, "u1", f"topic {i} about {w}", seq=2 * i) for i, w in enumerate("abcdefgh")]
    eps[2] = eps[2].model_copy(update={"salience_source": ""})  # not scored yet
    eps[5] = eps[5].model_copy(update={"centroid": [0.0] * rt.embedder.dim})  # no centroid
    other = episode(rt, "u2", "someone else's topic", seq=0)
    rt.episodes.write([*reversed(eps), other])
    for limit in (3, 100):
        want = [
            e.centroid
            for e in rt.episodes.list("u1", limit=limit)
            if e.salience_source and e.centroid and any(e.centroid)
        ]
        got = rt.episodes.scored_centroids("u1", limit)
        assert len(got) == len(want) and (limit < 8 or len(got) == 6)
        assert [[round(x, 6) for x in c] for c in got] == [[round(x, 6) for x in c] for c in want]
