"""`check_memory_file`: is this file a sound EvoKernel memory?

Read-only: the file is opened without migrating, so a damaged or foreign file
is examined as it is. It runs SQLite's integrity and foreign-key checks, the
full-text index's own check, and compares the schema with what the migrations
build (`schema_sql`).
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from . import _schema
from ._types import KINDS, CheckReport

_HEADER = b"SQLite format 3\x00"


def _columns(conn: sqlite3.Connection) -> dict[str, list[str]]:
    tables = [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "AND name NOT LIKE 'items_fts_%'")]
    return {t: [r[1] for r in conn.execute(f'PRAGMA table_info("{t}")')] for t in tables}


def _expected_columns(stop_before: str | None) -> dict[str, list[str]]:
    """The columns the migrations build, up to the first one the file has still pending."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.executescript(_schema.schema_sql(stop_before))
        return _columns(conn)
    finally:
        conn.close()


def check_memory_file(path: str | Path) -> CheckReport:
    """Problems found in the memory file at `path`; `report.ok` when there are none."""
    path = Path(path).expanduser()
    problems: list[str] = []
    notes: list[str] = []
    if not path.is_file():
        return CheckReport(str(path), ("no such file",))
    with open(path, "rb") as fp:
        header = fp.read(len(_HEADER))
    if header != _HEADER:
        what = "an empty file" if not header else "not a SQLite database (wrong header)"
        return CheckReport(str(path), (what,))
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        return CheckReport(str(path), (f"cannot open: {exc}",))
    applied: list[str] = []
    with contextlib.closing(conn):
        try:
            problems += [f"integrity: {r[0]}" for r in conn.execute("PRAGMA integrity_check") if r[0] != "ok"]
        except sqlite3.DatabaseError as exc:
            return CheckReport(str(path), (f"integrity: {exc}",))
        try:
            have = _columns(conn)
        except sqlite3.DatabaseError as exc:
            return CheckReport(str(path), (*problems, f"schema unreadable: {exc}"))
        pending: list[str] = []
        if "_sqlite_migrations" in have:
            try:
                applied = [r[0] for r in conn.execute(
                    "SELECT name FROM _sqlite_migrations WHERE migration_set = ? ORDER BY rowid", (_schema.MIGRATION_SET,))]
            except sqlite3.DatabaseError as exc:
                problems.append(f"migrations: {exc}")
            known = _schema.migration_names()
            unknown = [m for m in applied if m not in known]
            pending = [m for m in known if m not in applied]
            if unknown:
                notes.append(f"written by a newer EvoKernel: unknown migration(s) {', '.join(unknown)}")
            if pending:
                notes.append(f"migration(s) {', '.join(pending)} will be applied when the memory is next opened")
        # A memory with migrations still pending is sound with the columns of those it has.
        for table, columns in _expected_columns(pending[0] if applied and pending else None).items():
            if table not in have:
                problems.append(f"schema: table {table!r} is missing")
                continue
            missing = [c for c in columns if c not in have[table]]
            if missing:
                problems.append(f"schema: table {table!r} lacks column(s) {', '.join(missing)}")
        if "items" in have and not problems:
            try:
                problems += [f"foreign key: {r[0]} row {r[1]} points at a missing {r[2]} row"
                             for r in conn.execute("PRAGMA foreign_key_check")]
                bad = conn.execute(
                    f"SELECT count(*) FROM items WHERE kind NOT IN ({','.join('?' * len(KINDS))})", KINDS).fetchone()[0]
                if bad:
                    problems.append(f"items: {bad} row(s) of an unknown kind")
                conn.execute("INSERT INTO items_fts (items_fts, rank) VALUES ('integrity-check', 0)")
            except sqlite3.DatabaseError as exc:
                if "readonly" not in str(exc).lower():
                    problems.append(f"items_fts: {exc}")
        if "_sqlite_migrations" not in have and not problems:
            problems.append("schema: no migration record (_sqlite_migrations): not an EvoKernel memory")
    return CheckReport(str(path), tuple(problems), tuple(notes), tuple(applied))
