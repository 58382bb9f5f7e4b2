"""`Closing`: a context manager whose exit is its `close()` (a memory, a client)."""

from __future__ import annotations

from types import TracebackType
from typing import Self


class Closing:
    """`with x:` closes `x` at the end; subclasses say what `close()` frees."""

    __slots__ = ()  # slotted subclasses (Memory) stay slotted

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        et: type[BaseException] | None,
        ev: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        raise NotImplementedError
