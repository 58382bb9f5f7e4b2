"""Capture what the hooks spooled (episodic/spool.py): each entry's new
transcript lines into raw, through the same capture as `episodic capture`.
An entry that fails for good (the file is gone, not a regular file) is
dropped with its reason in the report; any other failure leaves it for the
next drain."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from episodic.errors import IngestError
from episodic.service.capture import CaptureReport, capture_file
from episodic.service.runtime import Runtime
from episodic.spool import claim, done
from storage.offsets import Offsets


@dataclass
class DrainReport:
    captured: list[CaptureReport] = field(default_factory=list)
    dropped: list[dict[str, str]] = field(default_factory=list)
    users: set[str] = field(default_factory=set)  # whose transcripts gave new turns

    def as_dict(self) -> dict[str, Any]:
        return {
            "captured": [c.as_dict() for c in self.captured],
            "dropped": self.dropped,
            "accepted": sum(c.accepted for c in self.captured),
        }


def drain_spool(rt: Runtime) -> DrainReport:
    report = DrainReport()
    offsets: Offsets | None = None
    for entry in claim(rt.settings.home):
        offsets = offsets or Offsets(rt.store)
        try:
            captured = capture_file(
                rt.raw,
                offsets,
                Path(entry.path),
                entry.fmt,
                user_id=entry.user_id or "default",
                max_turn_chars=rt.settings.max_turn_chars,
                override_user=bool(entry.user_id),
            )
            report.captured.append(captured)
            if captured.accepted:
                report.users.add(entry.user_id or "default")
        except IngestError as e:
            report.dropped.append({"path": entry.path, "reason": str(e)})
        done(entry)
    return report
