"""Read-only queries over a memory bank: every page's data as typed records.

The file is opened with SQLite's `mode=ro` (and `query_only` on top), one
connection per request: a reader in WAL mode sees each committed step of a
run still writing, and nothing here can change the bank. The schema is read,
never changed; these queries use the store's columns and its FTS5 index.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import sqlite3
import urllib.parse
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from memory_store import Item, ValueState

from ._records import (
    Attempt,
    BankStats,
    BrowseError,
    ItemOrder,
    ItemView,
    LineageRow,
    LLMCall,
    MatchedIn,
    RunSummary,
    SearchHit,
    Step,
    TaskSummary,
    TaskView,
    Usage,
    ValuePoint,
)

_JSON_COLUMNS = {"feedback": "feedback_json", "extra": "extra_json"}
_ITEM_FIELDS = tuple(f.name for f in dataclasses.fields(Item))
# A bank the store has not opened since the column was added (browsing never migrates) still
# holds each item's latency source in its extra JSON.
_LATENCY_SOURCE_BEFORE_COLUMN = "json_extract(extra_json, '$.latency_source')"
_STEP_SELECT = (
    "id, run_id, task_key, backend, stage, reward, normalized_reward, value_target, alpha, "
    "context_item_ids_json, start_point_id, result_item_id, created_utc"
)
_CALL_SELECT = (
    "id, run_id, step_id, provider, model, tokens_in, tokens_out, cost_usd, latency_ms, error, created_utc, "
    "prompt_json, response_text"
)
_NEEDED_TABLES = {"runs", "items", "steps", "llm_calls", "items_fts"}
# Control characters around FTS5 snippet matches: they cannot occur in the
# escaped text, so splitting on them never cuts user text.
_MARK_OPEN, _MARK_CLOSE = "\x02", "\x03"
_MARKED = re.compile(f"{_MARK_OPEN}(.*?){_MARK_CLOSE}", re.S)
# A substring search reads whole rows; it looks at this many newest items at most.
_SUBSTRING_WINDOW = 20_000


def _loads(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _item(row: Sequence[Any]) -> Item:
    values = dict(zip(_ITEM_FIELDS, row))
    values["feedback"] = _loads(values["feedback"])
    values["extra"] = _loads(values["extra"])
    return Item(**values)


def _step(row: Sequence[Any]) -> Step:
    context = json.loads(row[9]) if row[9] else []
    return Step(row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7], row[8],
                tuple(int(i) for i in context), row[10], row[11], row[12])


def _call(row: Sequence[Any]) -> LLMCall:
    return LLMCall(*row[:11], prompt=_loads(row[11]), response_text=row[12] or "")


def task_name(key: str, extra: dict[str, Any] | None = None) -> str:
    """A task's short name: the one its trace recorded, else its key before the hash."""
    name = (extra or {}).get("task_name")
    return str(name) if name else key.split("@", 1)[0].rsplit("-", 1)[0]


def fts_query(text: str) -> str:
    """The user's words as an FTS5 query: each one quoted (so no word is read as
    syntax), all of them required."""
    words = [w for w in text.replace('"', " ").split() if w]
    return " ".join(f'"{w}"' for w in words)


class Bank:
    """A memory bank opened for reading only; `read()` gives one consistent reader."""

    def __init__(self, path: str | Path):
        self.path = Path(path).expanduser().resolve()
        if not self.path.is_file():
            raise BrowseError(f"no memory at {self.path}")
        with self.read() as reader:
            reader.check()

    @contextlib.contextmanager
    def read(self) -> Iterator[BankReader]:
        uri = f"file:{urllib.parse.quote(str(self.path))}?mode=ro"
        try:
            conn = sqlite3.connect(uri, uri=True)
        except sqlite3.Error as exc:
            raise BrowseError(f"{self.path}: {exc}") from exc
        try:
            conn.execute("PRAGMA query_only = ON")
            # One snapshot for the whole page: a run writing meanwhile never shows half a step.
            conn.execute("BEGIN")
            yield BankReader(conn, self.path)
        except sqlite3.DatabaseError as exc:
            raise BrowseError(f"{self.path} is not a readable EvoKernel memory ({exc})") from exc
        finally:
            conn.close()


