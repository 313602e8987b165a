"""The schema, as named append-only migrations, and the connection setup.

A shipped migration is never edited: a change is a new function appended
below. Each one runs in a transaction together with its record in
`_sqlite_migrations` (sqlite-utils' `Migrations`).
"""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import sqlite_utils

from ._types import MemoryCorruptError, MemoryStoreError

T = TypeVar("T")

MIGRATION_SET = "memory_store"
migrations = sqlite_utils.Migrations(MIGRATION_SET)


@migrations(name="m001_initial")
def _m001_initial(db: sqlite_utils.Database) -> None:
    db["runs"].create(
        {"id": int, "started_utc": str, "finished_utc": str, "config_json": str, "status": str},
        pk="id",
        not_null={"started_utc", "config_json", "status"},
    )
    # Small columns first and the large text last: SQLite reads a row from its
    # start, so filters and value lookups never touch the overflow pages of a
    # multi-kilobyte kernel.
    db["items"].create(
        {
            "id": int,
            "uid": str,
            "kind": str,
            "task_key": str,
            "backend": str,
            "category": str,
            "stage": str,
            "name": str,
            "reward": float,
            "latency_ms": float,
            "status": str,
            "parent_id": int,
            "q_draft": float,
            "q_refine": float,
            "visits_draft": int,
            "visits_refine": int,
            "q_draft_init": float,
            "q_refine_init": float,
            "visits_draft_init": int,
            "visits_refine_init": int,
            "created_utc": str,
            "run_id": int,
            "key_text": str,
            "feedback_json": str,
            "extra_json": str,
            "content": str,
        },
        pk="id",
        not_null={
            "uid", "kind", "task_key", "backend", "category", "stage", "name",
            "q_draft", "q_refine", "visits_draft", "visits_refine",
            "q_draft_init", "q_refine_init", "visits_draft_init", "visits_refine_init",
            "created_utc", "key_text", "feedback_json", "extra_json", "content",
        },
        foreign_keys=[("parent_id", "items", "id"), ("run_id", "runs", "id")],
    )
    items = db["items"]
    items.create_index(["uid"], unique=True)
    items.create_index(["task_key", "backend", "kind", "status"])
    items.create_index(["kind", "backend", "name"])
    items.create_index(["parent_id"])
    # Retrieval filters (kind, backend, category, task) are checked for each
    # FTS match: this narrow covering index answers them without reading the
    # wide row with its kilobytes of kernel source.
    items.create_index(["id", "kind", "backend", "category", "task_key"], index_name="items_filter")
    # BM25 over key_text. External content (the text stays in `items`), kept
    # in sync by triggers inside the writing transaction. The update trigger
    # fires only when key_text changes, not on every value update.
    db.execute(
        "CREATE VIRTUAL TABLE items_fts USING fts5("
        "key_text, content='items', content_rowid='id', tokenize='porter unicode61')"
    )
    db.execute(
        "CREATE TRIGGER items_fts_insert AFTER INSERT ON items BEGIN "
        "INSERT INTO items_fts (rowid, key_text) VALUES (new.id, new.key_text); END"
    )
    db.execute(
        "CREATE TRIGGER items_fts_delete AFTER DELETE ON items BEGIN "
        "INSERT INTO items_fts (items_fts, rowid, key_text) VALUES ('delete', old.id, old.key_text); END"
    )
    db.execute(
        "CREATE TRIGGER items_fts_update AFTER UPDATE OF key_text ON items BEGIN "
        "INSERT INTO items_fts (items_fts, rowid, key_text) VALUES ('delete', old.id, old.key_text); "
        "INSERT INTO items_fts (rowid, key_text) VALUES (new.id, new.key_text); END"
    )
    db["steps"].create(
        {
            "id": int,
            "run_id": int,
            "task_key": str,
            "backend": str,
            "stage": str,
            "reward": float,
            "normalized_reward": float,
            "value_target": float,
            "alpha": float,
            "context_item_ids_json": str,
            "start_point_id": int,
            "result_item_id": int,
            "updated_item_count": int,
            "created_utc": str,
        },
        pk="id",
        not_null={
            "run_id", "task_key", "backend", "stage", "reward", "value_target",
            "alpha", "context_item_ids_json", "updated_item_count", "created_utc",
        },
        foreign_keys=[
            ("run_id", "runs", "id"),
            ("start_point_id", "items", "id"),
            ("result_item_id", "items", "id"),
        ],
    )
    db["steps"].create_index(["run_id"])
    db["steps"].create_index(["task_key", "backend"])
    db["reward_stats"].create(
        {"stage": str, "count": int, "mean": float, "mean_sq": float, "var": float, "updated_utc": str},
        pk="stage",
        not_null={"count", "mean", "mean_sq", "var", "updated_utc"},
    )
    db["llm_calls"].create(
        {
            "id": int,
            "run_id": int,
            "step_id": int,
            "provider": str,
            "model": str,
            "tokens_in": int,
            "tokens_out": int,
            "cost_usd": float,
            "latency_ms": float,
            "error": str,
            "created_utc": str,
            "prompt_json": str,
            "response_text": str,
        },
        pk="id",
        not_null={"provider", "model", "tokens_in", "tokens_out", "latency_ms", "created_utc", "prompt_json", "response_text"},
        foreign_keys=[("run_id", "runs", "id"), ("step_id", "steps", "id")],
    )
    db["llm_calls"].create_index(["run_id"])
    db["llm_cache"].create(
        {"request_hash": str, "created_utc": str, "response_json": str},
        pk="request_hash",
        not_null={"created_utc", "response_json"},
    )
    db["embeddings"].create(
        {"item_id": int, "model": str, "dim": int, "vector": bytes},
        pk=("item_id", "model"),
        not_null={"dim", "vector"},
        foreign_keys=[("item_id", "items", "id")],
    )
    db["embeddings"].create_index(["model"])


