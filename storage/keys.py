"""API keys: each belongs to one tenant (user id) and carries scopes.

A key reads `ep_<key_id>_<secret>`. Only `key_id` (a public lookup handle),
a random salt and HMAC-SHA256(salt, secret) are stored, never the key; a
check recomputes the HMAC and compares in constant time. Revoking sets
`revoked_at`; the row stays for the record.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pyarrow as pa

from episodic.models import now_utc
from storage import filters
from storage.codec import to_aware, to_naive
from storage.db import Store

SCOPES = ("read", "write")
TABLE = "api_keys"
_KEY = re.compile(r"^ep_([0-9a-f]{16})_([A-Za-z0-9_-]{20,100})$")


def schema() -> pa.Schema:
    ts = pa.timestamp("us")
    return pa.schema(
        [
            ("key_id", pa.string()),
            ("user_id", pa.string()),
            ("scopes", pa.list_(pa.string())),
            ("salt", pa.binary()),
            ("digest", pa.binary()),
            ("created_at", ts),
            ("revoked_at", ts),
        ]
    )


@dataclass(frozen=True)
class ApiKey:
    key_id: str
    user_id: str
    scopes: tuple[str, ...]
    created_at: datetime | None
    revoked_at: datetime | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "key_id": self.key_id,
            "user_id": self.user_id,
            "scopes": list(self.scopes),
            "created_at": self.created_at.isoformat() if self.created_at else None,
            "revoked_at": self.revoked_at.isoformat() if self.revoked_at else None,
        }


def _digest(salt: bytes, secret: str) -> bytes:
    return hmac.new(salt, secret.encode("ascii"), hashlib.sha256).digest()


class ApiKeys:
    """`verify` caches a verified key for `ttl` seconds (a revoke takes effect
    within it); a key that fails is never cached."""

    def __init__(self, store: Store, ttl: float = 2.0) -> None:
        self.store = store
        self.table = store.declared(TABLE, schema())
        self.ttl = ttl
        self._cache: dict[str, tuple[float, ApiKey]] = {}
        self._lock = threading.Lock()

    def create(self, user_id: str, scopes: tuple[str, ...] = SCOPES) -> tuple[str, ApiKey]:
        """(the key, to show once; its record). ValueError on a bad user or scope."""
        if not user_id.strip() or len(user_id) > 512 or any(c < " " for c in user_id):
            raise ValueError("user id must be a non-blank printable string of at most 512 chars")
        bad = [s for s in scopes if s not in SCOPES]
        if bad or not scopes:
            raise ValueError(f"scopes must be among {', '.join(SCOPES)}, got {list(scopes)}")
        key_id = secrets.token_hex(8)
        secret = secrets.token_urlsafe(32)
        salt = secrets.token_bytes(16)
        now = now_utc()
        granted = tuple(sorted(set(scopes)))
        row = {
            "key_id": key_id,
            "user_id": user_id,
            "scopes": list(granted),
            "salt": salt,
            "digest": _digest(salt, secret),
            "created_at": to_naive(now),
            "revoked_at": None,
        }
        self.table.add(pa.Table.from_pylist([row], schema=schema()))
        return f"ep_{key_id}_{secret}", ApiKey(key_id, user_id, granted, now, None)

    def verify(self, key: str) -> ApiKey | None:
        """The key's record when it is well formed, known, matches and is not revoked."""
        m = _KEY.match(key)
        if not m:
            return None
        key_id, secret = m.groups()
        cache_key = hashlib.sha256(key.encode("ascii")).hexdigest()
        now = time.monotonic()
        with self._lock:
            hit = self._cache.get(cache_key)
        if hit and now - hit[0] < self.ttl:
            return hit[1]
        rows = self.table.search().where(filters.eq("key_id", key_id).lance).limit(2).to_list()
        if len(rows) != 1:
            return None
        r = rows[0]
        if r["revoked_at"] is not None:
            return None
        if not hmac.compare_digest(_digest(bytes(r["salt"]), secret), bytes(r["digest"])):
            return None
        found = self._from_row(r)
        with self._lock:
            self._cache[cache_key] = (now, found)
        return found

    def forget_cached(self) -> None:
        """Drop verified keys kept in this process (after a user is forgotten)."""
        with self._lock:
            self._cache.clear()

    def list(self, user_id: str | None = None) -> list[ApiKey]:
        q = self.table.search()
        if user_id is not None:
            q = q.where(filters.user(user_id).lance)
        rows = q.select(["key_id", "user_id", "scopes", "created_at", "revoked_at"])
        out = [self._from_row(r) for r in rows.limit(1_000_000).to_list()]
        return sorted(out, key=lambda k: (k.user_id, k.created_at or now_utc()))

    def revoke(self, key_id: str) -> bool:
        """True when a live key was revoked; False when unknown or revoked already."""
        cond = filters.eq("key_id", key_id)
        rows = self.table.search().where(cond.lance).select(["revoked_at"]).limit(2).to_list()
        if not rows or any(r["revoked_at"] is not None for r in rows):
            return False
        self.store.update_where(TABLE, cond, {"revoked_at": to_naive(now_utc())})
        with self._lock:
            self._cache.clear()
        return True

    @staticmethod
    def _from_row(r: dict[str, Any]) -> ApiKey:
        return ApiKey(
            key_id=str(r["key_id"]),
            user_id=str(r["user_id"]),
            scopes=tuple(r["scopes"] or ()),
            created_at=to_aware(r["created_at"]),
            revoked_at=to_aware(r["revoked_at"]),
        )
