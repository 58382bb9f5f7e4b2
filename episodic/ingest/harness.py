"""Build turns straight from an agent harness, without a transcript file.

    turn = make_turn("alice", "session-7", "user", "no, use the staging db")
    turn.kind  # 'user-correction'

Unlike the file parsers this raises ValueError on bad input: the caller is
code, and code should hear about its mistakes at once.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import ValidationError

from episodic.ingest.common import ROLE_ALIASES, clean_text
from episodic.ingest.kinds import derive_kind
from episodic.models import ROLES, TURN_KINDS, TurnIn, now_utc, stable_id, utc


def make_turn(
    user_id: str,
    stream_id: str,
    role: str,
    text: str,
    ts: datetime | None = None,
    kind: str | None = None,
    source: str = "api",
    position: str | None = None,
    *,
    tool_call: bool = False,
    is_error: bool | None = None,
    meta: dict[str, Any] | None = None,
) -> TurnIn:
    """A TurnIn with its kind derived when not given.

    Without a `position` the turn is keyed by its content and time, so sending
    the same turn twice (same ts) stores it once; pass `ts` (or a position of
    your own, such as a message id) to make retries idempotent. A position you
    pass is the turn's own id: the same position in the same stream is the
    same turn, whatever its text.
    """
    role = ROLE_ALIASES.get(role.strip().lower(), role.strip().lower())
    if role not in ROLES:
        raise ValueError(f"role {role!r} is not one of {', '.join(ROLES)}")
    if kind is not None and kind not in TURN_KINDS:
        raise ValueError(f"kind {kind!r} is not one of {', '.join(TURN_KINDS)}")
    cleaned = clean_text(text)
    event_ts = utc(ts) if ts is not None else now_utc()
    if kind is None:
        kind = derive_kind(role, cleaned, tool_call=tool_call, is_error=is_error)
    native_id = position or ""
    if position is None:
        position = "c:" + stable_id(role, cleaned, event_ts.isoformat())
    try:
        return TurnIn.model_validate(
            {
                "user_id": user_id,
                "stream_id": stream_id,
                "role": role,
                "kind": kind,
                "text": cleaned,
                "event_ts": event_ts,
                "source": source,
                "position": position,
                "native_id": native_id,
                "meta": dict(meta or {}),
            }
        )
    except ValidationError as e:
        raise ValueError(str(e)) from e
