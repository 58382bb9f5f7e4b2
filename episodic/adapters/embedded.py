"""The Python face: `from episodic import Memory`. The service, with the
consolidate flow run in this process as its consolidation runner."""

from __future__ import annotations

from typing import Any

from episodic.adapters.runners import run_flow
from episodic.config import Settings
from episodic.service.memory import ConsolidationRunner
from episodic.service.memory import Memory as Service
from episodic.service.runtime import Runtime


class Memory(Service):
    __slots__ = ()

    def __init__(
        self,
        settings: Settings | Runtime | None = None,
        *,
        runner: ConsolidationRunner | None = None,
        **kw: Any,
    ) -> None:
        super().__init__(settings, runner=runner or run_flow, **kw)