@migrations(name="m002_item_latency_source")
def _m002_item_latency_source(db: sqlite_utils.Database) -> None:
    # How a trace's latency was obtained (backends.LatencySource's label): whether two latencies
    # may be compared. It lived in extra_json, read back from JSON wherever latencies met; a
    # column now, filled from there for the items written before.
    db["items"].add_column("latency_source", str)
    db.execute(
        "UPDATE items SET latency_source = json_extract(extra_json, '$.latency_source') "
        "WHERE json_extract(extra_json, '$.latency_source') IS NOT NULL"
    )


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def connect(path: Path, *, busy_timeout_s: float, synchronous: str, cache_mib: int = 64) -> sqlite3.Connection:
    """Open the file in WAL mode with a busy timeout.

    `isolation_level=None` leaves transactions to us (BEGIN IMMEDIATE below);
    the driver's implicit BEGIN would take the write lock only at the first
    write, where a concurrent writer makes SQLite fail at once instead of wait.
    """
    try:
        conn = sqlite3.connect(
            str(path), timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
        )
    except sqlite3.Error as exc:
        raise database_error(path, exc) from exc
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
        # Switching a fresh file to WAL needs a moment of exclusive access; two
        # processes opening the same new file at once can collide here.
        _retry(lambda: conn.execute("PRAGMA journal_mode = WAL").fetchone(), attempts=20)
        conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
        conn.execute("PRAGMA foreign_keys = ON")
        # SQLite's default page cache is 2 MB; retrieval walks the FTS index
        # and the rows' first pages, so a larger cache saves reads.
        conn.execute(f"PRAGMA cache_size = -{int(cache_mib) * 1024}")
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise database_error(path, exc) from exc
    return conn


def _retry(fn: Callable[[], T], *, attempts: int) -> T:
    for attempt in range(attempts + 1):
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc) or attempt == attempts:
                raise
            time.sleep(min(1.0, 0.01 * 2**attempt) * (0.5 + random.random()))
    raise AssertionError("unreachable")  # pragma: no cover


def write(conn: sqlite3.Connection, fn: Callable[[], T], *, retries: int) -> T:
    """Run `fn` in one write transaction, retrying it whole when the file is busy.

    Inside an open transaction (`MemoryStore.transaction()`) it nests as a
    savepoint and is not retried: only the outer block can be replayed.
    """
    if conn.in_transaction:
        conn.execute("SAVEPOINT memory_write")
        try:
            result = fn()
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK TO SAVEPOINT memory_write")
                conn.execute("RELEASE SAVEPOINT memory_write")
            raise
        conn.execute("RELEASE SAVEPOINT memory_write")
        return result

    def attempt() -> T:
        # BEGIN IMMEDIATE waits (busy_timeout) for the write lock up front.
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = fn()
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return result

    return _retry(attempt, attempts=retries)


def migrate(conn: sqlite3.Connection, *, retries: int) -> None:
    db = sqlite_utils.Database(conn, execute_plugins=False)
    if not migrations.pending(db):
        return
    # Taking the write lock first means a second process opening the same
    # new file waits, then finds nothing pending, instead of racing to create
    # the same tables. Each migration nests as a savepoint with its record.
    write(conn, lambda: migrations.apply(db), retries=retries)


def schema_sql(stop_before: str | None = None) -> str:
    """The schema the migrations build (those before `stop_before`, when named), as SQL:
    docs generated, never drifting."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        migrations.apply(sqlite_utils.Database(conn, execute_plugins=False), stop_before=stop_before)
        rows = conn.execute(
            # FTS5's own shadow tables are implementation, not schema.
            "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL "
            "AND NOT (type = 'table' AND name LIKE 'items_fts_%') ORDER BY rowid"
        )
        return ";\n\n".join(r[0] for r in rows) + ";\n"
    finally:
        conn.close()


def applied_migrations(conn: sqlite3.Connection) -> list[str]:
    db = sqlite_utils.Database(conn, execute_plugins=False)
    return [m.name for m in migrations.applied(db)]


def migration_names() -> list[str]:
    """The names of every migration this version knows, in order."""
    return [m.name for m in migrations.pending(sqlite_utils.Database(memory=True))]


# Words in SQLite's messages that mean the file itself is damaged or is not a bank.
_DAMAGE = ("malformed", "not a database", "disk i/o", "encrypted", "corrupt", "no such table", "no such column")


def database_error(path: Path, exc: sqlite3.Error) -> MemoryStoreError:
    """A SQLite error as the store's own, naming the file (and the check to run when it is damaged)."""
    text = str(exc)
    if any(word in text.lower() for word in _DAMAGE):
        return MemoryCorruptError(
            f"{path} is damaged or not an EvoKernel memory ({text}); "
            f"run `evokernel memory check --memory {path}` for details"
        )
    return MemoryStoreError(f"{path}: {text}")
