"""The EvoKernel episodic memory: a SQLite bank of experiences with learned values.

Items (API notes, experiences, generation traces, best practices) are
recalled by BM25 over their key text and selected by a value learned per
stage (Q_draft, Q_refine) from executor rewards. Standard library,
sqlite-utils and numpy only: nothing here imports `evokernel` or `backends`.

    store = MemoryStore(default_memory_path())
    run = store.start_run({"model": "gpt-5"})
    picks = store.retrieve("row softmax fp32", stage="draft", backends=["triton"])
    store.record_step(run_id=run, task_key="softmax", backend="triton", stage="draft",
                      reward=1.0, context_item_ids=[p.item.id for p in picks])
"""

from ._check import check_memory_file
from ._embed import Embedder
from ._schema import schema_sql
from ._store import MemoryStore
from ._types import (
    KINDS,
    MODES,
    STAGES,
    CheckReport,
    ImportReport,
    Item,
    MemoryConfig,
    MemoryCorruptError,
    MemoryStoreError,
    Retrieved,
    default_memory_path,
)
from ._values import RewardStats, ValueState, q_update, updated_ids

__all__ = [
    "KINDS",
    "MODES",
    "STAGES",
    "CheckReport",
    "Embedder",
    "ImportReport",
    "Item",
    "MemoryConfig",
    "MemoryCorruptError",
    "MemoryStore",
    "MemoryStoreError",
    "Retrieved",
    "RewardStats",
    "ValueState",
    "check_memory_file",
    "default_memory_path",
    "q_update",
    "schema_sql",
    "updated_ids",
]
