"""What the builtin policies (Triton and Ascend C) share: a cached trace of
each task, and a configuration search that the memory steers.

A verified skill's configuration change (evokernel/skills) comes first. Then
a draft tries the configurations of the most valuable feasible experiences
retrieved for it, then any hints (Ascend C: what a Triton experience
suggests), then the default, then the rest of the space. A refining step tries
remembered configurations with a positive refine value, then the neighbours of
its start point's configuration (those whose change paid in remembered
refinements first, those whose change lost last), then the rest. The first configuration this
task has not tried yet is proposed, crediting the memories that put it there: those holding it,
or the remembered refinements that made its change, or that made the change of a neighbour they
moved from ahead of it to behind it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import threading
from typing import Any, Callable, Sequence

from evokernel._step import FEASIBLE_STATUSES, MemoryNote, StepContext

FEASIBLE = FEASIBLE_STATUSES  # the verdicts the executor calls feasible, as memories store them


class PlanCache:
    """`evokernel.builtin.analyze` once per task, size, rule set and precision (the task imported at
    the step's size; the rule set decides what the library may compute; the precision, the dtypes
    the kernels are written for)."""

    def __init__(self) -> None:
        self._plans: dict[tuple[str, str, str, str], Any] = {}
        # torch.fx tracing patches module-level state: concurrent steps analyse one at a time.
        self._lock = threading.Lock()

    def get(self, ctx: StepContext) -> Any:
        with self._lock:
            return self._get(ctx)

    def _get(self, ctx: StepContext) -> Any:
        from pathlib import Path

        from backends import TaskError, load_task_module
        from evokernel.builtin import Unsupported, analyze

        rules = getattr(ctx, "rules", "strict")
        precision = getattr(ctx, "precision", "fp32")
        key = (ctx.task_key, ctx.size, rules, precision)
        if key not in self._plans:
            try:
                module = load_task_module(Path(ctx.task_path), size=ctx.size)
            except TaskError as exc:
                self._plans[key] = Unsupported(f"the task did not load: {exc.problem}")
            else:
                self._plans[key] = analyze(module, rules, precision)
        return self._plans[key]


def _numbers(*values: Any) -> bool:
    """Whether every value is a number a setting moves up or down (bools are switches, not numbers)."""
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def _agrees(base: dict, change: dict, before: dict) -> bool:
    """Whether a skill's change, made from `base`, moves each number the way its evidence moved it
    (from `before` to `change`): "block_m 1 -> 2 was faster" says nothing for moving 4 down to 2.
    A non-numeric setting applies only from the value the evidence started at. The settings `base`
    already holds are left out; with none left there is nothing to apply."""
    mine = _change(base, change)
    return _same_change({key: (before.get(key), value) for key, (_, value) in mine.items()}, mine)


def _change(before: Any, after: dict) -> dict[str, tuple[Any, Any]]:
    """The settings `after` changed from `before` (a configuration's dict; none when `before` is not one)."""
    if not isinstance(before, dict):
        return {}
    return {key: (before.get(key), value) for key, value in after.items() if before.get(key) != value}


def _same_change(a: dict[str, tuple[Any, Any]], b: dict[str, tuple[Any, Any]]) -> bool:
    """Whether two changes move the same settings the same way: a number in the same direction (block_k
    32 -> 16 and 64 -> 32 are both "smaller"), anything else from the same value to the same value."""
    if not a or a.keys() != b.keys():
        return False
    for key, (old_a, new_a) in a.items():
        old_b, new_b = b[key]
        numbers = _numbers(old_a, new_a, old_b, new_b)
        if numbers and (new_a - old_a) * (new_b - old_b) <= 0:
            return False
        if not numbers and (old_a, new_a) != (old_b, new_b):
            return False
    return True


@dataclasses.dataclass(frozen=True)
class Choice:
    """A configuration at its place in the search order, and the memories that put it there (none for
    the default, a skill's change, or the rest of the space): those a step proposing it used."""

    config: Any
    because: tuple[int, ...] = ()


def _choices(pairs: Sequence[tuple[MemoryNote, Any]], fingerprint: Callable[[Any], str]) -> list[Choice]:
    """One choice per remembered configuration, in order, each crediting every memory of `pairs` that
    holds the same configuration (they vouch for it together)."""
    prints = [fingerprint(config) for _, config in pairs]
    by_fp: dict[str, list[int]] = {}
    for (note, _), fp in zip(pairs, prints):
        by_fp.setdefault(fp, []).append(note.id)
    return [Choice(config, tuple(by_fp[fp])) for (_, config), fp in zip(pairs, prints)]


@dataclasses.dataclass(frozen=True)
class ConfigSpace:
    """One policy's configurations: how to read, name and move between them."""

    prefix: str  # fingerprints differ per policy, so their histories never mix
    config_key: str  # where a trace's `extra` keeps the configuration
    parse: Callable[[dict], Any]  # raises ValueError/TypeError on a bad record
    space: Sequence[Any]
    default: Any
    neighbours: Callable[[Any], list[Any]]

    def fingerprint(self, config: Any) -> str:
        return self.prefix + json.dumps(config.to_dict(), sort_keys=True)

    def _parse(self, raw: Any) -> Any | None:
        if not isinstance(raw, dict):
            return None
        try:
            config = self.parse(raw)
        except (ValueError, TypeError):
            return None
        return config if self.fingerprint(config) in self._in_space else None

    @functools.cached_property
    def _in_space(self) -> set[str]:
        return {self.fingerprint(c) for c in self.space}

    def remembered(self, ctx: StepContext, family: str) -> list[tuple[MemoryNote, Any]]:
        """Feasible traces of this backend and family with a usable configuration, most valuable first."""
        out = []
        for note in sorted(ctx.memories, key=lambda m: -m.value):
            if note.kind != "trace" or note.backend != ctx.backend or note.status not in FEASIBLE:
                continue
            if note.extra.get("family") not in (None, family):
                continue
            config = self._parse(note.extra.get(self.config_key))
            if config is not None:
                out.append((note, config))
        return out

    def skilled(self, ctx: StepContext, family: str) -> list[tuple[MemoryNote, Any]]:
        """The configurations the step's skills (evokernel/skills) suggest, in their order: each
        skill's configuration change applied to the start point's configuration when refining,
        to the default when drafting. Only skills of this policy's configurations and family,
        and only where the change goes the way its evidence went (see `_agrees`)."""
        base = self.start(ctx) if ctx.stage == "refine" else self.default
        out = []
        for note in getattr(ctx, "skills", ()) or ():
            hint = ((note.extra or {}).get("skill") or {}).get("hint") or {}
            change = hint.get("set")
            if hint.get("config_key") != self.config_key or hint.get("family") != family or not isinstance(change, dict):
                continue
            if not _agrees(base.to_dict(), change, hint.get("from") or {}):
                continue
            config = self._parse({**base.to_dict(), **change})
            if config is not None:
                out.append((note, config))
        return out

    def order(self, ctx: StepContext, remembered: list[tuple[MemoryNote, Any]],
              hints: Sequence[tuple[MemoryNote, Any]] = (), skills: Sequence[tuple[MemoryNote, Any]] = ()) -> list[Choice]:
        first = [Choice(c) for _, c in skills]  # a verified skill's change is the first try (credited as a skill)
        rest = [Choice(c) for c in self.space]
        if ctx.stage == "draft":
            return first + _choices(remembered, self.fingerprint) + _choices(hints, self.fingerprint) \
                + [Choice(self.default)] + rest
        start = self.start(ctx)
        valued = _choices([(note, c) for note, c in remembered if note.value > 0], self.fingerprint)
        # What the remembered refinements say about each neighbour's change: the summed rewards of those
        # that made the same change (from their start point; traces from before that was recorded, from
        # their task's default). A change that kept losing (on KernelBench's convolutions, gather flat and
        # taps from nhwc lost on every warm-up task, and every held-out task then tried both again) waits
        # until the others are tried; one that paid comes first.
        learned = [(note, _change(note.extra.get("start_config", note.extra.get("default_config")), c.to_dict()))
                   for note, c in remembered if note.stage == "refine" and note.reward is not None]
        learned = [(note, change) for note, change in learned if change]
        here = start.to_dict()
        near = []  # (net reward of the evidence, place in the neighbours' own order, config, evidence ids)
        for index, config in enumerate(self.neighbours(start)):
            mine = _change(here, config.to_dict())  # the neighbour's change, once
            evidence = [note for note, change in learned if _same_change(change, mine)]
            near.append((sum(note.reward for note in evidence), index, config, tuple(note.id for note in evidence)))
        # the largest net gain first, then no evidence, then the smallest net loss; neighbours with the same
        # verdict keep their own order
        ranked = sorted(near, key=lambda n: (-n[0], n[1]))
        # A neighbour is placed by its own evidence, and by the losses that moved an untried neighbour from
        # ahead of it to behind it: had those not been remembered, that one would have been tried first.
        losers = [(net, index, ids) for net, index, config, ids in near
                  if net < 0 and self.fingerprint(config) not in ctx.tried]
        choices = []
        for net, index, config, ids in ranked:
            pushed = [i for lost, at, lost_ids in losers for i in lost_ids
                      if (lost, -at) < (net, -index) and (net < 0 or (net == 0 and at < index))]
            choices.append(Choice(config, ids + tuple(dict.fromkeys(i for i in pushed if i not in ids))))
        return first + valued + choices + rest

    def start(self, ctx: StepContext) -> Any:
        """The configuration a refining step starts from: its start point's, else the default."""
        start = self._parse(ctx.start_point.extra.get(self.config_key)) if ctx.start_point is not None else None
        return start if start is not None else self.default

    def first_untried(self, order: Sequence[Choice], tried: frozenset[str]) -> Choice | None:
        for choice in order:
            if self.fingerprint(choice.config) not in tried:
                return choice
        return None
