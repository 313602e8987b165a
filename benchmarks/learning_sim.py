"""The learning, tested by simulation: do learned values find the memories that help?

A simulated policy and executor drive the project's real memory (memory_store.MemoryStore:
its retrieval, `record_step` with its Monte Carlo updates and reward normalisation), the
loop's real rewards (evokernel.loop.draft_reward / refine_reward) and the loop's own
start-point rule (evokernel.loop.choose_start). Only the world is simulated; nothing of the
method is re-implemented here.

The generative model (every number is a field of `World`, recorded in the results):

- Tasks come in `families`; a task's memories are recalled by dense retrieval (the store's
  embedder seam): each family has its own direction, a query is its family's direction, and
  an item's cosine to its family's queries is its *similarity* (0 to other families).
- Every item has a hidden *utility* u ~ N(utility_mean, 1); u < 0 is harmful (a context of
  such items does worse than no memory at all). The bank starts with `items_per_family`
  items per family, and every step writes one more (its kernel, a trace) with a fresh draw.
- Similarity follows a latent g = rho z(u) + sqrt(1 - rho^2) e (z the standardised
  utility, e ~ N(0, 1)): rho = 0, similarity says nothing of utility; rho = 1, it ranks it.
- A step's context is the n items retrieval picked; u_bar is their mean utility (0 with no
  memory). A task has a difficulty offset b ~ N(0, task_sd).
  Drafting: feasible with probability sigmoid(draft_logit + b + beta u_bar).
  Refining from a start kernel of log latency l (the first feasible kernel is at l = 0, the
  task's floor at -log(headroom)): feasible with probability sigmoid(feasible_logit + b +
  beta u_bar); then faster than the start with probability sigmoid(improve_logit + b + beta
  u_bar - progress_penalty p), p the share of the headroom already closed by the start; a
  faster kernel closes a share gain_share sigmoid(beta u_bar + N(0, gain_noise)) of what
  is left; a slower one lands |N(0, slower_sd)| above the start.
- `follows`: "context" (the default), a step's effect is its whole context's mean utility, as
  an LLM reading every memory its prompt shows; "one", the step follows one item of its context,
  the most valuable one (stage value) it has not followed on this task yet, and u_bar is that
  item's utility (0 when it has followed them all): the builtin policy, which tries the
  configuration of the most valuable remembered trace it has not tried on the task.
- Tasks arrive one after another in a shuffled stream, `budget` steps each, drafting until
  feasible, then refining from the start point the loop's rule picks (epsilon-greedy over
  Q_refine among the task's feasible kernels).
- A step *succeeds* when it drafts a feasible kernel or refines to a new best for its task.
  The arms see the same world and the same random draws per (task, step): they differ only
  in the contexts they retrieve.

Arms: `value` (the store's value mode: recall K by similarity, then epsilon-greedy by the
stage's value), `similarity` (the top n by similarity), `random` (n drawn uniformly from the
same recalled pool), `off` (no memory). Measured: the Spearman rank correlation between
each item's learned stage value and its hidden utility (items with at least 3 visits in
that stage), and the success rate per arm over quarters of the task stream.

    python benchmarks/learning_sim.py --out benchmarks/results/learning-sim.json [--jobs 2]
    python benchmarks/learning_sim.py --quick --out /tmp/sim.json      # a smoke run

    python benchmarks/learning_sim.py --recorded benchmarks/results/learning-h200.json \
        --out benchmarks/results/learning-sim.json      # adds the recorded run's refine-step analysis

Rules: 10 seeds (the value-minus-similarity difference varies by about 7 points from seed to
seed, so 5 seeds leave its mean about 3 points uncertain), rho in {0, 0.3, 0.7}, every arm on
every (seed, rho); then the sweeps of `SWEEPS_RULE`. The method's defaults are the store's and
the loop's as they are now. Beside each rank correlation, the same items ranked by
`posterior_mode`, the exact model's posterior given every step of the run: a learner that knew
the world could reach that on these steps, and no rule of values can be expected to beat it.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import json
import math
import platform
import random
import shlex
import statistics
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evokernel.loop import FEASIBLE_STATUSES, LoopOptions, choose_start, draft_reward, refine_reward  # noqa: E402
from memory_store import MemoryConfig, MemoryStore, updated_ids  # noqa: E402

KIND = "evokernel-learning-sim"
REFINE_REWARDS = ("loop", "tanh", "start")
SWEEPS_RULE = ("at rho = 0.3, every seed: alpha (0.03 and 0.3 beside the default 0.1), epsilon and the "
               "similarity/value mix (mode mix) on the value arm; the method as it was before (tanh refine reward "
               "against the best, start point by Q_refine, refine rewards normalised, alpha 0.3) on every arm; "
               "each change undone alone, beta, n = 1, 2 and 3 items per context and a task stream HORIZON "
               "times as long, on the value and similarity arms; "
               "at every rho, the value rules of VALUE_RULE_VARIANTS on the value arm (Method's docstring), "
               "compared with the arms group's similarity arm on the same seeds")
START_RULES = ("loop", "value")
VALUE_RULE_VARIANTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("baseline=stage", {"baseline": "stage"}),
    ("baseline=position", {"baseline": "position"}),
    ("credit=joint", {"credit": "joint"}),
    ("step_size=sample_mean", {"step_size": "sample_mean"}),
    ("credit_start_point=False", {"credit_start_point": False}),
    ("exploration=ucb", {"exploration": "ucb", "epsilon": 0.0}),
    ("q_init=0.5", {"q_init": 0.5}),
)
FOLLOWS = ("context", "one")
VALUE_RULES = {"baseline": ("none", "stage", "position"), "credit": ("shared", "joint", "followed"),
               "step_size": ("constant", "sample_mean"), "exploration": ("epsilon", "ucb")}
BACKEND = "sim"
MIN_VISITS = 3


class Arm(str, enum.Enum):
    VALUE = "value"
    SIMILARITY = "similarity"
    RANDOM = "random"
    OFF = "off"


@dataclasses.dataclass(frozen=True)
class World:
    """The simulated tasks, memories and executor (see the module docstring)."""

    families: int = 4
    tasks_per_family: int = 20
    items_per_family: int = 30
    budget: int = 8
    rho: float = 0.3
    utility_mean: float = 0.3
    beta: float = 3.0
    task_sd: float = 0.5
    draft_logit: float = -0.5
    feasible_logit: float = 1.5
    improve_logit: float = 0.5
    progress_penalty: float = 2.5
    headroom: float = 4.0
    gain_share: float = 0.5
    gain_noise: float = 0.5
    slower_sd: float = 0.3
    follows: str = "context"

    def __post_init__(self) -> None:
        if self.follows not in FOLLOWS:
            raise ValueError(f"World: follows must be one of {FOLLOWS}, got {self.follows!r}")
        if not -1.0 <= self.rho <= 1.0:
            raise ValueError(f"World: rho must be in [-1, 1], got {self.rho}")
        if min(self.families, self.tasks_per_family, self.budget) < 1 or self.items_per_family < 0:
            raise ValueError("World: families, tasks_per_family and budget must be >= 1, items_per_family >= 0")
        if self.headroom <= 1.0:
            raise ValueError(f"World: headroom must be > 1, got {self.headroom}")


@dataclasses.dataclass(frozen=True)
class Method:
    """The learning method's settings: the store's configuration, the refine reward, the start rule.

    The defaults are the method as it is now. The what-ifs: `refine_reward` `tanh` (the reward
    before, tanh(log best - log latency)) or `start` (the loop's reward against the start
    point's latency instead of the task's best); `start_rule` `value` (the rule before: the
    kernel with the highest Q_refine); `normalized_stages` ("refine",) (the default before).

    The value rules tried against the low rank correlation (none is the store's; each goes
    through the store's own update, `record_step`, with the reward it is given):
    `baseline` `stage` (the reward minus the mean of the stage's earlier rewards: an advantage)
    or `position` (minus the mean of earlier rewards at the same step of a task's stage, so a
    task's progress does not leak into values); `credit` `joint` (each item moves by
    alpha (r - mean Q of the step's items), a least-squares credit that explains a reward by the
    other items first), `credit` `followed` (only the items the step followed move: in a world that
    `follows` "one", the one item, as the builtin policy names only the memory whose configuration it
    tried; in the default world every item of the context, as now) and `step_size` `sample_mean` (step max(alpha, 1/visits): a plain average
    while an item has few visits), both given to the store as one step per item whose reward is
    the target that makes its update the rule's; `credit_start_point` False (the start point's
    value not updated); `exploration` `ucb` (the recalled pool ranked by Q + ucb_c sqrt(ln N / (1 +
    visits)), N the pool's visits, instead of epsilon-greedy); `q_init` (optimistic start values).
    """

    alpha: float = MemoryConfig().alpha
    epsilon: float = MemoryConfig().epsilon
    mix_weight: float = 0.5
    mode: str = "value"
    n: int = 5
    recall_factor: float = 2.0
    refine_reward: str = "loop"
    normalized_stages: tuple[str, ...] = MemoryConfig().normalized_stages
    start_rule: str = "loop"
    baseline: str = "none"
    credit: str = "shared"
    step_size: str = "constant"
    credit_start_point: bool = True
    exploration: str = "epsilon"
    ucb_c: float = 0.5
    q_init: float = MemoryConfig().q_init

    def __post_init__(self) -> None:
        if self.refine_reward not in REFINE_REWARDS or self.start_rule not in START_RULES:
            raise ValueError(f"Method: refine_reward must be one of {REFINE_REWARDS}, start_rule one of {START_RULES}")
        for name, allowed in VALUE_RULES.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"Method: {name} must be one of {allowed}, got {getattr(self, name)!r}")

    def config(self, seed: int) -> MemoryConfig:
        return MemoryConfig(alpha=self.alpha, epsilon=self.epsilon, mix_weight=self.mix_weight, n=self.n,
                            recall_factor=self.recall_factor, recall_factor_max=max(16.0, self.recall_factor),
                            normalized_stages=self.normalized_stages, q_init=self.q_init, seed=seed,
                            synchronous="OFF")

    @property
    def per_item_targets(self) -> bool:
        return self.credit == "joint" or self.step_size != "constant"


@dataclasses.dataclass(frozen=True)
class StepOutcome:
    task: int
    step: int
    stage: str
    success: bool
    reward: float
    context_utility: float | None


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """One (world, method, arm, seed): every step's outcome, the values learned, the tasks' speedups."""

    arm: str
    seed: int
    steps: tuple[StepOutcome, ...]
    rank_correlation: dict[str, float | None]
    ranked_items: dict[str, int]
    log_speedups: tuple[float, ...]
    seconds: float
    diagnostics: dict[str, float | None] = dataclasses.field(default_factory=dict)


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _rng(*parts: object) -> random.Random:
    return random.Random(zlib.crc32(":".join(map(str, parts)).encode()))


class _Embedder:
    """The store's dense-recall seam, answering from a table the world fills: an item's vector
    makes its cosine to its family's query exactly the similarity the world gave it."""

    model_id = "learning-sim"

    def __init__(self, families: int):
        self.dim = families + 1
        self.vectors: dict[str, np.ndarray] = {}
        for f in range(families):
            self.vectors[_query(f)] = np.eye(self.dim, dtype=np.float32)[f]

    def add(self, text: str, family: int, similarity: float) -> None:
        vector = np.zeros(self.dim, dtype=np.float32)
        vector[family] = similarity
        vector[-1] = math.sqrt(max(0.0, 1.0 - similarity * similarity))
        self.vectors[text] = vector

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.vectors[t] for t in texts])


def _query(family: int) -> str:
    return f"simulated task of family {family}"


class _Bank:
    """The hidden side of the memory: each item's utility, and how items enter the store."""

    def __init__(self, world: World, store: MemoryStore, embedder: _Embedder, rng: random.Random):
        self.world, self.store, self.embedder, self.rng = world, store, embedder, rng
        self.utility: dict[int, float] = {}

    def _draw(self, family: int, text: str) -> tuple[float, float]:
        w = self.world
        z = self.rng.gauss(0.0, 1.0)
        latent = w.rho * z + math.sqrt(max(0.0, 1.0 - w.rho * w.rho)) * self.rng.gauss(0.0, 1.0)
        # A monotone map into (0.05, 0.95): recall ranks by cosine, so only the order matters.
        self.embedder.add(text, family, 0.5 + 0.45 * math.tanh(latent / 1.5))
        return w.utility_mean + z, latent

    def seed(self, family: int, count: int) -> None:
        rows, utilities = [], []
        for j in range(count):
            text = f"family {family} memory {j}"
            u, _ = self._draw(family, text)
            utilities.append(u)
            rows.append(dict(kind="experience", task_key=f"earlier-{family}-{j}", backend=BACKEND, key_text=text,
                             content=text, category=f"family{family}"))
        for item_id, u in zip(self.store.add_items(rows), utilities):
            self.utility[item_id] = u
        self.store.embed_items(self.embedder)

    def write_trace(self, family: int, task_key: str, step: int, *, feasible: bool, latency_ms: float | None,
                    stage: str, run_id: int, parent_id: int | None) -> int:
        text = f"{task_key} step {step}"
        u, _ = self._draw(family, text)
        item_id = self.store.add_item(
            kind="trace", task_key=task_key, backend=BACKEND, key_text=text, content=text, stage=stage,
            category=f"family{family}", status="ok" if feasible else "wrong_result",
            latency_ms=latency_ms if feasible else None, run_id=run_id, parent_id=parent_id)
        self.utility[item_id] = u
        self.store.embed_items(self.embedder)
        return item_id


def _context(store: MemoryStore, arm: Arm, method: Method, family: int, stage: str, embedder: _Embedder,
             rng: random.Random) -> list[int]:
    if arm is Arm.OFF:
        return []
    if arm is Arm.RANDOM or (arm is Arm.VALUE and method.exploration == "ucb"):
        pool = store.retrieve(_query(family), stage=stage, n=store.config.pool_size(method.n, 0), mode="similarity",
                              embedder=embedder, backends=[BACKEND])
        if arm is Arm.RANDOM:
            return [r.item.id for r in rng.sample(pool, min(method.n, len(pool)))]
        total = 1 + sum(r.item.visits(stage) for r in pool)
        bonus = {r.item.id: method.ucb_c * math.sqrt(math.log(total) / (1 + r.item.visits(stage))) for r in pool}
        ranked = sorted(pool, key=lambda r: (-(r.value + bonus[r.item.id]), -r.similarity, r.item.id))
        return [r.item.id for r in ranked[:method.n]]
    mode = "similarity" if arm is Arm.SIMILARITY else method.mode
    picked = store.retrieve(_query(family), stage=stage, n=method.n, mode=mode, embedder=embedder,
                            backends=[BACKEND], rng=rng)
    return [r.item.id for r in picked]


def _follow(store: MemoryStore, context: Sequence[int], stage: str, followed: set[int]) -> int | None:
    """The item a step that follows one memory takes: the most valuable of its context (stage value;
    ties to the earlier retrieved) that it has not followed on this task yet."""
    values = {item.id: item.value(stage) for item in store.get_items(list(context))}
    left = [i for i in context if i not in followed]
    return max(left, key=lambda i: (values[i], -context.index(i))) if left else None


def _refine_reward(rule: str, feasible: bool, latency_ms: float, best_ms: float, start_ms: float) -> float:
    if rule == "tanh":  # the reward before commit "refine reward: +1 for a new best"
        return math.tanh(math.log(best_ms) - math.log(latency_ms)) if feasible else -1.0
    return refine_reward(feasible, latency_ms if feasible else None, best_ms if rule == "loop" else start_ms)


def _choose_start(feasible: list, rng: random.Random, rule: str):
    """The loop's rule (`loop`: its fastest kernel, epsilon-greedy), or the what-if `value`: the
    rule before commit "start points: the fastest kernel", the highest Q_refine (ties to the faster)."""
    if not feasible:
        return None
    if rule == "value":
        return max(feasible, key=lambda i: (i.q_refine, -(i.latency_ms or math.inf), -i.id))
    # every simulated latency is comparable (one simulated device)
    return choose_start(feasible, rng, LoopOptions().epsilon_start_point, lambda item: True)


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Spearman's rank correlation (average ranks for ties); None under 3 pairs or a constant side."""
    if len(xs) < 3:
        return None

    def ranks(values: Sequence[float]) -> np.ndarray:
        arr = np.asarray(values, dtype=float)
        order = np.argsort(arr, kind="stable")
        out = np.empty(len(arr))
        i = 0
        while i < len(arr):
            j = i
            while j + 1 < len(arr) and arr[order[j + 1]] == arr[order[i]]:
                j += 1
            out[order[i:j + 1]] = (i + j) / 2.0
            i = j + 1
        return out

    rx, ry = ranks(xs), ranks(ys)
    if rx.std() == 0 or ry.std() == 0:
        return None
    return float(np.corrcoef(rx, ry)[0, 1])


@dataclasses.dataclass(frozen=True)
class _Evidence:
    """What one step tells about its context's utilities, under the world's own model: the
    success's log-odds are offsets[k] + beta u_bar for each factor k (drafting: feasible;
    refining from the task's best: feasible and faster, two independent events)."""

    stage: str
    context: tuple[int, ...]
    offsets: tuple[float, ...]
    success: bool


def posterior_mode(evidence: Sequence[_Evidence], world: World, prior_mean: float,
                   iterations: int = 100) -> dict[int, float]:
    """The most probable utility of every item in these steps' contexts given their outcomes,
    under the world's true model and prior N(prior_mean, 1) (Fisher scoring, a step halved until
    the posterior rises). A learner that knew the world exactly could rank no better on average:
    the ceiling for any value rule on the same steps."""
    ids = sorted({i for e in evidence for i in e.context})
    if not ids:
        return {}
    column = {i: k for k, i in enumerate(ids)}
    design = np.zeros((len(evidence), len(ids)))
    factors = max(len(e.offsets) for e in evidence)
    offsets = np.full((len(evidence), factors), 50.0)  # a missing factor: certain (sigmoid(50) = 1)
    for row, e in enumerate(evidence):
        for i in e.context:
            design[row, column[i]] += world.beta / len(e.context)
        offsets[row, :len(e.offsets)] = e.offsets
    y = np.array([e.success for e in evidence], dtype=float)

    def success_and_slope(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        sig = 1.0 / (1.0 + np.exp(-(offsets + (design @ u)[:, None])))
        p = np.clip(sig.prod(axis=1), 1e-12, 1.0 - 1e-12)
        return p, p * (1.0 - sig).sum(axis=1)  # d p / d logit

    def log_posterior(u: np.ndarray) -> float:
        p, _ = success_and_slope(u)
        return float((y * np.log(p) + (1.0 - y) * np.log1p(-p)).sum() - 0.5 * ((u - prior_mean) ** 2).sum())

    u = np.full(len(ids), prior_mean)
    current = log_posterior(u)
    for _ in range(iterations):
        p, slope = success_and_slope(u)
        residual = (y - p) * slope / (p * (1.0 - p))
        weight = slope * slope / (p * (1.0 - p))
        gradient = design.T @ residual - (u - prior_mean)
        step = np.linalg.solve(design.T @ (weight[:, None] * design) + np.eye(len(ids)), gradient)
        size = 1.0
        while size > 1e-4 and log_posterior(u + size * step) < current:
            size /= 2
        if size <= 1e-4:
            break
        u = u + size * step
        updated = log_posterior(u)
        if updated - current < 1e-9:
            break
        current = updated
    return {i: float(u[column[i]]) for i in ids}


@dataclasses.dataclass(frozen=True)
class _Credit:
    """One step as the values saw it: the items it credited and its raw reward."""

    stage: str
    context: tuple[int, ...]
    credited: tuple[int, ...]
    reward: float
    context_utility: float


class _Baseline:
    """The what-if baselines (Method.baseline): the mean of the raw rewards seen so far, per
    stage or per (stage, step of the task's stage); 0 before the first."""

    def __init__(self, rule: str):
        self.rule = rule
        self.sums: dict[tuple[str, int], tuple[float, int]] = {}

    def advantage(self, reward: float, stage: str, position: int) -> float:
        if self.rule == "none":
            return reward
        key = (stage, 0 if self.rule == "stage" else position)
        total, count = self.sums.get(key, (0.0, 0))
        self.sums[key] = (total + reward, count + 1)
        return reward - (total / count if count else 0.0)


def _item_targets(store: MemoryStore, stage: str, item_ids: Sequence[int], target: float,
                  method: Method) -> list[tuple[int, float]]:
    """Per item, the reward whose store update Q + alpha (t - Q) is the what-if rule's
    Q + step (error): error r - Q (shared) or r - mean Q of the step's items (joint); step alpha
    or max(alpha, 1 / visits) (sample_mean)."""
    items = store.get_items(list(item_ids))
    if not items:
        return []
    mean_q = statistics.fmean(i.value(stage) for i in items)
    out = []
    for item in items:
        q = item.value(stage)
        error = target - (mean_q if method.credit == "joint" else q)
        step = max(method.alpha, 1.0 / (item.visits(stage) + 1)) if method.step_size == "sample_mean" else method.alpha
        out.append((item.id, q + step / method.alpha * error))
    return out


def _diagnose(stage: str, ranked: Sequence[Any], history: Sequence[_Credit]) -> dict[str, float | None]:
    """Why values rank utility as they do, for one stage: how many visits the ranked items had,
    how far their values follow the visit count, how many items share one step's reward, how
    often the same context came back, how much of the rewards the contexts' true mean utility
    explains, and how many ranked items were only ever start points."""
    steps = [c for c in history if c.stage == stage]
    with_context = [c for c in steps if c.context]
    in_context = {i for c in with_context for i in c.context}
    visits = [i.visits(stage) for i in ranked]
    r = _pearson([c.context_utility for c in with_context], [c.reward for c in with_context])
    return {
        "visits_median": statistics.median(visits) if visits else None,
        "value_visits_correlation": spearman([i.value(stage) for i in ranked], visits),
        "items_credited_per_step": statistics.fmean(len(c.credited) for c in steps) if steps else None,
        "distinct_context_share": len({frozenset(c.context) for c in with_context}) / len(with_context)
        if with_context else None,
        "reward_variance_explained_by_context": None if r is None else r * r,
        "ranked_only_as_start_point": float(sum(1 for i in ranked if i.id not in in_context)),
    }


def simulate(world: World, method: Method, arm: Arm, seed: int, workdir: Path | None = None) -> RunRecord:
    """One arm on one world: the task stream, each step through the real store and rewards."""
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="evokernel-sim-", dir=workdir) as tmp:
        store = MemoryStore(Path(tmp) / "memory.db", method.config(seed))
        try:
            record = _run(world, method, arm, seed, store)
        finally:
            store.close()
    return dataclasses.replace(record, seconds=round(time.perf_counter() - t0, 2))


def _run(world: World, method: Method, arm: Arm, seed: int, store: MemoryStore) -> RunRecord:
    embedder = _Embedder(world.families)
    # The world (items, their utilities and similarities, tasks) depends on the seed only, so
    # every arm of a seed meets the same one; retrieval's own draws are the arm's.
    bank = _Bank(world, store, embedder, _rng("world", seed, world.rho))
    for f in range(world.families):
        bank.seed(f, world.items_per_family)
    tasks = [(f, t) for f in range(world.families) for t in range(world.tasks_per_family)]
    _rng("order", seed).shuffle(tasks)
    difficulty = {ft: _rng("difficulty", seed, *ft).gauss(0.0, world.task_sd) for ft in tasks}
    run_id = store.start_run({"simulation": dataclasses.asdict(world), "method": dataclasses.asdict(method),
                              "arm": arm.value, "seed": seed})
    retrieval_rng = _rng("retrieval", seed, arm.value)
    floor = -math.log(world.headroom)
    outcomes: list[StepOutcome] = []
    evidence: list[_Evidence] = []
    history: list[_Credit] = []
    baseline = _Baseline(method.baseline)
    position: dict[tuple[str, str], int] = {}
    log_speedups = []
    for order, (family, t) in enumerate(tasks):
        key = f"task-{family}-{t}"
        b = difficulty[(family, t)]
        first_ms: float | None = None
        followed: set[int] = set()  # the items this task's steps followed (world.follows "one")
        for step in range(1, world.budget + 1):
            draws = _rng("step", seed, family, t, step)  # the same for every arm
            feasible_items = store.feasible_items(key, BACKEND, statuses=FEASIBLE_STATUSES)
            stage = "refine" if feasible_items else "draft"
            start = _choose_start(feasible_items, _rng("start", seed, family, t, step), method.start_rule)
            best_ms = feasible_items[0].latency_ms if feasible_items else None
            context = _context(store, arm, method, family, stage, embedder, retrieval_rng)
            if world.follows == "one":
                pick = _follow(store, context, stage, followed)
                effect = [pick] if pick is not None else []
                followed.update(effect)
            else:
                effect = context
            u_bar = statistics.fmean(bank.utility[i] for i in effect) if effect else 0.0
            logit = b + world.beta * u_bar
            r_feasible, r_improve, r_size = draws.random(), draws.random(), draws.gauss(0.0, 1.0)
            if stage == "draft":
                feasible = r_feasible < _sigmoid(world.draft_logit + logit)
                log_ms = 0.0
                success = feasible
                reward = draft_reward(feasible)
                if effect:
                    evidence.append(_Evidence(stage, tuple(effect), (world.draft_logit + b,), success))
            else:
                start_log = math.log(start.latency_ms)
                progress = min(1.0, max(0.0, start_log / floor))
                feasible = r_feasible < _sigmoid(world.feasible_logit + logit)
                improved = r_improve < _sigmoid(world.improve_logit + logit - world.progress_penalty * progress)
                if improved:
                    share = world.gain_share * _sigmoid(world.beta * u_bar + world.gain_noise * r_size)
                    log_ms = start_log - (start_log - floor) * share
                else:
                    log_ms = start_log + abs(world.slower_sd * r_size)
                latency = math.exp(log_ms)
                success = feasible and latency < best_ms
                if effect and start.latency_ms == best_ms:  # from the best, a new best is a faster kernel
                    evidence.append(_Evidence(stage, tuple(effect), (world.feasible_logit + b, world.improve_logit
                                                                      + b - world.progress_penalty * progress), success))
                reward = _refine_reward(method.refine_reward, feasible, latency, best_ms, start.latency_ms)
            latency_ms = math.exp(log_ms) if feasible else None
            if feasible and first_ms is None and stage == "draft":
                first_ms = latency_ms
            credited_start = start.id if start and method.credit_start_point else None
            used = effect if method.credit == "followed" else context
            credited = updated_ids(used, credited_start)
            position[(key, stage)] = position.get((key, stage), 0) + 1
            target = baseline.advantage(reward, stage, position[(key, stage)])
            with store.transaction():
                trace = bank.write_trace(family, key, step, feasible=feasible, latency_ms=latency_ms, stage=stage,
                                         run_id=run_id, parent_id=start.id if start else None)
                if method.per_item_targets:
                    for item_id, item_target in _item_targets(store, stage, credited, target, method):
                        store.record_step(run_id=run_id, task_key=key, backend=BACKEND, stage=stage, reward=item_target,
                                          context_item_ids=[item_id], result_item_id=trace)
                else:
                    store.record_step(run_id=run_id, task_key=key, backend=BACKEND, stage=stage, reward=target,
                                      context_item_ids=used, start_point_id=credited_start, result_item_id=trace)
            history.append(_Credit(stage, tuple(effect), credited, reward, u_bar))
            outcomes.append(StepOutcome(order, step, stage, success, reward, u_bar if effect else None))
        best = store.best_item(key, BACKEND, statuses=FEASIBLE_STATUSES)
        log_speedups.append(-math.log(best.latency_ms) if best else 0.0)
    items = store.list_items(limit=None, newest_first=False)
    # The ceiling for any per-item average: each item's mean raw reward over the steps it took
    # part in, ranked against its utility (the same uses the store's values learned from).
    rewards: dict[tuple[str, int], list[float]] = {}
    for credit in history:
        for item_id in credit.credited:
            rewards.setdefault((credit.stage, item_id), []).append(credit.reward)
    correlation: dict[str, float | None] = {}
    counted: dict[str, int] = {}
    diagnostics: dict[str, float | None] = {}
    for stage in ("draft", "refine"):
        used = [i for i in items if i.visits(stage) >= MIN_VISITS]
        utilities = [bank.utility[i.id] for i in used]
        correlation[stage] = spearman([i.value(stage) for i in used], utilities)
        correlation[f"{stage}_mean_reward"] = spearman(
            [statistics.fmean(rewards.get((stage, i.id), [0.0])) for i in used], utilities)
        # A start point's utility moves no outcome in this world: nothing can rank it (prior mean).
        posterior = posterior_mode([e for e in evidence if e.stage == stage], world, world.utility_mean)
        correlation[f"{stage}_posterior"] = spearman([posterior.get(i.id, world.utility_mean) for i in used], utilities)
        counted[stage] = len(used)
        diagnostics.update({f"{stage}_{k}": v for k, v in _diagnose(stage, used, history).items()})
    return RunRecord(arm.value, seed, tuple(outcomes), correlation, counted, tuple(log_speedups), 0.0, diagnostics)


# -- the experiment ---------------------------------------------------------------------------

RHOS = (0.0, 0.3, 0.7)
HEADLINE_RHO = 0.3
HORIZON = 4  # the horizon sweep's task stream, in multiples of the world's
QUARTERS = 4


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """One simulated run: which comparison it belongs to, and what it varies."""

    group: str
    setting: str
    world: World
    method: Method
    arm: Arm
    seed: int


def _run_spec(spec: RunSpec) -> tuple[RunSpec, RunRecord]:
    return spec, simulate(spec.world, spec.method, spec.arm, spec.seed)


def success_by_quarter(record: RunRecord, tasks: int) -> list[float]:
    """The success rate of the steps of each quarter of the task stream, in order."""
    rates = []
    for q in range(QUARTERS):
        lo, hi = q * tasks / QUARTERS, (q + 1) * tasks / QUARTERS
        chosen = [s.success for s in record.steps if lo <= s.task < hi]
        rates.append(sum(chosen) / len(chosen) if chosen else float("nan"))
    return rates


def headline_correlation(record: RunRecord, measure: str = "") -> float | None:
    """Both stages' rank correlations, weighted by how many items each ranked: of the values
    (measure ""), or of another ranking of the same items ("_posterior", "_mean_reward")."""
    pairs = [(record.rank_correlation[s + measure], record.ranked_items[s]) for s in ("draft", "refine")]
    pairs = [(c, n) for c, n in pairs if c is not None and n]
    total = sum(n for _, n in pairs)
    return sum(c * n for c, n in pairs) / total if total else None


def _mean(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None and not math.isnan(v)]
    return round(statistics.fmean(kept), 4) if kept else None


def _sd(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None and not math.isnan(v)]
    return round(statistics.stdev(kept), 4) if len(kept) > 1 else None


def summarise(records: Sequence[tuple[RunSpec, RunRecord]]) -> dict[str, Any]:
    """Per (group, setting, arm): success by quarter, the last quarter's success, the rank
    correlations and the tasks' mean log speedup, as means over seeds (and their spread)."""
    cells: dict[tuple[str, str, str], list[tuple[RunSpec, RunRecord]]] = {}
    for spec, record in records:
        cells.setdefault((spec.group, spec.setting, spec.arm.value), []).append((spec, record))
    out: dict[str, Any] = {}
    for (group, setting, arm), runs in sorted(cells.items()):
        tasks = runs[0][0].world.families * runs[0][0].world.tasks_per_family
        quarters = [success_by_quarter(r, tasks) for _, r in runs]
        out.setdefault(group, {}).setdefault(setting, {})[arm] = {
            "seeds": [s.seed for s, _ in runs],
            "success_by_quarter": [_mean([q[i] for q in quarters]) for i in range(QUARTERS)],
            "success_last_quarter": _mean([q[-1] for q in quarters]),
            "success_last_quarter_sd": _sd([q[-1] for q in quarters]),
            "success_all": _mean([statistics.fmean(s.success for s in r.steps) for _, r in runs]),
            "rank_correlation": _mean([headline_correlation(r) for _, r in runs]),
            "rank_correlation_sd": _sd([headline_correlation(r) for _, r in runs]),
            "rank_correlation_draft": _mean([r.rank_correlation["draft"] for _, r in runs]),
            "rank_correlation_refine": _mean([r.rank_correlation["refine"] for _, r in runs]),
            "rank_correlation_ceiling_draft": _mean([r.rank_correlation["draft_mean_reward"] for _, r in runs]),
            "rank_correlation_ceiling_refine": _mean([r.rank_correlation["refine_mean_reward"] for _, r in runs]),
            "rank_correlation_posterior": _mean([headline_correlation(r, "_posterior") for _, r in runs]),
            "rank_correlation_posterior_draft": _mean([r.rank_correlation["draft_posterior"] for _, r in runs]),
            "rank_correlation_posterior_refine": _mean([r.rank_correlation["refine_posterior"] for _, r in runs]),
            "ranked_items": {st: _mean([r.ranked_items[st] for _, r in runs]) for st in ("draft", "refine")},
            "diagnostics": {k: _mean([r.diagnostics.get(k) for _, r in runs]) for k in runs[0][1].diagnostics},
            "mean_log_speedup": _mean([statistics.fmean(r.log_speedups) for _, r in runs]),
            "seconds": round(sum(r.seconds for _, r in runs), 1),
        }
    return out


def paired_difference(records: Sequence[tuple[RunSpec, RunRecord]], group: str, setting: str, a: Arm,
                      b: Arm) -> dict[str, float | None]:
    """Arm a minus arm b in last-quarter success, in points, per seed (the same worlds)."""
    return paired_cells(records, (group, setting, a), (group, setting, b))


def paired_cells(records: Sequence[tuple[RunSpec, RunRecord]], a: tuple[str, str, Arm],
                 b: tuple[str, str, Arm]) -> dict[str, float | None]:
    """Cell a minus cell b, each a (group, setting, arm), in last-quarter success points, per seed."""
    last: dict[tuple[str, str, Arm, int], float] = {}
    for spec, record in records:
        cell = (spec.group, spec.setting, spec.arm)
        if cell in (a, b):
            tasks = spec.world.families * spec.world.tasks_per_family
            last[(*cell, spec.seed)] = success_by_quarter(record, tasks)[-1]
    seeds = sorted({k[3] for k in last if k[:3] == a} & {k[3] for k in last if k[:3] == b})
    diffs = [100.0 * (last[(*a, s)] - last[(*b, s)]) for s in seeds]
    return {"mean_points": _mean(diffs), "sd_points": _sd(diffs), "per_seed": [round(d, 2) for d in diffs]}


def value_rules(records: Sequence[tuple[RunSpec, RunRecord]], summary: dict[str, Any],
                rhos: Sequence[float]) -> dict[str, Any]:
    """Each value rule beside the method as it is, per rho: the rank correlation (and the posterior
    ceiling on the same items), the last quarter's success, and the success over the arms group's
    similarity arm on the same seeds, with the rank correlation's per-seed difference from the method."""
    def correlations(group: str, setting: str) -> dict[int, float | None]:
        return {spec.seed: headline_correlation(r) for spec, r in records
                if spec.group == group and spec.setting == setting and spec.arm is Arm.VALUE}

    out: dict[str, Any] = {}
    for name in ["as built", *(n for n, _ in VALUE_RULE_VARIANTS)]:
        for rho in rhos:
            group, setting = ("arms", f"rho={rho}") if name == "as built" else ("value_rules", _rule_setting(name, rho))
            cell = summary.get(group, {}).get(setting, {}).get(Arm.VALUE.value)
            if cell is None:
                continue
            mine, base = correlations(group, setting), correlations("arms", f"rho={rho}")
            deltas = [mine[s] - base[s] for s in sorted(mine) if mine[s] is not None and base.get(s) is not None]
            out.setdefault(name, {})[f"rho={rho}"] = {
                "rank_correlation": cell["rank_correlation"],
                "rank_correlation_minus_as_built": _mean(deltas),
                "rank_correlation_minus_as_built_sd": _sd(deltas),
                "rank_correlation_posterior": cell["rank_correlation_posterior"],
                "success_last_quarter": cell["success_last_quarter"],
                "value_minus_similarity": paired_cells(records, (group, setting, Arm.VALUE),
                                                       ("arms", f"rho={rho}", Arm.SIMILARITY)),
            }
    return out


def _rule_setting(name: str, rho: float) -> str:
    return f"{name} rho={rho}"


def plan(world: World, method: Method, seeds: Sequence[int], rhos: Sequence[float],
         groups: Sequence[str] | None = None) -> list[RunSpec]:
    """Every run of the experiment: the arms over rho and seeds, then the sweeps at rho = 0.3
    (only the runs of `groups`, when given; ValueError naming an unknown one)."""
    specs = [RunSpec("arms", f"rho={rho}", dataclasses.replace(world, rho=rho), method, arm, seed)
             for rho in rhos for arm in Arm for seed in seeds]
    at = dataclasses.replace(world, rho=HEADLINE_RHO)
    sweeps: list[tuple[str, str, World, Method, tuple[Arm, ...]]] = []
    for alpha in sorted({0.03, 0.1, 0.3} - {method.alpha}):
        sweeps.append(("alpha", f"alpha={alpha}", at, dataclasses.replace(method, alpha=alpha), (Arm.VALUE,)))
    for epsilon in (0.0, 0.3):
        sweeps.append(("epsilon", f"epsilon={epsilon}", at, dataclasses.replace(method, epsilon=epsilon), (Arm.VALUE,)))
    for weight in (0.25, 0.75):
        sweeps.append(("mix", f"mix_weight={weight}", at, dataclasses.replace(method, mode="mix", mix_weight=weight),
                       (Arm.VALUE,)))
    # The method before this work, and each of its three changes undone alone.
    before = dataclasses.replace(method, refine_reward="tanh", start_rule="value", normalized_stages=("refine",),
                                 alpha=0.3)
    sweeps.append(("before", "as built before", at, before, tuple(Arm)))
    for setting, undone in (("refine_reward=tanh", dict(refine_reward="tanh")),
                            ("refine_reward=start", dict(refine_reward="start")),
                            ("start_rule=value", dict(start_rule="value")),
                            ("normalized_stages=refine", dict(normalized_stages=("refine",)))):
        sweeps.append(("undo", setting, at, dataclasses.replace(method, **undone), (Arm.VALUE, Arm.SIMILARITY)))
    for beta in (1.5, 6.0):
        sweeps.append(("beta", f"beta={beta}", dataclasses.replace(at, beta=beta), method, (Arm.VALUE, Arm.SIMILARITY)))
    # The value rules tried against the low rank correlation, at every rho (the similarity arm's
    # runs are the arms group's: these rules change nothing it selects by).
    for name, change in VALUE_RULE_VARIANTS:
        for rho in rhos:
            sweeps.append(("value_rules", _rule_setting(name, rho), dataclasses.replace(world, rho=rho),
                           dataclasses.replace(method, **change), (Arm.VALUE,)))
    # Fewer items per context: each reward is shared by fewer items (more to learn from), and
    # the context averages fewer utilities.
    for n in (1, 2, 3):
        sweeps.append(("context_size", f"n={n}", at, dataclasses.replace(method, n=n), (Arm.VALUE, Arm.SIMILARITY)))
    # A step that follows one memory (the builtin policy), its reward shared by the whole context as
    # before or credited to the followed item alone (what the builtin policies name as used).
    follow_one = dataclasses.replace(at, follows="one")
    for credit in ("shared", "followed"):
        sweeps.append(("follow_one", f"follows=one credit={credit}", follow_one,
                       dataclasses.replace(method, credit=credit), (Arm.VALUE, Arm.SIMILARITY)))
    # A task stream HORIZON times as long: more steps to learn from (and more items written).
    sweeps.append(("horizon", f"tasks_per_family={HORIZON * world.tasks_per_family}",
                   dataclasses.replace(at, tasks_per_family=HORIZON * world.tasks_per_family), method,
                   (Arm.VALUE, Arm.SIMILARITY)))
    for group, setting, w, m, arms in sweeps:
        specs += [RunSpec(group, setting, w, m, arm, seed) for arm in arms for seed in seeds]
    if groups is not None:
        unknown = sorted(set(groups) - {spec.group for spec in specs})
        if unknown:
            raise ValueError(f"no such group: {', '.join(unknown)} (groups: "
                             f"{', '.join(dict.fromkeys(spec.group for spec in specs))})")
        specs = [spec for spec in specs if spec.group in groups]
    return specs




def environment(command: str, seconds: float, jobs: int) -> dict[str, Any]:
    import sqlite3

    import torch

    return {
        "command": command,
        "seconds": round(seconds, 1),
        "jobs": jobs,
        "hardware": {"machine": platform.machine(), "processor": platform.processor() or None,
                     "cpu_count": __import__("os").cpu_count()},
        "versions": {"python": platform.python_version(), "numpy": np.__version__, "sqlite": sqlite3.sqlite_version,
                     "torch": torch.__version__},
        "platform": platform.platform(),
    }


def experiment(world: World, method: Method, seeds: Sequence[int], rhos: Sequence[float], *, jobs: int = 1,
               groups: Sequence[str] | None = None,
               progress: Callable[[str], None] = lambda _: None) -> tuple[list[tuple[RunSpec, RunRecord]], dict]:
    """Run every planned simulation (of `groups`, when given; in `jobs` processes) and summarise them."""
    specs = plan(world, method, seeds, rhos, groups)
    records: list[tuple[RunSpec, RunRecord]] = []
    if jobs > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            for n, done in enumerate(pool.map(_run_spec, specs), 1):
                records.append(done)
                progress(f"[{n}/{len(specs)}] {done[0].group} {done[0].setting} {done[0].arm.value} seed {done[0].seed}")
    else:
        for n, spec in enumerate(specs, 1):
            records.append(_run_spec(spec))
            progress(f"[{n}/{len(specs)}] {spec.group} {spec.setting} {spec.arm.value} seed {spec.seed}")
    return records, summarise(records)


def results(records: Sequence[tuple[RunSpec, RunRecord]], summary: dict, world: World, method: Method,
            seeds: Sequence[int], rhos: Sequence[float], env: dict[str, Any]) -> dict[str, Any]:
    """The results file: the model, the rules, the headline and every cell."""
    headline = f"rho={HEADLINE_RHO}"
    value = summary.get("arms", {}).get(headline, {}).get(Arm.VALUE.value, {})  # no arms group: a --groups run
    vs_similarity = paired_difference(records, "arms", headline, Arm.VALUE, Arm.SIMILARITY)
    differences = {
        setting: {f"{a.value}-minus-{b.value}": paired_difference(records, "arms", setting, a, b)
                  for a, b in ((Arm.VALUE, Arm.SIMILARITY), (Arm.VALUE, Arm.RANDOM), (Arm.VALUE, Arm.OFF),
                               (Arm.SIMILARITY, Arm.OFF))}
        for setting in summary.get("arms", {})
    }
    # The sweeps run on both the value and the similarity arm, paired by seed within each setting.
    sweep_differences = {
        group: {setting: paired_difference(records, group, setting, Arm.VALUE, Arm.SIMILARITY)
                for setting, arms in settings.items() if {Arm.VALUE.value, Arm.SIMILARITY.value} <= set(arms)}
        for group, settings in summary.items() if group != "arms"
    }
    return {
        "kind": KIND,
        "version": 1,
        "summary": {
            "rho": HEADLINE_RHO,
            "rank_correlation": value.get("rank_correlation"),
            "value_minus_similarity_points": vs_similarity["mean_points"],
            "value_minus_similarity_sd_points": vs_similarity["sd_points"],
            "goals": {"rank_correlation": 0.8, "value_minus_similarity_points": 10.0},
            # What a learner that knew the world exactly would reach on the same items and steps.
            "rank_correlation_posterior_ceiling": value.get("rank_correlation_posterior"),
            "seeds": list(seeds),
        },
        "model": __doc__.split("\n\n")[2].strip() + "\n\n" + __doc__.split("\n\n")[3].strip(),
        "world": dataclasses.asdict(world),
        "method": dataclasses.asdict(method),
        "rules": {
            "seeds": list(seeds), "rhos": list(rhos), "arms": [a.value for a in Arm],
            "success": "a draft step that is feasible, or a refine step that makes a new best for its task",
            "by_the_end": "the last quarter of the task stream (success_last_quarter)",
            "rank_correlation": f"Spearman of each item's stage value and its hidden utility, over items with at "
                                f"least {MIN_VISITS} visits in that stage (the store's visit counts: context and start "
                                f"point); the two stages weighted by how many items each ranked; value arm",
            "rank_correlation_posterior": "the same items ranked by the posterior mode of their utilities given "
                                          "every step of the run under the world's true model (posterior_mode); "
                                          "an item never in a context (a start point only) keeps the prior mean",
            "paired": "every arm of a seed meets the same world and the same draws per (task, step)",
            "sweeps": SWEEPS_RULE,
            "groups": sorted(summary),
        },
        "differences": differences,
        "sweep_differences": {group: cells for group, cells in sweep_differences.items() if cells},
        "value_rules": value_rules(records, summary, rhos),
        "cells": summary,
        "environment": env,
    }


def _pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    if len(xs) < 3 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None
    return float(np.corrcoef(np.asarray(xs, dtype=float), np.asarray(ys, dtype=float))[0, 1])


# Replayed refine rewards: (reward, normalised PopArt-style). The first is the run's own rule.
REPLAYED = {"tanh_normalised": ("tanh", True), "tanh_raw": ("tanh", False),
            "new_best_normalised": ("new_best", True), "new_best_raw": ("new_best", False)}


def recorded_refinements(path: Path) -> dict[str, Any]:
    """What a `benchmarks/learning.py` result's attempt logs say about its refine steps.

    Per arm: the share of refine steps that made a new best, by the step's position in its task;
    and a replay of the value that one item retrieved at every step of its task (the query never
    changes within a task, so the same items come back) carries into each refine step, under
    each refine reward, with that value's correlation to the step's success. The replay uses the
    store's own update and normalisation (q_update, RewardStats, MemoryConfig's defaults) from
    fresh statistics: the result file keeps neither the context ids nor the start points, so the
    `start` reward cannot be replayed from it (learning.py --keep keeps the memories that can).
    """
    from memory_store import RewardStats, q_update

    data = json.loads(Path(path).read_text())
    cfg = MemoryConfig()
    out: dict[str, Any] = {"source": str(path), "arms": {}}
    for arm, tasks in data["tasks"].items():
        by_position: dict[int, list[bool]] = {}
        replays: dict[str, dict[str, list[float]]] = {name: {"value": [], "success": []} for name in REPLAYED}
        stats = {name: RewardStats() for name in replays}
        for row in tasks.values():
            best: float | None = None
            q = {name: 0.0 for name in replays}
            for position, attempt in enumerate(row["attempt_log"], 1):
                latency = attempt["latency_ms"] if attempt["status"] in FEASIBLE_STATUSES else None
                if attempt["stage"] != "refine":
                    best = latency if best is None or latency is None else min(best, latency)
                    continue
                new_best = refine_reward(latency is not None, latency, best)
                success = new_best > 0  # a new best beyond timing noise, as the loop's reward counts one
                by_position.setdefault(position, []).append(success)
                # The run's own reward was tanh(log best - log latency), recorded in the log.
                rewards = {"tanh": attempt["reward"], "new_best": new_best}
                for name, (reward_name, normalised) in REPLAYED.items():
                    reward = rewards[reward_name]
                    replays[name]["value"].append(q[name])
                    replays[name]["success"].append(float(success))
                    stats[name] = stats[name].updated(reward, cfg.reward_momentum)
                    target = stats[name].normalize(reward, cfg.reward_sigma_floor) if normalised else reward
                    q[name] = q_update(q[name], target, cfg.alpha)
                if latency is not None:
                    best = latency if best is None else min(best, latency)
        out["arms"][arm] = {
            "new_best_rate_by_refine_step": {str(k): round(sum(v) / len(v), 3) for k, v in sorted(by_position.items())},
            "refine_steps": sum(len(v) for v in by_position.values()),
            "tasks": len(tasks),
            "value_success_correlation": {name: _pearson(r["value"], r["success"]) for name, r in replays.items()},
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seeds", type=int, default=10, help="seeds (default 10)")
    parser.add_argument("--jobs", type=int, default=1, help="processes (default 1)")
    parser.add_argument("--quick", action="store_true", help="a small world and 2 seeds: a smoke run")
    parser.add_argument("--groups", nargs="+", default=None,
                        help="run only these groups of the plan (arms, alpha, ..., context_size, horizon)")
    parser.add_argument("--recorded", type=Path, action="append", default=None,
                        help="instead of simulating: add the refine-step analysis of these benchmarks/learning.py "
                             "results (recorded_refinements) to --out under `recorded`, and print it")
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.jobs < 1:
        parser.error("--seeds and --jobs must be >= 1")
    command = shlex.join(["python", "benchmarks/learning_sim.py", *(argv if argv is not None else sys.argv[1:])])
    if args.recorded:
        for path in args.recorded:
            if not path.is_file():
                parser.error(f"--recorded: no such file: {path}")
        data = json.loads(args.out.read_text()) if args.out.is_file() else {"kind": KIND, "version": 1}
        data["recorded"] = {"command": command, "results": [recorded_refinements(p) for p in args.recorded]}
        args.out.write_text(json.dumps(data, indent=1) + "\n")
        print(json.dumps(data["recorded"]))
        return 0
    world, method = World(), Method()
    seeds = list(range(args.seeds))
    if args.quick:
        world = dataclasses.replace(world, families=2, tasks_per_family=6, items_per_family=12, budget=5)
        seeds = seeds[:2]
    try:
        plan(world, method, seeds[:1], RHOS, args.groups)
    except ValueError as exc:
        parser.error(f"--groups: {exc}")
    t0 = time.time()
    records, summary = experiment(world, method, seeds, RHOS, jobs=args.jobs, groups=args.groups,
                                  progress=lambda m: print(m, file=sys.stderr, flush=True))
    data = results(records, summary, world, method, seeds, RHOS, environment(command, time.time() - t0, args.jobs))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    print(json.dumps(data["summary"]))
    print(f"wrote {args.out} in {time.time() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
