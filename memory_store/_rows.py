"""Checking input and mapping rows to values: everything between a call and SQL.

Every check runs before the write transaction opens, so bad input raises
`MemoryStoreError` with nothing written.
"""

from __future__ import annotations

import datetime
import json
import math
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from ._types import KINDS, STAGES, Item, MemoryStoreError

ITEM_FIELDS: tuple[str, ...] = tuple(Item.__dataclass_fields__)
# SELECT list in Item field order; JSON columns come back under their field name.
ITEM_SELECT = ", ".join(
    {"feedback": "feedback_json", "extra": "extra_json"}.get(f, f) for f in ITEM_FIELDS
)
# Columns written on insert (id comes from SQLite).
ITEM_INSERT_COLUMNS: tuple[str, ...] = tuple(
    {"feedback": "feedback_json", "extra": "extra_json"}.get(f, f) for f in ITEM_FIELDS if f != "id"
)
ITEM_INSERT_SQL = (
    f"INSERT INTO items ({', '.join(ITEM_INSERT_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in ITEM_INSERT_COLUMNS)})"
)

REQUIRED_ITEM_FIELDS = ("kind", "task_key", "backend", "key_text", "content")
OPTIONAL_ITEM_FIELDS = (
    "stage", "category", "name", "feedback", "reward", "latency_ms", "latency_source", "status",
    "parent_id", "run_id", "extra",
)

_NAME_HEAD = re.compile(r"[^\s(:]+")


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="microseconds")


def dumps(value: Any, what: str) -> str:
    """Strict JSON (no NaN) of a dict, or `{}` for None."""
    if value is None:
        value = {}
    if not isinstance(value, Mapping):
        raise MemoryStoreError(f"{what} must be a dict, got {type(value).__name__}")
    try:
        return json.dumps(dict(value), allow_nan=False, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise MemoryStoreError(f"{what} is not JSON-serialisable: {exc}") from exc


def check_text(value: Any, what: str, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise MemoryStoreError(f"{what} must be a string, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise MemoryStoreError(f"{what} must not be empty")
    return value


def check_number(value: Any, what: str, *, allow_none: bool = True) -> float | None:
    if value is None:
        if allow_none:
            return None
        raise MemoryStoreError(f"{what} is required")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MemoryStoreError(f"{what} must be a number, got {type(value).__name__}")
    if math.isnan(value):
        raise MemoryStoreError(f"{what} must not be NaN")
    return float(value)


def check_id(value: Any, what: str, *, allow_none: bool = True) -> int | None:
    if value is None:
        if allow_none:
            return None
        raise MemoryStoreError(f"{what} is required")
    if isinstance(value, bool) or not isinstance(value, int):
        raise MemoryStoreError(f"{what} must be an integer id, got {type(value).__name__}")
    return value


def check_ids(values: Any, what: str) -> list[int]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise MemoryStoreError(f"{what} must be a list of integer ids")
    return [check_id(v, f"{what}[{i}]", allow_none=False) for i, v in enumerate(values)]  # type: ignore[misc]


def check_names(values: Any, what: str) -> list[str]:
    """A list of strings; a bare string is refused (it would iterate as letters)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise MemoryStoreError(f"{what} must be a list of strings, got {type(values).__name__}")
    return [check_text(v, f"{what}[{i}]") for i, v in enumerate(values)]


def _prefix(where: str) -> str:
    return f"{where}: " if where else ""


def check_stage(stage: Any, where: str = "") -> str:
    if stage not in STAGES:
        raise MemoryStoreError(f"{_prefix(where)}unknown stage {stage!r}; expected one of {', '.join(STAGES)}")
    return stage


def check_kind(kind: Any, where: str = "") -> str:
    if kind not in KINDS:
        raise MemoryStoreError(f"{_prefix(where)}unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    return kind


def default_name(kind: str, key_text: str) -> str:
    """An API note's exact name, when not given: the first word of key_text.

    `"DataCopy(dst, src, n): copies ..."` and `"DataCopy: ..."` both give
    `DataCopy`, which is what `api_notes_by_name` matches.
    """
    if kind != "api_note":
        return ""
    match = _NAME_HEAD.match(key_text.strip())
    return match.group(0) if match else ""


def prepare_item(fields: Mapping[str, Any], *, q_init: float, where: str = "item") -> dict[str, Any]:
    """Check one item's fields and return its column values (without id)."""
    unknown = set(fields) - set(REQUIRED_ITEM_FIELDS) - set(OPTIONAL_ITEM_FIELDS)
    if unknown:
        raise MemoryStoreError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    missing = [f for f in REQUIRED_ITEM_FIELDS if fields.get(f) is None]
    if missing:
        raise MemoryStoreError(f"{where}: missing required field(s) {', '.join(missing)}")
    kind = check_kind(fields["kind"], where)
    key_text = check_text(fields["key_text"], f"{where}: key_text")
    latency = check_number(fields.get("latency_ms"), f"{where}: latency_ms")
    if latency is not None and latency < 0:
        raise MemoryStoreError(f"{where}: latency_ms must be >= 0, got {latency}")
    status = fields.get("status")
    source = fields.get("latency_source")
    name = fields.get("name")
    return {
        "uid": uuid.uuid4().hex,
        "kind": kind,
        "task_key": check_text(fields["task_key"], f"{where}: task_key"),
        "backend": check_text(fields["backend"], f"{where}: backend"),
        "category": check_text(fields.get("category") or "", f"{where}: category", allow_empty=True),
        "stage": check_stage(fields.get("stage", "draft"), where),
        "name": check_text(name, f"{where}: name") if name else default_name(kind, key_text),
        "key_text": key_text,
        "content": check_text(fields["content"], f"{where}: content", allow_empty=True),
        "feedback_json": dumps(fields.get("feedback"), f"{where}: feedback"),
        "reward": check_number(fields.get("reward"), f"{where}: reward"),
        # A failed kernel has no latency; infinity is how callers often say so,
        # and NULL is how the table does (JSON has no infinity).
        "latency_ms": None if latency is None or math.isinf(latency) else latency,
        "latency_source": None if source is None else check_text(str(source), f"{where}: latency_source"),
        "status": None if status is None else check_text(status, f"{where}: status"),
        "parent_id": check_id(fields.get("parent_id"), f"{where}: parent_id"),
        "q_draft": q_init,
        "q_refine": q_init,
        "visits_draft": 0,
        "visits_refine": 0,
        "q_draft_init": q_init,
        "q_refine_init": q_init,
        "visits_draft_init": 0,
        "visits_refine_init": 0,
        "created_utc": utc_now(),
        "run_id": check_id(fields.get("run_id"), f"{where}: run_id"),
        "extra_json": dumps(fields.get("extra"), f"{where}: extra"),
    }


def row_to_item(row: Sequence[Any]) -> Item:
    values = dict(zip(ITEM_FIELDS, row))
    values["feedback"] = json.loads(values["feedback"])
    values["extra"] = json.loads(values["extra"])
    return Item(**values)


def item_to_record(item: Item) -> dict[str, Any]:
    """An item as a plain dict (JSON-ready), e.g. for export or `--json`."""
    return {field: getattr(item, field) for field in ITEM_FIELDS}
