"""The group commit (storage/group.py): concurrent submitters share commits,
each gets its own result, and a failure reaches every waiter of its group."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from storage.group import GroupCommit


def test_concurrent_submitters_share_commits_and_get_their_own_results() -> None:
    entered, gate = threading.Event(), threading.Event()
    groups: list[list[int]] = []

    def commit(items: Sequence[int]) -> list[int]:
        entered.set()
        gate.wait(10)  # hold the first group so the others queue behind it
        groups.append(list(items))
        return [i * 10 for i in items]

    group: GroupCommit[int, int] = GroupCommit(commit, max_size=100)
    results: dict[int, int] = {}

    def send(i: int) -> None:
        results[i] = group.submit(i)

    first = threading.Thread(target=send, args=(0,))
    first.start()
    assert entered.wait(10)
    rest = [threading.Thread(target=send, args=(i,)) for i in range(1, 20)]
    for t in rest:
        t.start()
    for _ in range(1000):  # until the 19 wait behind the first commit
        with group._cv:
            if len(group._queue) == 19:
                break
        threading.Event().wait(0.01)
    gate.set()
    for t in [first, *rest]:
        t.join(10)
    assert results == {i: i * 10 for i in range(20)}
    assert groups[0] == [0] and sorted(groups[1]) == list(range(1, 20))
    assert group.commits == 2


def test_a_failed_commit_raises_in_every_submitter_of_its_group() -> None:
    def commit(items: Sequence[str]) -> list[None]:
        raise OSError("disk full")

    group: GroupCommit[str, None] = GroupCommit(commit, max_size=10)
    with pytest.raises(OSError, match="disk full"):
        group.submit("a")
    assert group.commits == 0


def test_a_commit_that_drops_results_fails_every_submitter_instead_of_hanging() -> None:
    group: GroupCommit[str, int] = GroupCommit(lambda items: [], max_size=10)
    errors: list[BaseException] = []

    def send(x: str) -> None:
        try:
            group.submit(x)
        except RuntimeError as e:
            errors.append(e)

    threads = [threading.Thread(target=send, args=(x,)) for x in "abc"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not any(t.is_alive() for t in threads)
    assert len(errors) == 3 and all("0 results" in str(e) for e in errors)
