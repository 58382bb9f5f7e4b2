"""A LanceDB commit preempted by another process's commit (two processes
making a table's first index at once, a purge beside a recall count): done
again on the newer version, where the work is often found done already."""

from __future__ import annotations

from tenacity import retry, retry_if_exception_message, stop_after_attempt, wait_exponential

on_conflict = retry(
    retry=retry_if_exception_message(match=r".*[Cc]onflict.*"),
    stop=stop_after_attempt(5),
    wait=wait_exponential(multiplier=0.2, max=3),
    reraise=True,
)
