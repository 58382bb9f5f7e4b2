"""Turn embeddings: a derived table keyed by turn id and model name, so each
turn is embedded once per model and vectors never live in raw."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from episodic.models import stable_id
from storage import filters
from storage.db import Store
from storage.schemas import schema


def vector_key(turn_id: str, model: str) -> str:
    return stable_id("vec", turn_id, model)


class TurnVectors:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.table = store.table("turn_vectors")

    def get(self, user_id: str, turn_ids: list[str], model: str) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        keys = {vector_key(t, model): t for t in turn_ids}
        ks = list(keys)
        for i in range(0, len(ks), 1000):
            chunk = ks[i : i + 1000]
            tbl = (
                self.table.search()
                .where(filters.user_in(user_id, "key", chunk).lance)
                .select(["key", "vector"])
                .limit(len(chunk) + 1)
                .to_arrow()
            )
            if tbl.num_rows == 0:
                continue
            mat = np.asarray(tbl["vector"].combine_chunks().values, dtype=np.float32)
            mat = mat.reshape(tbl.num_rows, self.store.dim)
            for key, row in zip(tbl["key"].to_pylist(), mat, strict=True):
                out[keys[key]] = row
        return out

    def put(self, user_id: str, turn_ids: list[str], model: str, vectors: np.ndarray) -> int:
        if not turn_ids:
            return 0
        vecs = np.nan_to_num(np.asarray(vectors, dtype=np.float32))
        flat = pa.array(vecs.reshape(-1), type=pa.float32())
        data = pa.Table.from_arrays(
            [
                pa.array([vector_key(t, model) for t in turn_ids]),
                pa.array(turn_ids),
                pa.array([user_id] * len(turn_ids)),
                pa.array([model] * len(turn_ids)),
                pa.FixedSizeListArray.from_arrays(flat, self.store.dim),
            ],
            schema=schema("turn_vectors", self.store.dim),
        )
        self.table.merge_insert("key").when_not_matched_insert_all().execute(data)
        return len(turn_ids)
