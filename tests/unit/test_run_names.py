"""A run's name says whose run it is without the user's id: a user's tag, a
shard, or all users."""

from __future__ import annotations

import re

from episodic.models import user_tag
from tasks.names import run_name

STAMP = r"\d{8}T\d{6}Z"


def test_a_run_is_named_by_its_user_tag_its_shard_or_all() -> None:
    assert re.fullmatch(
        rf"consolidate-{user_tag('alice')}-{STAMP}", run_name("consolidate", "alice")
    )
    assert re.fullmatch(rf"consolidate-shard-0of2-{STAMP}", run_name("consolidate", None, "0/2"))
    assert re.fullmatch(rf"consolidate-all-{STAMP}", run_name("consolidate", None))
    assert "alice" not in run_name("consolidate", "alice", "0/2")
