"""One consolidation of a user at a time, across machines.

Layers, outermost first:
1. with EPISODIC_USER_SLOT=prefect, a Prefect global concurrency limit of one
   slot per user, named from a hash of the user id (`episodic-user-<16 hex>`,
   never the id itself), created on first use; the slot is a lease the holder
   renews, so a worker killed with SIGKILL frees it when the lease runs out
   (LEASE_S). Only `prefect server start` runs the repossessor that expires
   leases; Prefect's temporary API does not, so there a killed holder would
   keep the slot forever, and the layer is off by default;
2. the local file lock (storage.lease.user_lease): the fast path between runs
   on one machine, and the fallback with no Prefect API;
3. the checkpoint's optimistic version check (storage.state), the last line:
   a write from a run that lost both still fails instead of double-counting.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from episodic.models import stable_id
from storage.lease import LeaseBusy

LEASE_S = 60.0  # the server minimum; a killed holder's slot comes back after this
_known: set[str] = set()
_known_lock = threading.Lock()


def slot_warning(store_uri: str, user_slot: str, api_url: str | None) -> str | None:
    """What is unsafe in how runs of one user are kept apart, as the README
    says it: object storage needs the Prefect slot (file locks are local), and
    the slot needs a real server (the temporary API never frees a killed
    holder's slot)."""
    if "://" in store_uri and user_slot != "prefect":
        return (
            "the store is on object storage and EPISODIC_USER_SLOT is local: runs of one "
            "user on two machines can interleave; set EPISODIC_USER_SLOT=prefect"
        )
    if user_slot == "prefect" and not api_url:
        return (
            "EPISODIC_USER_SLOT=prefect on Prefect's temporary API: a killed run's slot "
            "never comes back; use it with `prefect server start` and PREFECT_API_URL"
        )
    return None


def limit_name(user_id: str) -> str:
    return f"episodic-user-{stable_id('gcl', user_id)[:16]}"


def ensure_limit(name: str) -> None:
    """Create the one-slot limit unless it exists (idempotent, race-safe)."""
    with _known_lock:
        if name in _known:
            return
    from prefect import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
    from prefect.exceptions import ObjectAlreadyExists

    with get_client(sync_client=True) as client:
        try:
            client.create_global_concurrency_limit(
                GlobalConcurrencyLimitCreate(name=name, limit=1, active=True)
            )
        except ObjectAlreadyExists:
            pass
    with _known_lock:
        _known.add(name)


@contextmanager
def user_slot(user_id: str, *, wait_s: float = 600.0, enabled: bool = True) -> Iterator[float]:
    """Hold the user's global slot; raise LeaseBusy after wait_s. Yields the
    seconds spent waiting for another holder (0 when the layer is off)."""
    from prefect.concurrency.sync import concurrency

    if not enabled:
        yield 0.0
        return
    name = limit_name(user_id)
    ensure_limit(name)
    start = time.monotonic()
    held = False
    try:
        with concurrency(
            name, occupy=1, timeout_seconds=wait_s, lease_duration=LEASE_S, strict=True
        ):
            held = True
            yield time.monotonic() - start
    except TimeoutError:
        if held:  # the body's own timeout, not ours
            raise
        raise LeaseBusy(name[-8:], time.monotonic() - start) from None
