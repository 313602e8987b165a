"""Two-phase retrieval: BM25 recall in FTS5, then selection by value.

Recall builds an FTS5 MATCH expression from sanitised query terms; filters
are checked per match against a narrow covering index. Selection is a pure
function of the recalled pool and a `random.Random`, so a seeded run picks
the same items every time.
"""

from __future__ import annotations

import random
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


# Letters and digits only: anything else (quotes, `*`, `:`, `-`, parentheses,
# NEAR, AND) would be FTS5 syntax. Underscores split, as the tokenizer does.
_TERM = re.compile(r"[^\W_]+", re.UNICODE)
# FTS5 operators spelt as bare words; quoted they would be ordinary terms, but
# they carry no meaning in a task description either.
_DROP = {"and", "or", "not", "near"}


def query_terms(text: str, *, limit: int) -> list[str]:
    """Distinct lowercase alphanumeric terms of `text`, in order, at most `limit`."""
    seen: dict[str, None] = {}
    for match in _TERM.finditer(text.lower()):
        term = match.group(0)
        if term in _DROP or len(term) < 2:
            continue
        seen.setdefault(term, None)
        if len(seen) >= limit:
            break
    return list(seen)


def prune_terms(doc_freq: dict[str, int], budget: int) -> list[str]:
    """The rarest terms whose posting lists fit in `budget` (at least one).

    FTS5 scores every row any OR-ed term matches, so a common term ("kernel",
    "triton") makes a query scan most of the bank while adding little IDF.
    """
    present = sorted((df, term) for term, df in doc_freq.items() if df > 0)
    kept: list[str] = []
    total = 0
    for df, term in present:
        if kept and total + df > budget:
            break
        kept.append(term)
        total += df
    return kept


def match_expression(terms: Sequence[str]) -> str:
    """The FTS5 query: the terms quoted (they are alphanumeric) and OR-ed."""
    return " OR ".join(f'"{t}"' for t in terms)


def postings_budget(scored_budget: int, selectivity: float | None, filter_cost_ratio: float) -> int:
    """How many postings a query may walk so its cost stays near `scored_budget` bm25 calls.

    Without filters every posting is scored. With filters each posting costs
    one index probe (about `filter_cost_ratio` of a bm25 call) and only the
    `selectivity` share that passes is scored, so a selective filter affords
    a longer list, by at most 1 / filter_cost_ratio.
    """
    if selectivity is None:
        return max(1, scored_budget)
    return max(1, int(scored_budget / (filter_cost_ratio + selectivity)))


def recency_floor(max_id: int, postings: int, budget: int) -> int:
    """Lowest item id to score when even the rarest kept term is over budget.

    Ids grow with time and terms spread evenly over them, so scoring only ids
    above this floor walks about `budget` postings: the newest memories that
    hold the term, which is also the most useful tie-break.
    """
    if postings <= budget or max_id <= 0:
        return 0
    return max_id - int(max_id * budget / postings)


@dataclass(frozen=True)
class Candidate:
    item_id: int
    similarity: float
    value: float


@dataclass(frozen=True)
class Pick:
    candidate: Candidate
    score: float
    explored: bool


def _zscores(xs: Sequence[float]) -> list[float]:
    if len(xs) < 2:
        return [0.0] * len(xs)
    mean = statistics.fmean(xs)
    sd = statistics.pstdev(xs, mu=mean)
    if sd == 0.0:
        return [0.0] * len(xs)
    return [(x - mean) / sd for x in xs]


def scores(pool: Sequence[Candidate], mode: str, mix_weight: float) -> list[float]:
    if mode == "similarity":
        return [c.similarity for c in pool]
    if mode == "value":
        return [c.value for c in pool]
    # MemRL: z-scores inside the pool make BM25 (unbounded) and Q (reward
    # scale) comparable before mixing.
    zs, zq = _zscores([c.similarity for c in pool]), _zscores([c.value for c in pool])
    return [(1.0 - mix_weight) * s + mix_weight * q for s, q in zip(zs, zq)]


def select(
    pool: Sequence[Candidate], *, n: int, mode: str, epsilon: float, mix_weight: float, rng: random.Random
) -> list[Pick]:
    """Pick `n` of the pool.

    `similarity`: the top n by recall score, no exploration (the ablation).
    `value` and `mix`: slot by slot, the best remaining by score (ties go to
    the more similar, then the older item), except that with probability
    epsilon the slot goes to a uniformly drawn *other* remaining candidate, so
    the rate of non-greedy picks is epsilon itself. Both modes explore the
    same way, so comparing them measures the score alone.
    """
    score_of = scores(pool, mode, mix_weight)
    ranked = sorted(
        range(len(pool)), key=lambda i: (-score_of[i], -pool[i].similarity, pool[i].item_id)
    )
    if mode == "similarity":
        return [Pick(pool[i], score_of[i], False) for i in ranked[:n]]
    picks: list[Pick] = []
    remaining = list(ranked)
    while remaining and len(picks) < n:
        explore = rng.random() < epsilon and len(remaining) > 1
        index = rng.randrange(1, len(remaining)) if explore else 0
        chosen = remaining.pop(index)
        picks.append(Pick(pool[chosen], score_of[chosen], explore))
    return picks