class BankReader:
    """The queries, over one read-only connection in one read transaction."""

    def __init__(self, conn: sqlite3.Connection, path: Path):
        self.conn = conn
        self.path = path
        columns = {r[1] for r in conn.execute("PRAGMA table_info(items)")}
        self._latency_source = "latency_source" if "latency_source" in columns else _LATENCY_SOURCE_BEFORE_COLUMN
        self._item_select = ", ".join(
            _JSON_COLUMNS.get(f, self._latency_source if f == "latency_source" else f) for f in _ITEM_FIELDS)

    def check(self) -> None:
        tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        missing = sorted(_NEEDED_TABLES - tables)
        if missing:
            raise BrowseError(f"{self.path} is not an EvoKernel memory (no table {', '.join(missing)})")

    def _items(self, where: str, params: Sequence[Any] = ()) -> list[Item]:
        return [_item(r) for r in self.conn.execute(f"SELECT {self._item_select} FROM items WHERE {where}", params)]

    def _steps(self, where: str, params: Sequence[Any] = ()) -> list[Step]:
        return [_step(r) for r in self.conn.execute(f"SELECT {_STEP_SELECT} FROM steps WHERE {where}", params)]

    # -- the bank --------------------------------------------------------

    def stats(self) -> BankStats:
        one = lambda sql: self.conn.execute(sql).fetchone()[0]  # noqa: E731
        by_kind = dict(self.conn.execute("SELECT kind, count(*) FROM items GROUP BY kind ORDER BY kind").fetchall())
        return BankStats(
            path=str(self.path), items=sum(by_kind.values()), by_kind=by_kind, runs=one("SELECT count(*) FROM runs"),
            steps=one("SELECT count(*) FROM steps"), llm_calls=one("SELECT count(*) FROM llm_calls"),
            tasks=one("SELECT count(DISTINCT task_key) FROM steps"),
        )

    # -- runs ------------------------------------------------------------

    def runs(self, run_id: int | None = None) -> list[RunSummary]:
        where, params = ("WHERE r.id = ?", (run_id,)) if run_id is not None else ("", ())
        rows = self.conn.execute(
            "SELECT r.id, r.started_utc, r.finished_utc, r.status, r.config_json, "
            "(SELECT count(*) FROM steps s WHERE s.run_id = r.id), "
            "(SELECT count(*) FROM llm_calls c WHERE c.run_id = r.id), "
            "(SELECT coalesce(sum(tokens_in), 0) FROM llm_calls c WHERE c.run_id = r.id), "
            "(SELECT coalesce(sum(tokens_out), 0) FROM llm_calls c WHERE c.run_id = r.id), "
            "(SELECT sum(cost_usd) FROM llm_calls c WHERE c.run_id = r.id) "
            f"FROM runs r {where} ORDER BY r.id DESC",
            params,
        ).fetchall()
        out = []
        for r in rows:
            config = _loads(r[4])
            signature = config.get("signature") or {}
            options = signature.get("config") or {k: v for k, v in config.items() if k != "tasks"}
            tasks = config.get("tasks") or []
            names = tuple(str(t.get("name") or task_name(str(t.get("key", "")))) if isinstance(t, dict) else str(t)
                          for t in tasks)
            keys = tuple(str(t["key"]) for t in tasks if isinstance(t, dict) and t.get("key"))
            budget = options.get("budget")
            out.append(RunSummary(
                id=r[0], started_utc=r[1], finished_utc=r[2], status=r[3],
                policy=str(config.get("policy") or signature.get("policy") or config.get("agent") or ""),
                task_names=names, task_keys=keys, budget=budget if isinstance(budget, int) else None, steps_done=r[5],
                llm_calls=r[6], tokens_in=r[7], tokens_out=r[8], cost_usd=r[9], options=options,
            ))
        return out

    def run(self, run_id: int) -> RunSummary | None:
        found = self.runs(run_id)
        return found[0] if found else None

    def run_steps(self, run_id: int, *, limit: int | None = None) -> list[Step]:
        """The run's steps, newest first."""
        tail = "" if limit is None else f" LIMIT {int(limit)}"
        return self._steps(f"run_id = ? ORDER BY id DESC{tail}", (run_id,))

    def run_tasks(self, run: RunSummary) -> list[TaskSummary]:
        """The run's tasks, those it was given first (listed before their first step lands)."""
        stepped = [r[0] for r in self.conn.execute(
            "SELECT DISTINCT task_key FROM steps WHERE run_id = ? ORDER BY task_key", (run.id,))]
        keys = list(dict.fromkeys([*run.task_keys, *stepped]))
        return [self._task_summary(k, run_id=run.id) for k in keys]

    # -- tasks -----------------------------------------------------------

    def tasks(self) -> list[TaskSummary]:
        keys = [r[0] for r in self.conn.execute("SELECT DISTINCT task_key FROM items WHERE kind = 'trace' ORDER BY task_key")]
        return [self._task_summary(k) for k in keys]

    def _task_summary(self, key: str, *, run_id: int | None = None) -> TaskSummary:
        """A task's attempts, feasible ones and best latency, over the bank or one run."""
        traces = "FROM items WHERE task_key = :key AND kind = 'trace'" + (" AND run_id = :run" if run_id is not None else "")
        params = {"key": key, "run": run_id}
        count, feasible, best_ms, backend = self.conn.execute(
            f"SELECT count(*), count(latency_ms), min(latency_ms), max(backend) {traces}", params).fetchone()
        last = self.conn.execute(
            f"SELECT status, json_extract(extra_json, '$.task_name') {traces} ORDER BY id DESC LIMIT 1", params).fetchone()
        source = self.conn.execute(
            f"SELECT {self._latency_source} {traces} AND latency_ms IS NOT NULL "
            "ORDER BY id DESC LIMIT 1", params).fetchone()
        return TaskSummary(key=key, name=task_name(key, {"task_name": last[1] if last else None}), backend=backend or "",
                           attempts=count, feasible=feasible, best_ms=best_ms, last_status=last[0] if last else None,
                           latency_source=(source[0] if source else None) or "")

    def task(self, key: str) -> TaskView | None:
        traces = self._items("task_key = ? AND kind = 'trace' ORDER BY id", (key,))
        if not traces:
            return None
        made_by = {s.result_item_id: s for s in self._steps("task_key = ? ORDER BY id", (key,))}
        attempts = tuple(Attempt(n, item, made_by.get(item.id)) for n, item in enumerate(traces, start=1))
        feasible = [a for a in attempts if a.feasible]
        best = min(feasible, key=lambda a: (a.item.latency_ms, a.item.id)) if feasible else None
        return TaskView(self._task_summary(key), attempts, best, _lineage(attempts))

    # -- items -----------------------------------------------------------

    def items(self, *, kind: str | None = None, task_key: str | None = None, order: ItemOrder = ItemOrder.NEWEST,
              limit: int = 200) -> list[Item]:
        clauses, params = ["1"], []
        if kind:
            clauses.append("kind = ?")
            params.append(kind)
        if task_key:
            clauses.append("task_key = ?")
            params.append(task_key)
        return self._items(f"{' AND '.join(clauses)} ORDER BY {order.sql} LIMIT {int(limit)}", params)

    def items_by_id(self, item_ids: Sequence[int]) -> list[Item]:
        ids = sorted(set(item_ids))
        return self._items(f"id IN ({','.join('?' * len(ids))})", ids) if ids else []

    def kinds(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT DISTINCT kind FROM items ORDER BY kind")]

    def usage(self, item_ids: Sequence[int] | None = None) -> dict[int, Usage]:
        """Per item: how many steps retrieved it into their context, their mean reward,
        and how many of them produced a feasible kernel."""
        rows = self.conn.execute(
            "SELECT CAST(j.value AS INTEGER), count(*), avg(s.reward), count(r.latency_ms) "
            "FROM steps s, json_each(s.context_item_ids_json) j LEFT JOIN items r ON r.id = s.result_item_id "
            "GROUP BY 1"
        ).fetchall()
        wanted = None if item_ids is None else set(item_ids)
        return {r[0]: Usage(r[1], r[2], r[3]) for r in rows if wanted is None or r[0] in wanted}

    def item(self, item_id: int) -> ItemView | None:
        found = self._items("id = ?", (item_id,))
        if not found:
            return None
        item = found[0]
        parent = self._items("id = ?", (item.parent_id,))[0] if item.parent_id is not None else None
        children = tuple(self._items("parent_id = ? ORDER BY id", (item_id,)))
        touching = self._steps(
            "start_point_id = ?1 OR EXISTS (SELECT 1 FROM json_each(steps.context_item_ids_json) "
            "WHERE CAST(value AS INTEGER) = ?1) ORDER BY id", (item_id,))
        retrieving = tuple(s for s in touching if item_id in s.context_item_ids)
        made = self._steps("result_item_id = ?", (item_id,))
        return ItemView(item, parent, children, self.usage([item_id]).get(item_id, Usage()),
                        value_history(item, touching), retrieving, made[0] if made else None)

    def skills(self) -> list[Item]:
        return self._items("kind = 'best_practice' ORDER BY id DESC")

    # -- LLM calls -------------------------------------------------------

    def llm_calls(self, *, run_id: int | None = None, step_id: int | None = None, limit: int = 200) -> list[LLMCall]:
        clauses, params = ["1"], []
        if run_id is not None:
            clauses.append("run_id = ?")
            params.append(run_id)
        if step_id is not None:
            clauses.append("step_id = ?")
            params.append(step_id)
        rows = self.conn.execute(
            f"SELECT {_CALL_SELECT} FROM llm_calls WHERE {' AND '.join(clauses)} ORDER BY id DESC LIMIT {int(limit)}",
            params,
        ).fetchall()
        return [_call(r) for r in rows]

    def llm_call(self, call_id: int) -> LLMCall | None:
        rows = self.conn.execute(f"SELECT {_CALL_SELECT} FROM llm_calls WHERE id = ?", (call_id,)).fetchall()
        return _call(rows[0]) if rows else None

    def step(self, step_id: int) -> Step | None:
        found = self._steps("id = ?", (step_id,))
        return found[0] if found else None

    # -- search ----------------------------------------------------------

    def search(self, text: str, *, limit: int = 50) -> list[SearchHit]:
        """Items whose key text matches every word (the bank's FTS5 index, best first),
        then items whose kernel source or verifier feedback holds the text as typed."""
        hits: list[SearchHit] = []
        query = fts_query(text)
        if query:
            rows = self.conn.execute(
                "SELECT i.id, i.kind, i.task_key, i.status, "
                f"snippet(items_fts, 0, '{_MARK_OPEN}', '{_MARK_CLOSE}', ' ... ', 16) "
                "FROM items_fts JOIN items i ON i.id = items_fts.rowid WHERE items_fts MATCH ? "
                "ORDER BY bm25(items_fts) LIMIT ?", (query, limit),
            ).fetchall()
            hits += [SearchHit(r[0], r[1], r[2], r[3], _marked(r[4]), MatchedIn.KEY_TEXT) for r in rows]
        needle = text.strip()
        if needle:
            seen = {h.item_id for h in hits}
            rows = self.conn.execute(
                "SELECT id, kind, task_key, status, content, feedback_json FROM items "
                "WHERE id > (SELECT coalesce(max(id), 0) FROM items) - ?2 "
                "AND (instr(lower(content), lower(?1)) OR instr(lower(feedback_json), lower(?1))) "
                "ORDER BY id DESC LIMIT ?3",
                (needle, _SUBSTRING_WINDOW, limit),
            ).fetchall()
            for r in rows:
                if r[0] in seen:
                    continue
                if needle.lower() in (r[4] or "").lower():
                    where, body = MatchedIn.KERNEL_SOURCE, r[4]
                else:
                    # The verifier's words when the text is in them, else the executor's whole record.
                    feedback = _loads(r[5])
                    words = f"{feedback.get('message') or ''}\n{feedback.get('feedback') or ''}"
                    where, body = MatchedIn.FEEDBACK, words if needle.lower() in words.lower() else r[5]
                hits.append(SearchHit(r[0], r[1], r[2], r[3], _excerpt(body or "", needle), where))
        return hits


def _marked(snippet: str) -> tuple[str, ...]:
    # re.split with one group alternates: text, match, text, match, ..., text.
    return tuple(_MARKED.split(snippet))


def _excerpt(body: str, needle: str, width: int = 80) -> tuple[str, ...]:
    at = body.lower().find(needle.lower())
    if at < 0:
        return (body[:width],)
    start = max(0, at - width)
    end = at + len(needle)
    return (("..." if start else "") + body[start:at], body[at:end], body[end:end + width] + ("..." if end + width < len(body) else ""))


def _lineage(attempts: Sequence[Attempt]) -> tuple[LineageRow, ...]:
    """The attempts as a forest, flattened depth first: a draft is a root, a refinement hangs
    under its start point. Iterative, so a chain of hundreds of refinements is no deeper a call."""
    by_id = {a.item.id: a for a in attempts}
    children: dict[int | None, list[Attempt]] = {}
    for a in attempts:
        parent = a.item.parent_id if a.item.parent_id in by_id else None
        children.setdefault(parent, []).append(a)
    rows: list[LineageRow] = []
    stack = [(a, 0) for a in reversed(children.get(None, []))]
    while stack:
        attempt, depth = stack.pop()
        rows.append(LineageRow(attempt, depth))
        stack.extend((c, depth + 1) for c in reversed(children.get(attempt.item.id, [])))
    return tuple(rows)


def value_history(item: Item, steps: Sequence[Step]) -> tuple[ValuePoint, ...]:
    """The item's values replayed from its start values through the steps that updated it
    (the same update the store applies), one point per step."""
    state = ValueState(item.q_draft_init, item.q_refine_init, 0, 0)
    points = []
    for s in steps:
        if item.id not in s.updated_item_ids:
            continue
        state = state.stepped(s.stage, s.value_target, s.alpha)
        points.append(ValuePoint(s.id, s.created_utc, s.stage, s.value_target, state.q_draft, state.q_refine))
    return tuple(points)
