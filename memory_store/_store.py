"""`MemoryStore`: the episodic memory over one SQLite file."""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import math
import random
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, TypeVar

import numpy as np

from . import _embed, _retrieval, _schema, _transfer
from ._rows import (
    ITEM_INSERT_COLUMNS,
    ITEM_INSERT_SQL,
    ITEM_SELECT,
    check_id,
    check_ids,
    check_kind,
    check_names,
    check_number,
    check_stage,
    check_text,
    dumps,
    prepare_item,
    row_to_item,
    utc_now,
)
from ._schema import database_error
from ._types import MODES, STAGES, ImportReport, Item, MemoryConfig, MemoryStoreError, Retrieved
from ._values import RewardStats, StepRecord, ValueState, replay, updated_ids

T = TypeVar("T")


class MemoryStore:
    """The episodic memory: items with two learned values, steps, LLM logs.

    Every write is one transaction (BEGIN IMMEDIATE, retried while another
    process holds the lock) in a WAL-mode file, so several processes can share
    a bank and a killed process loses nothing it had committed.
    """

    def __init__(self, path: str | Path, config: MemoryConfig | None = None):
        self.path = Path(path).expanduser()
        self.config = config or MemoryConfig()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = _schema.connect(
            self.path, busy_timeout_s=self.config.busy_timeout_s, synchronous=self.config.synchronous
        )
        self._lock = threading.RLock()
        self._rng = random.Random(self.config.seed)
        self._doc_freq: dict[str, int] = {}
        self._facets: dict[tuple[str, str, str], int] = {}
        self._task_counts: dict[str, int] = {}
        self._estimates_items = 0
        try:
            _schema.migrate(self.conn, retries=self.config.write_retries)
        except sqlite3.Error as exc:
            self.conn.close()
            raise database_error(self.path, exc) from exc
        except BaseException:
            self.conn.close()
            raise

    # -- plumbing ---------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            self.conn.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(self, fn: Callable[[], T]) -> T:
        with self._lock:
            return _schema.write(self.conn, fn, retries=self.config.write_retries)

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        with self._lock:
            return self.conn.execute(sql, params).fetchall()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[MemoryStore]:
        """Group several calls into one atomic write (e.g. an item and its step).

        The write lock is taken on entry; the block is not retried, so keep it
        short and free of slow work (LLM calls, kernel runs).
        """
        with self._lock:
            if self.conn.in_transaction:
                raise MemoryStoreError("transaction() blocks do not nest")
            try:
                self.conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise database_error(self.path, exc) from exc
            try:
                yield self
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise
            try:
                self.conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise database_error(self.path, exc) from exc

    def _items_where(self, where: str, params: Sequence[Any] = ()) -> list[Item]:
        return [row_to_item(r) for r in self._read(f"SELECT {ITEM_SELECT} FROM items WHERE {where}", params)]

    def _require(self, table: str, ids: Iterable[int], what: str) -> None:
        wanted = sorted(set(ids))
        if not wanted:
            return
        found = {
            r[0]
            for r in self.conn.execute(
                f"SELECT id FROM {table} WHERE id IN ({','.join('?' * len(wanted))})", wanted
            )
        }
        missing = [i for i in wanted if i not in found]
        if missing:
            raise MemoryStoreError(f"unknown {what} id(s): {', '.join(map(str, missing))}")

    # -- runs -------------------------------------------------------------

    def start_run(self, config: dict) -> int:
        config_json = dumps(config, "run config")

        def insert() -> int:
            cur = self.conn.execute(
                "INSERT INTO runs (started_utc, config_json, status) VALUES (?, ?, 'running')",
                (utc_now(), config_json),
            )
            return int(cur.lastrowid)

        return self._write(insert)

    def finish_run(self, run_id: int, status: str = "done") -> None:
        check_id(run_id, "run_id", allow_none=False)
        check_text(status, "status")

        def update() -> None:
            cur = self.conn.execute(
                "UPDATE runs SET status = ?, finished_utc = ? WHERE id = ?", (status, utc_now(), run_id)
            )
            if cur.rowcount == 0:
                raise MemoryStoreError(f"unknown run id: {run_id}")

        self._write(update)

    def runs(self) -> list[dict]:
        rows = self._read("SELECT id, started_utc, finished_utc, config_json, status FROM runs ORDER BY id")
        return [
            {"id": r[0], "started_utc": r[1], "finished_utc": r[2], "config": json.loads(r[3]), "status": r[4]}
            for r in rows
        ]

    # -- items ------------------------------------------------------------

    def add_item(
        self,
        *,
        kind: str,
        task_key: str,
        backend: str,
        key_text: str,
        content: str,
        stage: str = "draft",
        category: str = "",
        feedback: dict | None = None,
        reward: float | None = None,
        latency_ms: float | None = None,
        latency_source: str | None = None,
        status: str | None = None,
        parent_id: int | None = None,
        run_id: int | None = None,
        extra: dict | None = None,
        name: str = "",
    ) -> int:
        """Write one memory item; returns its id.

        `name` is the exact name `api_notes_by_name` matches; for an API note it
        defaults to the first word of `key_text`. An infinite `latency_ms` (a
        failed kernel) is stored as NULL. `latency_source` labels how the latency
        was obtained (backends.LatencySource): latencies compare only within one.
        """
        fields = dict(
            kind=kind, task_key=task_key, backend=backend, key_text=key_text, content=content,
            stage=stage, category=category, feedback=feedback, reward=reward,
            latency_ms=latency_ms, latency_source=latency_source, status=status, parent_id=parent_id,
            run_id=run_id, extra=extra, name=name,
        )
        return self.add_items([fields])[0]

    def add_items(self, items: Iterable[Mapping[str, Any]]) -> list[int]:
        """Write many items (the keyword arguments of `add_item`, as dicts) at once.

        All are checked first and written in one transaction: all or nothing.
        """
        rows = [
            prepare_item(fields, q_init=self.config.q_init, where=f"item {i}")
            for i, fields in enumerate(items)
        ]
        return self._write(lambda: self._insert_rows(rows))

    def _insert_rows(self, rows: Sequence[Mapping[str, Any]]) -> list[int]:
        self._require("items", (r["parent_id"] for r in rows if r["parent_id"] is not None), "parent item")
        self._require("runs", (r["run_id"] for r in rows if r["run_id"] is not None), "run")
        ids = []
        for row in rows:
            cur = self.conn.execute(ITEM_INSERT_SQL, [row[c] for c in ITEM_INSERT_COLUMNS])
            ids.append(int(cur.lastrowid))  # the FTS row comes from a trigger
        return ids

    def last_item_id(self) -> int:
        """The newest item's id (0 for an empty bank): a snapshot for `retrieve(as_of=...)`."""
        with self._lock:
            return self._item_count_estimate()

    def get_item(self, item_id: int) -> Item:
        check_id(item_id, "item_id", allow_none=False)
        items = self._items_where("id = ?", (item_id,))
        if not items:
            raise MemoryStoreError(f"unknown item id: {item_id}")
        return items[0]

    def get_items(self, item_ids: Sequence[int]) -> list[Item]:
        """Items by id, in the order asked; unknown ids raise."""
        ids = check_ids(item_ids, "item_ids")
        if not ids:
            return []
        by_id = {i.id: i for i in self._items_where(f"id IN ({','.join('?' * len(ids))})", ids)}
        missing = [i for i in ids if i not in by_id]
        if missing:
            raise MemoryStoreError(f"unknown item id(s): {', '.join(map(str, missing))}")
        return [by_id[i] for i in ids]

    def update_item(
        self,
        item_id: int,
        *,
        key_text: str | None = None,
        content: str | None = None,
        status: str | None = None,
        extra: dict | None = None,
    ) -> Item:
        """Rewrite an item's text, status or `extra` in place (a skill that gains evidence
        when a near-duplicate is merged into it); its values and visits are left as
        they are, and the full-text index follows `key_text`. Returns the item as stored."""
        check_id(item_id, "item_id", allow_none=False)
        sets: list[str] = []
        params: list[Any] = []
        if key_text is not None:
            sets.append("key_text = ?")
            params.append(check_text(key_text, "key_text"))
        if content is not None:
            sets.append("content = ?")
            params.append(check_text(content, "content", allow_empty=True))
        if status is not None:
            sets.append("status = ?")
            params.append(check_text(status, "status"))
        if extra is not None:
            sets.append("extra_json = ?")
            params.append(dumps(extra, "extra"))
        if sets:
            def update() -> None:
                cur = self.conn.execute(f"UPDATE items SET {', '.join(sets)} WHERE id = ?", [*params, item_id])
                if cur.rowcount == 0:
                    raise MemoryStoreError(f"unknown item id: {item_id}")

            self._write(update)
        return self.get_item(item_id)

    def list_items(
        self,
        *,
        kinds: list[str] | None = None,
        backends: list[str] | None = None,
        task_key: str | None = None,
        limit: int | None = 50,
        newest_first: bool = True,
    ) -> list[Item]:
        where, params = self._filter_sql(
            backends=None if backends is None else check_names(backends, "backends"),
            kinds=None if kinds is None else [check_kind(k) for k in check_names(kinds, "kinds")],
            only_task_key=task_key,
        )
        order = "DESC" if newest_first else "ASC"
        sql = f"{where} ORDER BY id {order}"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return self._items_where(sql, params)

    def api_notes_by_name(self, names: list[str], backend: str) -> list[Item]:
        """API notes of `backend` whose name is exactly one of `names`, in that order."""
        wanted = check_names(names, "names")
        check_text(backend, "backend")
        if not wanted:
            return []
        found = self._items_where(
            f"kind = 'api_note' AND backend = ? AND name IN ({','.join('?' * len(wanted))}) ORDER BY id",
            [backend, *wanted],
        )
        rank = {name: i for i, name in reversed(list(enumerate(wanted)))}
        return sorted(found, key=lambda item: (rank[item.name], item.id))

    def feasible_items(self, task_key: str, backend: str, *, statuses: Sequence[str]) -> list[Item]:
        """This task's traces whose status is one of `statuses` (the verdicts the
        executor calls feasible), fastest first (untimed last)."""
        statuses = check_names(list(statuses), "statuses")
        if not statuses:
            raise MemoryStoreError("statuses must name at least one feasible verdict")
        return self._items_where(
            f"task_key = ? AND backend = ? AND kind = 'trace' AND status IN ({','.join('?' * len(statuses))}) "
            "ORDER BY latency_ms IS NULL, latency_ms, id",
            [task_key, backend, *statuses],
        )

    def best_item(self, task_key: str, backend: str, *, statuses: Sequence[str]) -> Item | None:
        """The lowest-latency feasible trace, or None when the task has none."""
        feasible = self.feasible_items(task_key, backend, statuses=statuses)
        return feasible[0] if feasible else None

    # -- retrieval --------------------------------------------------------

    def _filter_sql(
        self,
        *,
        backends: Sequence[str] | None = None,
        kinds: Sequence[str] | None = None,
        categories: Sequence[str] | None = None,
        only_task_key: str | None = None,
        exclude_task_keys: Sequence[str] | None = None,
        visible: tuple[int, str | None] | None = None,
        statuses: Sequence[str] | None = None,
        alias: str = "",
    ) -> tuple[str, list[Any]]:
        clauses, params = ["1"], []
        if visible is not None:
            # A snapshot: items up to an id, plus those of one task written since.
            upto, own_task = visible
            clauses.append(f"({alias}id <= ? OR {alias}task_key = ?)")
            params.extend([upto, own_task if own_task is not None else ""])
        for column, values in (("backend", backends), ("kind", kinds), ("category", categories), ("status", statuses)):
            if values:
                clauses.append(f"{alias}{column} IN ({','.join('?' * len(values))})")
                params.extend(values)
        if only_task_key is not None:
            clauses.append(f"{alias}task_key = ?")
            params.append(only_task_key)
        if exclude_task_keys:
            clauses.append(f"{alias}task_key NOT IN ({','.join('?' * len(exclude_task_keys))})")
            params.extend(exclude_task_keys)
        return " AND ".join(clauses), params

    def _item_count_estimate(self) -> int:
        # max(id) is a single b-tree descent; count(*) reads the whole table.
        return int(self.conn.execute("SELECT coalesce(max(id), 0) FROM items").fetchone()[0])

    def _refresh_estimates(self, items: int) -> None:
        # Term and facet counts only steer how many terms a query keeps, so a
        # slightly stale count is harmless; they are recounted once the bank
        # has grown by a tenth (or another process has added that much).
        if items > self._estimates_items * 1.1 + 100:
            self._doc_freq.clear()
            self._facets = {}
            self._task_counts = {}
            self._estimates_items = items

    # Estimates look at the newest ids only, so their cost stays bounded
    # however large the bank grows.
    _SAMPLE_IDS = 200_000

    def _doc_freqs(self, terms: Sequence[str], items: int) -> dict[str, int]:
        """Posting-list sizes of the terms, estimated from the newest ids and cached."""
        floor = max(0, items - self._SAMPLE_IDS)
        scale = items / max(1, items - floor)
        for term in terms:
            if term not in self._doc_freq:
                sampled = self.conn.execute(
                    "SELECT count(*) FROM items_fts WHERE items_fts MATCH ? AND rowid > ?", (f'"{term}"', floor)
                ).fetchone()[0]
                self._doc_freq[term] = round(sampled * scale)
        return {t: self._doc_freq[t] for t in terms}

    def _selectivity(self, filters: dict[str, Any], items: int) -> float:
        """Share of the newest items passing the filters (joint over kind x backend x category)."""
        if not self._facets:
            self._facets = {
                (r[0], r[1], r[2]): r[3]
                for r in self.conn.execute(
                    "SELECT kind, backend, category, count(*) FROM items INDEXED BY items_filter "
                    "WHERE id > ? GROUP BY 1, 2, 3",
                    (max(0, items - self._SAMPLE_IDS // 10),),
                )
            }
        total = sum(self._facets.values()) or 1
        kinds, backends, categories = filters["kinds"], filters["backends"], filters["categories"]
        passing = sum(
            c for (k, b, cat), c in self._facets.items()
            if (not kinds or k in kinds) and (not backends or b in backends) and (not categories or cat in categories)
        )
        share = passing / total
        task = filters["only_task_key"]
        if task is not None:
            if task not in self._task_counts:
                self._task_counts[task] = self.conn.execute(
                    "SELECT count(*) FROM items WHERE task_key = ?", (task,)
                ).fetchone()[0]
            share = min(share, self._task_counts[task] / max(1, items))
        return share

    def _recall_bm25(self, query: str, k: int, items: int, filters: dict[str, Any]) -> list[tuple[int, float]]:
        cfg = self.config
        terms = _retrieval.query_terms(query, limit=cfg.recall_max_query_terms)
        where, params = self._filter_sql(**filters, alias="i.")
        filtered = where != "1"
        hits: list[tuple[int, float]] = []
        if terms:
            self._refresh_estimates(items)
            budget = _retrieval.postings_budget(
                cfg.recall_budget, self._selectivity(filters, items) if filtered else None, cfg.recall_filter_cost_ratio
            )
            doc_freq = self._doc_freqs(terms, items)
            # The join order is forced (CROSS JOIN): walk the FTS matches and
            # check each against the narrow index, never the other way round.
            sql = (
                "SELECT items_fts.rowid, bm25(items_fts) AS rank FROM items_fts "
                + ("CROSS JOIN items AS i INDEXED BY items_filter ON i.id = items_fts.rowid " if filtered else "")
                + f"WHERE items_fts MATCH ? AND items_fts.rowid > ? AND {where} ORDER BY rank LIMIT ?"
            )
            tried: tuple[list[str], int] | None = None
            # Filters can leave the rare terms' matches short of K: then retry
            # once with a larger budget (more, commoner terms, a wider window).
            for attempt_budget in (budget, budget * cfg.recall_topup_factor):
                kept = _retrieval.prune_terms(doc_freq, attempt_budget)
                floor = _retrieval.recency_floor(items, sum(doc_freq[t] for t in kept), attempt_budget)
                if not kept or (kept, floor) == tried:
                    break
                tried = (kept, floor)
                rows = self.conn.execute(sql, (_retrieval.match_expression(kept), floor, *params, k)).fetchall()
                # bm25() is lower-is-better; flip it so similarity grows with match.
                hits = [(int(r[0]), -float(r[1])) for r in rows]
                if len(hits) >= k:
                    break
        if hits:
            return hits
        # Nothing matched: still offer the newest items that pass the filters,
        # so an operator unlike anything seen gets value-ranked memories.
        where, params = self._filter_sql(**filters)
        rows = self.conn.execute(f"SELECT id FROM items WHERE {where} ORDER BY id DESC LIMIT ?", (*params, k))
        return [(int(r[0]), 0.0) for r in rows]

    def _recall_dense(self, query: str, k: int, embedder: _embed.Embedder, filters: dict[str, Any]) -> list[tuple[int, float]]:
        model = _embed.embedder_model(embedder)
        where, params = self._filter_sql(**filters, alias="i.")
        rows = self.conn.execute(
            f"SELECT e.item_id, e.dim, e.vector FROM embeddings e JOIN items i ON i.id = e.item_id "
            f"WHERE e.model = ? AND {where} ORDER BY e.item_id",
            (model, *params),
        ).fetchall()
        if not rows:
            return []
        matrix = np.stack([_embed.from_blob(r[2], r[1]) for r in rows])
        query_vec = _embed.embed_checked(embedder, [query])[0]
        if query_vec.shape[0] != matrix.shape[1]:
            raise MemoryStoreError(
                f"query embedding has {query_vec.shape[0]} dims, stored {model!r} vectors have {matrix.shape[1]}"
            )
        top, cos = _embed.cosine_top_k(query_vec, matrix, k)
        return [(int(rows[i][0]), float(c)) for i, c in zip(top, cos)]

    def retrieve(
        self,
        query: str,
        *,
        stage: str,
        n: int | None = None,
        mode: str = "value",
        backends: list[str] | None = None,
        kinds: list[str] | None = None,
        exclude_task_keys: list[str] | None = None,
        only_task_key: str | None = None,
        rng: random.Random | None = None,
        categories: list[str] | None = None,
        epsilon: float | None = None,
        pool_size: int | None = None,
        embedder: _embed.Embedder | None = None,
        as_of: int | None = None,
        as_of_task_key: str | None = None,
        statuses: list[str] | None = None,
    ) -> list[Retrieved]:
        """Two-phase retrieval across all tasks.

        Recall the K = lambda(bank size) * n items closest to `query` (BM25 over
        key_text, or cosine when an `embedder` is given) among those passing the
        filters, then select n of them by the stage's value (`mode`, see
        `_retrieval.select`). `epsilon` overrides the config's (to decay it);
        `pool_size` overrides K; `rng` makes the picks reproducible.
        `as_of` (an item id, see `last_item_id`) limits recall to the items that
        existed then, plus those of `as_of_task_key` written since: concurrent
        steps of one outer iteration see the same bank. `statuses` keeps only
        items with one of these statuses (e.g. admitted skills, not rejected ones).
        """
        check_text(query, "query", allow_empty=True)
        check_stage(stage)
        if mode not in MODES:
            raise MemoryStoreError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
        n = self.config.n if n is None else n
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise MemoryStoreError(f"n must be a positive integer, got {n!r}")
        eps = self.config.epsilon if epsilon is None else check_number(epsilon, "epsilon", allow_none=False)
        if not 0.0 <= eps <= 1.0:
            raise MemoryStoreError(f"epsilon must be in [0, 1], got {eps}")
        filters = {
            "backends": None if backends is None else check_names(backends, "backends"),
            "kinds": None if kinds is None else [check_kind(k) for k in check_names(kinds, "kinds")],
            "categories": None if categories is None else check_names(categories, "categories"),
            "only_task_key": None if only_task_key is None else check_text(only_task_key, "only_task_key"),
            "exclude_task_keys": None if exclude_task_keys is None else check_names(exclude_task_keys, "exclude_task_keys"),
            "visible": None if as_of is None else (check_id(as_of, "as_of", allow_none=False), as_of_task_key),
            "statuses": None if statuses is None else check_names(statuses, "statuses"),
        }
        with self._lock:
            items = self._item_count_estimate()
            k = self.config.pool_size(n, items) if pool_size is None else max(n, int(pool_size))
            if embedder is not None:
                hits = self._recall_dense(query, k, embedder, filters)
            else:
                hits = self._recall_bm25(query, k, items, filters)
            if not hits:
                return []
            ids = [h[0] for h in hits]
            column = "q_draft" if stage == "draft" else "q_refine"
            values = dict(
                self.conn.execute(
                    f"SELECT id, {column} FROM items WHERE id IN ({','.join('?' * len(ids))})", ids
                ).fetchall()
            )
            pool = [_retrieval.Candidate(i, s, float(values[i])) for i, s in hits if i in values]
            picks = _retrieval.select(
                pool, n=n, mode=mode, epsilon=eps, mix_weight=self.config.mix_weight, rng=rng or self._rng
            )
            chosen = self.get_items([p.candidate.item_id for p in picks])
        return [
            Retrieved(item=item, similarity=p.candidate.similarity, value=p.candidate.value, score=p.score, explored=p.explored)
            for item, p in zip(chosen, picks)
        ]

    # -- values -----------------------------------------------------------

    def record_step(
        self,
        *,
        run_id: int,
        task_key: str,
        backend: str,
        stage: str,
        reward: float,
        context_item_ids: list[int],
        start_point_id: int | None = None,
        result_item_id: int | None = None,
    ) -> int:
        """Log one agent step and apply its value updates, in one transaction.

        Every item of the context and the start point moves its stage value
        toward the reward (normalised first in the config's `normalized_stages`,
        none by default): Q <- Q + alpha (r - Q).
        """
        check_id(run_id, "run_id", allow_none=False)
        check_text(task_key, "task_key")
        check_text(backend, "backend")
        check_stage(stage)
        reward_f = check_number(reward, "reward", allow_none=False)
        if math.isinf(reward_f):
            raise MemoryStoreError("reward must be finite")
        context = check_ids(context_item_ids, "context_item_ids")
        check_id(start_point_id, "start_point_id")
        check_id(result_item_id, "result_item_id")
        ids = updated_ids(context, start_point_id)
        cfg = self.config

        def apply() -> int:
            self._require("runs", [run_id], "run")
            self._require("items", [*ids, *([result_item_id] if result_item_id is not None else [])], "item")
            stats = self._reward_stats(stage).updated(reward_f, cfg.reward_momentum)
            self.conn.execute(
                "INSERT OR REPLACE INTO reward_stats (stage, count, mean, mean_sq, var, updated_utc) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (stage, stats.count, stats.mean, stats.mean_sq, stats.var, utc_now()),
            )
            normalized = stats.normalize(reward_f, cfg.reward_sigma_floor) if stage in cfg.normalized_stages else None
            target = reward_f if normalized is None else normalized
            if ids:
                rows = self.conn.execute(
                    "SELECT id, q_draft, q_refine, visits_draft, visits_refine FROM items "
                    f"WHERE id IN ({','.join('?' * len(ids))})",
                    ids,
                ).fetchall()
                new = [(r[0], ValueState(*r[1:]).stepped(stage, target, cfg.alpha)) for r in rows]
                self.conn.executemany(
                    "UPDATE items SET q_draft = ?, q_refine = ?, visits_draft = ?, visits_refine = ? WHERE id = ?",
                    [(s.q_draft, s.q_refine, s.visits_draft, s.visits_refine, i) for i, s in new],
                )
            cur = self.conn.execute(
                "INSERT INTO steps (run_id, task_key, backend, stage, reward, normalized_reward, value_target, "
                "alpha, context_item_ids_json, start_point_id, result_item_id, updated_item_count, created_utc) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, task_key, backend, stage, reward_f, normalized, target, cfg.alpha,
                 json.dumps(context), start_point_id, result_item_id, len(ids), utc_now()),
            )
            return int(cur.lastrowid)

        return self._write(apply)

    def _reward_stats(self, stage: str) -> RewardStats:
        row = self.conn.execute("SELECT count, mean, mean_sq FROM reward_stats WHERE stage = ?", (stage,)).fetchone()
        return RewardStats(*row) if row else RewardStats()

    def reward_stats(self) -> dict[str, dict[str, float]]:
        """Running reward statistics per stage, with the sigma used to normalise."""
        with self._lock:
            out = {}
            for stage in STAGES:
                s = self._reward_stats(stage)
                out[stage] = {"count": s.count, "mean": s.mean, "var": s.var, "sigma": s.sigma(self.config.reward_sigma_floor)}
            return out

    def steps(self, run_id: int | None = None, task_key: str | None = None) -> list[dict]:
        """Logged steps in order; `context_item_ids` decoded from its JSON column."""
        clauses, params = ["1"], []
        if run_id is not None:
            clauses.append("run_id = ?")
            params.append(check_id(run_id, "run_id"))
        if task_key is not None:
            clauses.append("task_key = ?")
            params.append(task_key)
        cur = None
        with self._lock:
            cur = self.conn.execute(f"SELECT * FROM steps WHERE {' AND '.join(clauses)} ORDER BY id", params)
            names = [d[0] for d in cur.description]
            rows = cur.fetchall()
        out = []
        for row in rows:
            record = dict(zip(names, row))
            record["context_item_ids"] = json.loads(record.pop("context_item_ids_json"))
            out.append(record)
        return out

    def values_from_steps(self, alpha: float | None = None) -> dict[int, ValueState]:
        """Every item's values replayed from its start values and the steps table.

        Read-only: the audit of what `record_step` wrote, or a what-if with
        another `alpha`.
        """
        with self._lock:
            initial = {
                r[0]: ValueState(*r[1:])
                for r in self.conn.execute(
                    "SELECT id, q_draft_init, q_refine_init, visits_draft_init, visits_refine_init FROM items"
                )
            }
            steps = [
                StepRecord(r[0], r[1], r[2], updated_ids(json.loads(r[3]), r[4]))
                for r in self.conn.execute(
                    "SELECT stage, value_target, alpha, context_item_ids_json, start_point_id FROM steps ORDER BY id"
                )
            ]
        return replay(initial, steps, alpha=alpha)

    def recompute_values(self, alpha: float | None = None) -> None:
        """Rebuild all values from the steps table and write them back.

        With `alpha=None` each step's recorded alpha is used and the result
        equals the incremental values exactly; another alpha replays history
        as if it had been used throughout.
        """
        if alpha is not None:
            alpha = check_number(alpha, "alpha", allow_none=False)
            if not 0.0 < alpha <= 1.0:
                raise MemoryStoreError(f"alpha must be in (0, 1], got {alpha}")

        def rewrite() -> None:
            # Inside the write transaction, so no step can land between the
            # replay and the write-back.
            states = self.values_from_steps(alpha)
            current = {
                r[0]: ValueState(*r[1:])
                for r in self.conn.execute("SELECT id, q_draft, q_refine, visits_draft, visits_refine FROM items")
            }
            changed = [(s.q_draft, s.q_refine, s.visits_draft, s.visits_refine, i) for i, s in states.items() if current.get(i) != s]
            self.conn.executemany(
                "UPDATE items SET q_draft = ?, q_refine = ?, visits_draft = ?, visits_refine = ? WHERE id = ?", changed
            )

        self._write(rewrite)

    # -- dense retrieval seam ---------------------------------------------

    def embed_items(self, embedder: _embed.Embedder, *, batch_size: int = 256) -> int:
        """Store vectors for the items that have none under this embedder; returns how many."""
        model = _embed.embedder_model(embedder)
        todo = self._read(
            "SELECT id, key_text FROM items WHERE id NOT IN (SELECT item_id FROM embeddings WHERE model = ?) ORDER BY id",
            (model,),
        )
        done = 0
        for start in range(0, len(todo), batch_size):
            batch = todo[start : start + batch_size]
            try:
                vectors = _embed.embed_checked(embedder, [r[1] for r in batch])
            except ValueError as exc:
                raise MemoryStoreError(str(exc)) from exc
            rows = [(r[0], model, vectors.shape[1], _embed.to_blob(v)) for r, v in zip(batch, vectors)]
            self._write(
                lambda: self.conn.executemany(
                    "INSERT OR REPLACE INTO embeddings (item_id, model, dim, vector) VALUES (?, ?, ?, ?)", rows
                )
            )
            done += len(rows)
        return done

    # -- LLM log and cache ------------------------------------------------

    def log_llm_call(
        self,
        *,
        provider: str,
        model: str,
        prompt: dict,
        response_text: str,
        tokens_in: int,
        tokens_out: int,
        cost_usd: float | None,
        latency_ms: float,
        run_id: int | None = None,
        step_id: int | None = None,
        error: str | None = None,
    ) -> int:
        check_text(provider, "provider")
        check_text(model, "model")
        prompt_json = dumps(prompt, "prompt")
        check_text(response_text, "response_text", allow_empty=True)
        for value, what in ((tokens_in, "tokens_in"), (tokens_out, "tokens_out")):
            if check_id(value, what, allow_none=False) < 0:  # type: ignore[operator]
                raise MemoryStoreError(f"{what} must be >= 0")
        cost = check_number(cost_usd, "cost_usd")
        latency = check_number(latency_ms, "latency_ms", allow_none=False)
        check_id(run_id, "run_id")
        check_id(step_id, "step_id")
        if error is not None:
            check_text(error, "error", allow_empty=True)

        def insert() -> int:
            if run_id is not None:
                self._require("runs", [run_id], "run")
            if step_id is not None:
                self._require("steps", [step_id], "step")
            cur = self.conn.execute(
                "INSERT INTO llm_calls (run_id, step_id, provider, model, tokens_in, tokens_out, cost_usd, "
                "latency_ms, error, created_utc, prompt_json, response_text) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, step_id, provider, model, tokens_in, tokens_out, cost, latency, error, utc_now(),
                 prompt_json, response_text),
            )
            return int(cur.lastrowid)

        return self._write(insert)

    def link_llm_calls(self, call_ids: list[int], *, step_id: int) -> None:
        """Mark logged calls as made for `step_id`: a call is logged when it returns, its
        step only when the step commits (inside the same transaction, as a rule)."""
        ids = check_ids(call_ids, "call_ids")
        check_id(step_id, "step_id", allow_none=False)
        if not ids:
            return

        def update() -> None:
            self._require("steps", [step_id], "step")
            self.conn.execute(f"UPDATE llm_calls SET step_id = ? WHERE id IN ({','.join('?' * len(ids))})",
                              [step_id, *ids])

        self._write(update)

    def llm_calls(self, *, run_id: int | None = None, limit: int | None = None) -> list[dict]:
        """Logged LLM calls, oldest first; `prompt` decoded from `prompt_json`."""
        sql, params = "SELECT * FROM llm_calls", []
        if run_id is not None:
            sql += " WHERE run_id = ?"
            params.append(run_id)
        sql += " ORDER BY id"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self._lock:
            cur = self.conn.execute(sql, params)
            names = [d[0] for d in cur.description]
            rows = cur.fetchall()
        out = []
        for row in rows:
            record = dict(zip(names, row))
            record["prompt"] = json.loads(record.pop("prompt_json"))
            out.append(record)
        return out

    def cache_get(self, request_hash: str) -> dict | None:
        rows = self._read("SELECT response_json FROM llm_cache WHERE request_hash = ?", (check_text(request_hash, "request_hash"),))
        return json.loads(rows[0][0]) if rows else None

    def cache_put(self, request_hash: str, response: dict) -> None:
        check_text(request_hash, "request_hash")
        response_json = dumps(response, "response")
        self._write(
            lambda: self.conn.execute(
                "INSERT OR REPLACE INTO llm_cache (request_hash, created_utc, response_json) VALUES (?, ?, ?)",
                (request_hash, utc_now(), response_json),
            )
        )

    # -- whole bank -------------------------------------------------------

    def stats(self) -> dict:
        """Counts for a summary: items, tasks, by_kind, by_backend, value_updates, runs, steps, ..."""
        with self._lock:
            one = lambda sql: self.conn.execute(sql).fetchone()[0]  # noqa: E731
            by_kind = dict(self.conn.execute("SELECT kind, count(*) FROM items GROUP BY kind ORDER BY kind").fetchall())
            by_backend = dict(self.conn.execute("SELECT backend, count(*) FROM items GROUP BY backend ORDER BY backend").fetchall())
            size = sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())
            return {
                "path": str(self.path),
                "items": sum(by_kind.values()),
                "tasks": one("SELECT count(*) FROM (SELECT DISTINCT task_key FROM items)"),
                "by_kind": by_kind,
                "by_backend": by_backend,
                "value_updates": one("SELECT coalesce(sum(updated_item_count), 0) FROM steps"),
                "runs": one("SELECT count(*) FROM runs"),
                "steps": one("SELECT count(*) FROM steps"),
                "llm_calls": one("SELECT count(*) FROM llm_calls"),
                "llm_cost_usd": one("SELECT coalesce(sum(cost_usd), 0) FROM llm_calls"),
                "embeddings": one("SELECT count(*) FROM embeddings"),
                "reward_stats": self.reward_stats(),
                "migrations": _schema.applied_migrations(self.conn),
                "size_bytes": size,
            }

    def value_summary(self, *, top: int = 5) -> dict:
        """The learned values at a glance: per kind, how many items were visited in each
        stage and the mean, min and max of Q_draft and Q_refine; the `top` items by each."""
        if isinstance(top, bool) or not isinstance(top, int) or top < 0:
            raise MemoryStoreError(f"top must be a non-negative integer, got {top!r}")
        with self._lock:
            rows = self.conn.execute(
                "SELECT kind, count(*), sum(visits_draft > 0), sum(visits_refine > 0), "
                "avg(q_draft), min(q_draft), max(q_draft), avg(q_refine), min(q_refine), max(q_refine) "
                "FROM items GROUP BY kind ORDER BY kind"
            ).fetchall()
            by_kind = {
                r[0]: {"items": r[1], "visited_draft": r[2] or 0, "visited_refine": r[3] or 0,
                       "q_draft": {"mean": r[4], "min": r[5], "max": r[6]},
                       "q_refine": {"mean": r[7], "min": r[8], "max": r[9]}}
                for r in rows
            }
            best = {}
            for stage in STAGES:
                q, visits = f"q_{stage}", f"visits_{stage}"
                best[stage] = [
                    {"id": r[0], "kind": r[1], "task_key": r[2], "backend": r[3], q: r[4], visits: r[5]}
                    for r in self.conn.execute(
                        f"SELECT id, kind, task_key, backend, {q}, {visits} FROM items WHERE {visits} > 0 "
                        f"ORDER BY {q} DESC, id LIMIT ?", (top,)
                    ).fetchall()
                ]
            return {"by_kind": by_kind, "top": best}

    def integrity_check(self) -> list[str]:
        """Problems SQLite finds in the file and the FTS index; empty when sound."""
        with self._lock:
            problems = [r[0] for r in self.conn.execute("PRAGMA integrity_check").fetchall() if r[0] != "ok"]
            try:
                self.conn.execute("INSERT INTO items_fts (items_fts, rank) VALUES ('integrity-check', 0)")
            except sqlite3.DatabaseError as exc:
                problems.append(f"items_fts: {exc}")
            return problems

    def export_jsonl(self, fp: IO[str]) -> int:
        """Write the bank's items with their values as JSON lines; returns the item count."""
        with self._lock:
            return _transfer.export_items(self.conn, fp)

    def import_jsonl(self, fp: IO[str]) -> int:
        """Merge an export into this bank; returns how many items were added."""
        return self.import_jsonl_report(fp).imported

    def import_jsonl_report(self, fp: IO[str]) -> ImportReport:
        """Like `import_jsonl`, with the skipped (already present) count.

        Every line is checked before anything is written, then all items go in
        one transaction: a bad line names its number and leaves the bank as it
        was. Ids are remapped, parent links kept, items already here (same uid)
        skipped, and carried values become the items' start values.
        """
        records = _transfer.parse_export(fp)
        return self._write(lambda: _transfer.insert_records(self.conn, records, self._insert_rows))



def _guarded(fn: Callable[..., T]) -> Callable[..., T]:
    @functools.wraps(fn)
    def call(self: MemoryStore, *args: Any, **kwargs: Any) -> T:
        try:
            return fn(self, *args, **kwargs)
        except sqlite3.Error as exc:
            raise database_error(self.path, exc) from exc

    return call


# Every public method speaks MemoryStoreError, never a bare sqlite3 error: a
# damaged file must give the caller one clear line, not a traceback.
for _name, _fn in list(vars(MemoryStore).items()):
    if not _name.startswith("_") and inspect.isfunction(_fn) and _name not in ("transaction", "close"):
        setattr(MemoryStore, _name, _guarded(_fn))
