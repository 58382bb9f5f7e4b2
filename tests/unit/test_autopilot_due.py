"""When the autopilot consolidates a user: debounced after their last write,
but never later than the cap after the first write it has not read."""

from hypothesis import given
from hypothesis import strategies as st

from episodic.adapters.autopilot import due_at


def test_a_pause_runs_at_the_debounce() -> None:
    assert due_at(first=0.0, last=10.0, delay_s=30.0, max_wait_s=300.0) == 40.0


def test_a_stream_that_never_pauses_runs_at_the_cap() -> None:
    # the 100th write of one every 5 s: the debounce alone says 525 s
    assert due_at(first=0.0, last=495.0, delay_s=30.0, max_wait_s=300.0) == 300.0


def test_no_cap_is_the_debounce_alone() -> None:
    assert due_at(first=0.0, last=495.0, delay_s=30.0, max_wait_s=0.0) == 525.0


@given(
    st.floats(0, 1e6),
    st.floats(0, 1e4),
    st.floats(0, 1e3),
    st.floats(0.001, 1e4),
)
def test_never_later_than_either_bound(first: float, gap: float, delay: float, cap: float) -> None:
    last = first + gap
    due = due_at(first, last, delay, cap)
    assert due <= last + delay and due <= first + cap
    assert due == last + delay or due == first + cap
