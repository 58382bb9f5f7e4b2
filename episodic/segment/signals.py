"""The hard signals, each of which cuts on its own: size cap, gap, idle, structure, marker."""

from __future__ import annotations

from typing import Any

from episodic.segment.base import Signal, clip01, finite, positive
from episodic.segment.config import DEFAULTS
from episodic.segment.types import SegTurn


class SizeCap(Signal):
    """The open episode holds `max_turns` turns, or spans more than `max_minutes`.

    The guarantee that a stream with no boundary at all still ends episodes.
    The score is how full the episode is (the larger of the two fractions).
    """

    name = "size_cap"

    def __init__(
        self, max_turns: int = DEFAULTS.max_turns, max_minutes: float = DEFAULTS.max_minutes
    ) -> None:
        if max_turns < 1:
            raise ValueError("max_turns must be >= 1")
        self.max_turns = max_turns
        self.max_minutes = positive("max_minutes", max_minutes)
        super().__init__()

    def _reset(self) -> None:
        self._n = 0
        self._start = 0.0

    def update(self, turn: SegTurn) -> float:
        ts = turn.ts
        if self._n == 0:
            self._score, self._fired = 0.0, False
            self._n, self._start = 1, ts
            return 0.0
        minutes = (ts - self._start) / 60.0
        self._fired = self._n >= self.max_turns or minutes > self.max_minutes
        self._score = clip01(max(self._n / self.max_turns, minutes / self.max_minutes))
        self._n += 1
        return self._score

    def restart(self, turn: SegTurn) -> None:
        self._n, self._start = 1, turn.ts

    def _get(self) -> dict[str, Any]:
        return {"n": self._n, "start": self._start}

    def _set(self, state: dict[str, Any]) -> None:
        self._n = int(state["n"])
        self._start = finite(state["start"])


class _SinceLastTurn(Signal):
    """What the gap and idle signals share: the event time of the last turn,
    and a score that is the fraction of a limit in minutes."""

    def _reset(self) -> None:
        self._last: float | None = None

    def _against(self, minutes: float, limit: float) -> None:
        self._fired = minutes > limit
        self._score = clip01(minutes / limit)

    def _get(self) -> dict[str, Any]:
        return {"last": self._last}

    def _set(self, state: dict[str, Any]) -> None:
        last = state["last"]
        self._last = None if last is None else finite(last)


class TimeGap(_SinceLastTurn):
    """More than `gap_minutes` between two consecutive turns of the stream.

    The gap is the absolute difference of their event times: a turn dated far
    before its predecessor (a late delivery, a sender with `ts: 0`) is as far
    from the conversation around it as one dated far after, so it cuts too,
    and the turn after it, back in the present, cuts again; the stray turn
    becomes an episode of its own instead of blurring the one it landed in.
    A small backwards step (clock skew between sources, seconds) stays below
    the threshold and changes nothing. The next gap is measured from the
    stray turn, so the pair of cuts around it is symmetric.
    """

    name = "time_gap"

    def __init__(self, gap_minutes: float = DEFAULTS.time_gap_minutes) -> None:
        self.gap_minutes = positive("gap_minutes", gap_minutes)
        super().__init__()

    def update(self, turn: SegTurn) -> float:
        ts = turn.ts
        if self._last is None:
            self._score, self._fired = 0.0, False
        else:
            # backwards counts: see the class docstring
            self._against(abs(ts - self._last) / 60.0, self.gap_minutes)
        self._last = ts
        return self._score


class IdleClose(_SinceLastTurn):
    """At poll time: the open episode's last turn is older than `idle_minutes`."""

    name = "idle"

    def __init__(self, idle_minutes: float = DEFAULTS.idle_minutes) -> None:
        self.idle_minutes = positive("idle_minutes", idle_minutes)
        super().__init__()

    def update(self, turn: SegTurn) -> float:
        self._last = turn.ts
        self._score, self._fired = 0.0, False
        return 0.0

    def check(self, now_ts: float) -> float:
        if self._last is None:
            self._score, self._fired = 0.0, False
        else:
            self._against((now_ts - self._last) / 60.0, self.idle_minutes)
        return self._score


class Structural(Signal):
    """Rules on turn kinds.

    A system-event always cuts; a tool-error followed by a user question opens a
    sub-episode; a user-correction never cuts (it amends the episode it is in),
    which the detector reads from `veto`.
    """

    name = "structural"

    def _reset(self) -> None:
        self._prev_kind = ""
        self._sub = False
        self._veto = False

    @property
    def sub_episode(self) -> bool:
        return self._sub

    @property
    def last_kind(self) -> str:
        """The kind of the turn of the last update."""
        return self._prev_kind

    @property
    def veto(self) -> bool:
        return self._veto

    def update(self, turn: SegTurn) -> float:
        self._sub = self._prev_kind == "tool-error" and turn.kind == "user-question"
        self._fired = turn.kind == "system-event" or self._sub
        self._veto = turn.kind == "user-correction"
        self._score = 1.0 if self._fired else 0.0
        self._prev_kind = turn.kind
        return self._score

    def _get(self) -> dict[str, Any]:
        return {"prev_kind": self._prev_kind, "sub": self._sub, "veto": self._veto}

    def _set(self, state: dict[str, Any]) -> None:
        self._prev_kind = str(state["prev_kind"])
        self._sub = bool(state["sub"])
        self._veto = bool(state["veto"])


EPISODE_MARKER = "<episode_boundary>"
SUBTASK_MARKER = "<new_subtask>"


class AgentMarker(Signal):
    """`<episode_boundary>` / `<new_subtask>` in an agent's (non-user) text; authoritative.

    A marker that opens the text starts a new episode with this turn; a marker
    anywhere else ends the episode after this turn, so the cut lands before the
    next one. `<new_subtask>` opens a sub-episode.
    """

    name = "agent_marker"

    def _reset(self) -> None:
        self._pending = ""  # marker seen at the end of the previous turn
        self._sub = False

    @property
    def sub_episode(self) -> bool:
        return self._sub

    def update(self, turn: SegTurn) -> float:
        marker = self._pending
        self._pending = ""
        if turn.role != "user":
            found = _find_marker(turn.text)
            if found:
                if turn.text.lstrip().startswith(found):
                    marker = marker or found
                else:
                    self._pending = found
        self._fired = bool(marker)
        self._sub = marker == SUBTASK_MARKER
        self._score = 1.0 if self._fired else 0.0
        return self._score

    def _get(self) -> dict[str, Any]:
        return {"pending": self._pending, "sub": self._sub}

    def _set(self, state: dict[str, Any]) -> None:
        pending = str(state["pending"])
        if pending not in ("", EPISODE_MARKER, SUBTASK_MARKER):
            raise ValueError(f"unknown marker {pending!r}")
        self._pending = pending
        self._sub = bool(state["sub"])


def _find_marker(text: str) -> str:
    """The first marker in the text, if any."""
    best, where = "", -1
    for m in (EPISODE_MARKER, SUBTASK_MARKER):
        i = text.find(m)
        if i >= 0 and (where < 0 or i < where):
            best, where = m, i
    return best
