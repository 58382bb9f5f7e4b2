"""Users split into N shards by a stable hash of the id: N flow runs (on N
workers) share one poll without agreeing on anything but N, and each run pays
its process start once for many users instead of once per user."""

from __future__ import annotations

from dataclasses import dataclass

from episodic.errors import ConfigError
from episodic.models import stable_id


@dataclass(frozen=True)
class Shard:
    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """`I/N`, 0 <= I < N: the I-th of N shards."""
        head, sep, tail = text.strip().partition("/")
        try:
            index, count = int(head), int(tail)
        except ValueError:
            index, count = -1, 0
        if not sep or count < 1 or not 0 <= index < count:
            raise ConfigError("shard", f"{text!r} is not I/N with 0 <= I < N (e.g. 0/2)")
        return cls(index, count)

    def holds(self, user_id: str) -> bool:
        return int(stable_id("shard", user_id), 16) % self.count == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"
