"""Loaders for the public topic-segmentation sets in ../shared/data (formats in its README).

Each dialogue comes back with its utterances, a role per utterance and the
reference as segment masses (lengths of consecutive segments).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from episodic.errors import IngestError

DATASETS = ("dialseg711", "tiage", "superdialseg")
USER_ANCHORS = frozenset({"user"})
PEER_ANCHORS = frozenset({"user", "assistant"})


@dataclass(frozen=True)
class Dialogue:
    dial_id: str
    utterances: tuple[str, ...]
    roles: tuple[str, ...]  # user | assistant
    masses: tuple[int, ...]  # reference segment lengths, summing to len(utterances)
    # both speakers are people who lead the talk in turn (the detector's
    # `peer_dialogue`), as TIAGE's PersonaChat peers are; DialSeg711 (a user and a
    # task system) and SuperDialseg (a user and a support agent) are user-led:
    # docs/segmentation.md, "Peer dialogue"
    peer: bool = False

    @property
    def anchors(self) -> frozenset[str]:
        """The roles a soft cut may land before, as the detector reads this dialogue."""
        return PEER_ANCHORS if self.peer else USER_ANCHORS

    @property
    def boundaries(self) -> frozenset[int]:
        """Indices of utterances that open a new segment (never 0)."""
        out, pos = set(), 0
        for m in self.masses[:-1]:
            pos += m
            out.add(pos)
        return frozenset(out)


def _alternating(n: int) -> tuple[str, ...]:
    # the README: utterances alternate between two speakers, starting with the user
    return tuple("user" if i % 2 == 0 else "assistant" for i in range(n))


def _masses(n: int, starts: list[int]) -> tuple[int, ...]:
    cuts = [0, *sorted(s for s in set(starts) if 0 < s < n), n]
    return tuple(b - a for a, b in zip(cuts, cuts[1:], strict=False))


def load_dialseg711(path: str | Path) -> list[Dialogue]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    out = []
    for d in data:
        utts = tuple(str(u) for u in d["utterances"])
        masses = tuple(int(s) for s in d["segments"])
        if sum(masses) != len(utts):
            raise IngestError(str(path), f"{d['dial_id']}: segments do not sum to the utterances")
        out.append(Dialogue(str(d["dial_id"]), utts, _alternating(len(utts)), masses))
    return out


def load_tiage(path: str | Path) -> list[Dialogue]:
    """A file, or a directory whose anno_train.json and anno_dev.json are both read."""
    p = Path(path)
    files = [p / "anno_train.json", p / "anno_dev.json"] if p.is_dir() else [p]
    out = []
    for f in files:
        if not f.exists():
            raise IngestError(str(f), "missing")
        for dial_id, rows in json.loads(f.read_text(encoding="utf-8")).items():
            utts = tuple(str(r[0]) for r in rows)
            starts = [i for i, r in enumerate(rows) if str(r[1]) == "1"]
            out.append(
                Dialogue(
                    f"{f.stem}:{dial_id}",
                    utts,
                    _alternating(len(utts)),
                    _masses(len(utts), starts),
                    peer=True,  # two crowdworkers chatting: either may open a topic
                )
            )
    return out


def load_superdialseg(path: str | Path) -> list[Dialogue]:
    """JSON lines; a trailing [BOUNDARY] marks a last utterance missing from this copy,
    so it and its boundary are dropped."""
    out = []
    with Path(path).open(encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            utts: list[str] = []
            roles: list[str] = []
            starts: list[int] = []
            for part in str(row["dialogue"]).split("[NEWLINE]"):
                part = part.strip()
                if part == "[BOUNDARY]":
                    starts.append(len(utts))
                elif part:
                    speaker, _, text = part.partition(":")
                    roles.append("user" if speaker.strip().lower() == "user" else "assistant")
                    utts.append(text.strip())
            if not utts:
                raise IngestError(str(path), f"line {line_no}: no utterances")
            out.append(
                Dialogue(
                    str(row.get("id", line_no)),
                    tuple(utts),
                    tuple(roles),
                    _masses(len(utts), starts),
                )
            )
    return out


def load_dataset(name: str, path: str | Path) -> list[Dialogue]:
    loaders = {
        "dialseg711": load_dialseg711,
        "tiage": load_tiage,
        "superdialseg": load_superdialseg,
    }
    if name not in loaders:
        raise ValueError(f"unknown dataset {name!r}; known: {', '.join(DATASETS)}")
    if not Path(path).exists():
        raise IngestError(str(path), "not found")
    return loaders[name](path)
