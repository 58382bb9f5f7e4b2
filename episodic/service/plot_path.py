"""Where a user's newest timeline picture lives, apart from the drawing
(`episodic.service.timeline`), so naming or erasing it (the consolidate
artifact, forget) does not import matplotlib."""

from __future__ import annotations

import re
from pathlib import Path

from episodic.models import stable_id


def latest_plot_path(home: Path, user_id: str) -> Path:
    """`episodic plot` writes it, the consolidate artifact names it: by a
    hash of the user, so neither a path nor Prefect's copy of the artifact
    holds the id (a forget deletes the file; it cannot reach Prefect)."""
    return home / "plots" / f"user-{stable_id('plot', user_id)[:8]}-latest.png"


def plot_paths(home: Path, user_id: str) -> list[Path]:
    """Every name the user's picture has had, for a forget: homes written
    before 2026-12-07 name it by a slug of the id as well."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", user_id)[:40].strip(".") or "user"
    old = home / "plots" / f"{slug}-{stable_id('plot', user_id)[:8]}-latest.png"
    return [latest_plot_path(home, user_id), old]
