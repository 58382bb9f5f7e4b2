"""docs/perf/retrieval.json from sizes measured in separate processes:

    python -m episodic.bench.retrieval 100000          # one size per process; its row
    python -m episodic.bench.retrieval 1000000         # is kept beside its store
    python -m episodic.bench.retrieval_stored 10000 100000 1000000

(its own module: bench.perf_doc runs bench.retrieval, so bench.retrieval
cannot import bench.perf_doc.)"""

from __future__ import annotations

import json
import sys

from episodic.bench import perf_doc
from episodic.bench.retrieval import SIZES, _root, summary


def store_measured(sizes: tuple[int, ...], command: str) -> None:
    """docs/perf/retrieval.json from the rows that `bench_size` kept beside
    each store, and the page rendered."""
    rows = [json.loads((_root(n) / "result.json").read_text(encoding="utf-8")) for n in sizes]
    perf_doc.store("retrieval", summary(rows), command)
    perf_doc.main([])


if __name__ == "__main__":
    sizes = tuple(int(a) for a in sys.argv[1:]) or SIZES
    runs = " and ".join(f"python -m episodic.bench.retrieval {n}" for n in sizes)
    then = "python -m episodic.bench.retrieval_stored " + " ".join(sys.argv[1:])
    store_measured(sizes, f"{runs} (rows kept beside each store), then {then}")
