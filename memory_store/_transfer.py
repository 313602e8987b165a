"""JSON-lines export and import of a bank's items with their values.

Line 1 is a header; each further line is one item with every column (JSON
columns decoded). Steps, runs and LLM logs stay in the source bank: on import
the carried values become the items' start values, so replaying the target's
own steps (`recompute_values`) still reproduces its values.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from typing import IO, Any

from ._rows import ITEM_SELECT, check_id, check_number, check_text, item_to_record, prepare_item, row_to_item, utc_now
from ._types import ImportReport, MemoryStoreError

FORMAT = "evokernel-memory"
VERSION = 1
_VALUE_FIELDS = ("q_draft", "q_refine", "visits_draft", "visits_refine")
_CARRIED = (
    "kind", "task_key", "backend", "key_text", "content", "stage", "category", "name",
    "feedback", "reward", "latency_ms", "latency_source", "status", "extra",
)


def export_items(conn: sqlite3.Connection, fp: IO[str]) -> int:
    # One read transaction so the header count and the lines agree even while
    # other processes write.
    own = not conn.in_transaction
    if own:
        conn.execute("BEGIN")
    try:
        count = conn.execute("SELECT count(*) FROM items").fetchone()[0]
        header = {"format": FORMAT, "version": VERSION, "exported_utc": utc_now(), "items": count}
        fp.write(json.dumps(header) + "\n")
        for row in conn.execute(f"SELECT {ITEM_SELECT} FROM items ORDER BY id"):
            record = item_to_record(row_to_item(row))
            fp.write(json.dumps({"type": "item", **record}, ensure_ascii=False, allow_nan=False) + "\n")
    finally:
        if own:
            conn.execute("COMMIT")
    return count


def _check_record(record: Any, line: int) -> dict[str, Any]:
    where = f"line {line}"
    if not isinstance(record, dict) or record.get("type") != "item":
        raise MemoryStoreError(f"{where}: expected an object with \"type\": \"item\"")
    for field in ("id", "uid", *_VALUE_FIELDS, "created_utc"):
        if field not in record:
            raise MemoryStoreError(f"{where}: missing required field {field}")
    check_id(record["id"], f"{where}: id", allow_none=False)
    check_id(record.get("parent_id"), f"{where}: parent_id")
    check_text(record["uid"], f"{where}: uid")
    check_text(record["created_utc"], f"{where}: created_utc")
    for field in ("q_draft", "q_refine"):
        check_number(record[field], f"{where}: {field}", allow_none=False)
    for field in ("visits_draft", "visits_refine"):
        if check_id(record[field], f"{where}: {field}", allow_none=False) < 0:  # type: ignore[operator]
            raise MemoryStoreError(f"{where}: {field} must be >= 0")
    fields = {f: record.get(f) for f in _CARRIED}
    if fields["latency_source"] is None and isinstance(record.get("extra"), dict):
        fields["latency_source"] = record["extra"].get("latency_source")  # an export from before the column
    row = prepare_item(fields, q_init=0.0, where=where)
    row.update(
        uid=record["uid"],
        created_utc=record["created_utc"],
        q_draft=float(record["q_draft"]), q_draft_init=float(record["q_draft"]),
        q_refine=float(record["q_refine"]), q_refine_init=float(record["q_refine"]),
        visits_draft=record["visits_draft"], visits_draft_init=record["visits_draft"],
        visits_refine=record["visits_refine"], visits_refine_init=record["visits_refine"],
        # Runs are not carried over; the parent is relinked after insert.
        run_id=None, parent_id=None,
    )
    return {"line": line, "old_id": record["id"], "old_parent": record.get("parent_id"), "row": row}


def parse_export(fp: IO[str]) -> list[dict[str, Any]]:
    """Read and check a whole export before anything is written."""
    records: list[dict[str, Any]] = []
    seen_ids: dict[int, int] = {}
    header_seen = False
    for line_no, text in enumerate(fp, start=1):
        if not text.strip():
            continue
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise MemoryStoreError(f"line {line_no}: not valid JSON ({exc.msg} at column {exc.colno})") from exc
        if not header_seen:
            if not isinstance(data, dict) or data.get("format") != FORMAT:
                raise MemoryStoreError(f"line {line_no}: not an evokernel memory export (no {FORMAT!r} header)")
            if data.get("version") != VERSION:
                raise MemoryStoreError(f"line {line_no}: export version {data.get('version')!r} is not supported (expected {VERSION})")
            header_seen = True
            continue
        record = _check_record(data, line_no)
        if record["old_id"] in seen_ids:
            raise MemoryStoreError(f"line {line_no}: id {record['old_id']} already on line {seen_ids[record['old_id']]}")
        seen_ids[record["old_id"]] = line_no
        records.append(record)
    if not header_seen:
        raise MemoryStoreError("empty export: no header line")
    for record in records:
        if record["old_parent"] is not None and record["old_parent"] not in seen_ids:
            raise MemoryStoreError(f"line {record['line']}: parent_id {record['old_parent']} is not in the export")
    return records


def insert_records(
    conn: sqlite3.Connection,
    records: Sequence[dict[str, Any]],
    insert_rows: Callable[[Sequence[dict[str, Any]]], list[int]],
) -> ImportReport:
    """Insert parsed records; must run inside the caller's write transaction."""
    uids = [r["row"]["uid"] for r in records]
    existing: dict[str, int] = {}
    for start in range(0, len(uids), 500):
        chunk = uids[start : start + 500]
        existing.update(
            conn.execute(f"SELECT uid, id FROM items WHERE uid IN ({','.join('?' * len(chunk))})", chunk).fetchall()
        )
    fresh = [r for r in records if r["row"]["uid"] not in existing]
    new_ids = insert_rows([r["row"] for r in fresh])
    # An item already here stands in for its copy in the file, so children
    # imported now link to it.
    id_map = {r["old_id"]: existing[r["row"]["uid"]] for r in records if r["row"]["uid"] in existing}
    id_map.update({r["old_id"]: new_id for r, new_id in zip(fresh, new_ids)})
    conn.executemany(
        "UPDATE items SET parent_id = ? WHERE id = ?",
        [(id_map[r["old_parent"]], new_id) for r, new_id in zip(fresh, new_ids) if r["old_parent"] is not None],
    )
    return ImportReport(imported=len(fresh), skipped=len(records) - len(fresh), lines=len(records))
