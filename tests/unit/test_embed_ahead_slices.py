"""How embedding ahead cuts a group's new turns into reads."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from episodic.service.embed_ahead import slices


def test_short_streams_share_a_read_and_a_long_one_takes_several() -> None:
    got = list(slices({"a": (-1, 2), "b": (4, 7), "c": (-1, 9)}, batch=5))
    assert got == [
        {"a": (-1, 2), "b": (4, 6)},
        {"b": (6, 7), "c": (-1, 3)},
        {"c": (3, 8)},
        {"c": (8, 9)},
    ]


def test_nothing_new_is_no_read() -> None:
    assert list(slices({"a": (3, 3), "b": (5, 2)}, batch=4)) == []


@given(
    st.dictionaries(
        st.text(min_size=1, max_size=3),
        st.tuples(st.integers(-1, 50), st.integers(0, 40)),
        max_size=8,
    ),
    st.integers(1, 30),
)
def test_every_new_seq_once_and_no_read_over_the_batch(
    spans: dict[str, tuple[int, int]], batch: int
) -> None:
    seen: list[tuple[str, int]] = []
    for wave in slices(spans, batch):
        assert 0 < sum(hi - lo for lo, hi in wave.values()) <= batch
        seen += [(s, q) for s, (lo, hi) in wave.items() for q in range(lo + 1, hi + 1)]
    want = [(s, q) for s, (lo, hi) in spans.items() for q in range(lo + 1, hi + 1)]
    assert sorted(seen) == sorted(want) and len(seen) == len(set(seen))
