"""Where a user's newest timeline picture lives, apart from the drawing
(`episodic.service.timeline`), so naming or erasing it (the consolidate
artifact, forget) does not import matplotlib."""

from __future__ import annotations

import re
from pathlib import Path

from episodic.models import stable_id


def latest_plot_path(home: Path, user_id: str) -> Path:
    """`episodic plot` writes it, the consolidate artifact names it: a
    readable slug plus a hash, so a user id never becomes a path on its own."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", user_id)[:40].strip(".") or "user"
    return home / "plots" / f"{slug}-{stable_id('plot', user_id)[:8]}-latest.png"
