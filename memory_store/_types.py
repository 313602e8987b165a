"""Value types shared by the memory modules: configuration, rows, errors."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

KINDS: tuple[str, ...] = ("api_note", "experience", "trace", "best_practice")
STAGES: tuple[str, ...] = ("draft", "refine")
MODES: tuple[str, ...] = ("value", "mix", "similarity")


class MemoryStoreError(ValueError):
    """Bad input or an unusable memory file; the message says which and why.

    Raised before anything is written: a failed call leaves the bank as it was.
    """


class MemoryCorruptError(MemoryStoreError):
    """SQLite found the file damaged (or not a database at all): the message
    names the file and points at `evokernel memory check`."""


@dataclass(frozen=True)
class CheckReport:
    """What `check_memory_file` found: `problems` empty means the file is sound."""

    path: str
    problems: tuple[str, ...]
    notes: tuple[str, ...] = ()
    migrations: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class MemoryConfig:
    """Everything that shapes learning and retrieval, frozen so a run can record it.

    Learning (the README's "What it does" and "The memory"): `alpha` is the Monte Carlo step size,
    `q_init` the value of a new item, `epsilon` the exploration rate of the
    epsilon-greedy selection, `mix_weight` the `w` of MemRL's mixed score.
    The stages in `normalized_stages` have their rewards normalised PopArt-style
    with a running mean and second moment (`reward_momentum`), sigma floored at
    `reward_sigma_floor` so a run of identical rewards cannot blow the normalised
    reward up. None by default: the running mean moves as the memory improves, so
    the same outcome moved an item's value by a different amount depending on when
    it happened, and values stopped ranking what the items were worth (with
    normalised refine rewards the learned values anti-correlated with the items'
    utility in benchmarks/learning_sim.py; raw rewards, already in [-1, 1], did not).

    Recall pool: K = ceil(lambda * n) with
        lambda = min(recall_factor_max,
                     recall_factor + recall_growth_per_decade
                                     * max(0, log10(items / recall_growth_from_items)))
    so lambda is 2 up to 1,000 items, 4 at 10k, 6 at 100k, 8 at 1M (the paper saw
    accuracy rise with a larger pool; a larger bank can afford one).

    BM25 recall is approximate on purpose, so its cost stays flat as the bank
    grows. FTS5 computes bm25() for every match that passes the filters (about
    2-3 us each on a server core), so query terms are kept rarest first while
    their posting lists fit a budget of about `recall_budget` bm25 calls
    (filters, checked per posting at `recall_filter_cost_ratio` of a bm25
    call, allow a longer list when they pass few rows). The dropped common
    terms carry little IDF weight but would dominate the cost. If even the
    rarest term is over budget, only the newest items holding it are scored.
    When filters leave fewer than K matches, recall is retried once with
    `recall_topup_factor` times the budget. A query with no matching term falls
    back to the newest items passing the filters.
    """

    # 0.1, not the paper's 0.3: a shorter average of noisy rewards ranked the memories worse
    # (benchmarks/learning_sim.py: at 0.1, +3.9 points of success on each of 5 seeds).
    alpha: float = 0.1
    q_init: float = 0.0
    epsilon: float = 0.1
    n: int = 5
    mix_weight: float = 0.5
    recall_factor: float = 2.0
    recall_growth_per_decade: float = 2.0
    recall_growth_from_items: int = 1_000
    recall_factor_max: float = 16.0
    recall_budget: int = 2_000
    recall_filter_cost_ratio: float = 0.35
    recall_topup_factor: int = 4
    recall_max_query_terms: int = 32
    reward_momentum: float = 0.99
    reward_sigma_floor: float = 0.1
    normalized_stages: tuple[str, ...] = ()
    busy_timeout_s: float = 30.0
    write_retries: int = 8
    # NORMAL in WAL mode survives a killed process (the OS keeps the written
    # pages); only a power cut can drop the last commits. FULL fsyncs each one.
    synchronous: str = "NORMAL"
    seed: int | None = None

    def __post_init__(self) -> None:
        checks = [
            (0.0 < self.alpha <= 1.0, "alpha must be in (0, 1]"),
            (0.0 <= self.epsilon <= 1.0, "epsilon must be in [0, 1]"),
            (self.n >= 1, "n must be >= 1"),
            (0.0 <= self.mix_weight <= 1.0, "mix_weight must be in [0, 1]"),
            (self.recall_factor >= 1.0, "recall_factor must be >= 1"),
            (self.recall_factor_max >= self.recall_factor, "recall_factor_max must be >= recall_factor"),
            (self.recall_growth_per_decade >= 0.0, "recall_growth_per_decade must be >= 0"),
            (self.recall_growth_from_items >= 1, "recall_growth_from_items must be >= 1"),
            (self.recall_budget >= 1, "recall_budget must be >= 1"),
            (self.recall_filter_cost_ratio > 0.0, "recall_filter_cost_ratio must be > 0"),
            (self.recall_topup_factor >= 1, "recall_topup_factor must be >= 1"),
            (self.recall_max_query_terms >= 1, "recall_max_query_terms must be >= 1"),
            (0.0 <= self.reward_momentum < 1.0, "reward_momentum must be in [0, 1)"),
            (self.reward_sigma_floor > 0.0, "reward_sigma_floor must be > 0"),
            (set(self.normalized_stages) <= set(STAGES), f"normalized_stages must be within {STAGES}"),
            (self.busy_timeout_s >= 0.0, "busy_timeout_s must be >= 0"),
            (self.write_retries >= 0, "write_retries must be >= 0"),
            (self.synchronous.upper() in ("OFF", "NORMAL", "FULL", "EXTRA"), "synchronous must be OFF, NORMAL, FULL or EXTRA"),
        ]
        for ok, message in checks:
            if not ok:
                raise MemoryStoreError(f"MemoryConfig: {message}")

    def recall_lambda(self, items: int) -> float:
        if items <= self.recall_growth_from_items:
            return self.recall_factor
        grown = self.recall_factor + self.recall_growth_per_decade * math.log10(
            items / self.recall_growth_from_items
        )
        return min(self.recall_factor_max, grown)

    def pool_size(self, n: int, items: int) -> int:
        return max(n, math.ceil(self.recall_lambda(items) * n))


@dataclass(frozen=True)
class Item:
    """One memory row, JSON columns decoded (`feedback`, `extra`).

    `q_*_init` and `visits_*_init` are where replay starts: the config's
    `q_init` for items made here, the carried values for imported ones.
    """

    id: int
    uid: str
    kind: str
    task_key: str
    backend: str
    category: str
    stage: str
    name: str
    key_text: str
    content: str
    feedback: dict[str, Any]
    reward: float | None
    latency_ms: float | None
    latency_source: str | None  # how latency_ms was obtained (backends.LatencySource's label); None: not recorded
    status: str | None
    parent_id: int | None
    q_draft: float
    q_refine: float
    visits_draft: int
    visits_refine: int
    q_draft_init: float
    q_refine_init: float
    visits_draft_init: int
    visits_refine_init: int
    created_utc: str
    run_id: int | None
    extra: dict[str, Any]

    def value(self, stage: str) -> float:
        return self.q_draft if stage == "draft" else self.q_refine

    def visits(self, stage: str) -> int:
        return self.visits_draft if stage == "draft" else self.visits_refine


@dataclass(frozen=True)
class Retrieved:
    """One retrieval result.

    `similarity` is the recall score (minus FTS5's bm25, higher is closer; or a
    cosine with an embedder; 0 when the query had no usable term), `value` the
    stage's Q, `score` what the selection rule ranked by, `explored` whether
    the epsilon branch picked it rather than the greedy one.
    """

    item: Item
    similarity: float
    value: float
    score: float
    explored: bool = False


@dataclass(frozen=True)
class ImportReport:
    imported: int
    skipped: int
    lines: int


def default_memory_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where the memory lives unless told otherwise.

    `EVOKERNEL_HOME/memory.db` if `environ` sets it, else `XDG_DATA_HOME/evokernel/memory.db`,
    else `~/.local/share/evokernel/memory.db`. The caller passes the environment (the CLI
    passes its own, read at the edge); the library reads none. Nothing is created here.
    """
    environ = environ or {}
    home = environ.get("EVOKERNEL_HOME")
    if home:
        return Path(home).expanduser() / "memory.db"
    data = environ.get("XDG_DATA_HOME")
    base = Path(data).expanduser() if data else Path.home() / ".local" / "share"
    return base / "evokernel" / "memory.db"
