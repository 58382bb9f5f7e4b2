"""Shards split users into disjoint, covering, stable groups."""

from __future__ import annotations

import pytest

from episodic.errors import ConfigError
from episodic.shards import Shard


def test_shards_partition_the_users_and_are_stable() -> None:
    users = [f"user-{i:03d}" for i in range(200)]
    shards = [Shard.parse(f"{i}/3") for i in range(3)]
    owners = [[s for s in shards if s.holds(u)] for u in users]
    assert all(len(o) == 1 for o in owners)  # each user in exactly one shard
    sizes = [sum(1 for o in owners if o[0] == s) for s in shards]
    assert min(sizes) > 40, sizes  # a hash, not all in one
    assert [Shard.parse("1/3").holds(u) for u in users] == [shards[1].holds(u) for u in users]
    assert all(Shard.parse("0/1").holds(u) for u in users)
    assert str(Shard.parse(" 2/3 ")) == "2/3"


@pytest.mark.parametrize("bad", ["", "1", "3/3", "-1/2", "a/b", "0/0", "1/2/3"])
def test_a_bad_shard_is_a_config_error_naming_the_form(bad: str) -> None:
    with pytest.raises(ConfigError, match="I/N"):
        Shard.parse(bad)
