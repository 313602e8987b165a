"""Degenerate references, the stress trials that test them anyway, and
references that cannot be matched at all.

A task's reference is degenerate on its own inputs when a wrong kernel can
match it without computing the operator: its output is near zero (writing
zeros passes), constant or nearly so, one value per row, or the same whatever
the inputs are. KernelBench level2/9 is the real case: on `torch.rand` inputs
`relu((x @ W.T + b - 2) * 1.5)` is zero everywhere, so a kernel computing
`x @ W` instead passes every trial.

Where that happens the executor does not warn and pass: it draws stress
inputs from other distributions the reference accepts (normal, scaled and
shifted normal, a wider uniform range, the task's own inputs with their sign
flipped), keeps the first distribution under which the reference's output is
finite and no longer degenerate, and requires the candidate to match there
too. Where no distribution helps, the task itself is marked degenerate (in
the verdict and in results files), so its speedups stay out of geometric
means.

A distribution under which the reference is itself far from the operator
(its own run in float64 on the same inputs, `exact`, differs past
`TRUSTED_REFERENCE_ERROR`: a GRU on normal(0, 100) inputs, whose saturated
TF32 gates put its outputs 18-22% RMS from its float64 run) is not used
either: there no kernel, however exact, could be told right from wrong.

A reference that gives two different answers on the same inputs (dropout in
training mode, unseeded randomness, state kept between calls) cannot be
matched by any candidate: that is a task error, found by running it twice.

Everything here looks only at the reference, never at a candidate, and keeps
only small samples of outputs, so it costs a few reference runs.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import torch

from ._compare import TRUSTED_REFERENCE_ERROR, compare, flatten, tolerance_for
from ._oracle import Oracle
from ._precision import TOLERANCES, cast_model, cast_values

# Share of elements a single value (zero, or the output's median) may match
# within tolerance before the output counts as (mostly) that value.
MOSTLY = 0.9
# Outputs larger than this are judged on an evenly spaced sample of elements.
SAMPLE_ELEMENTS = 1 << 20
# Stress draws per distribution: two, so that sensitivity to the inputs can be checked too.
DRAWS = 2

Forward = Callable[[list[Any]], Any]
# (inputs, the reference's outputs on them) -> the same outputs computed in float64, or None
Exact = Callable[[list[Any], Any], Any]


@dataclasses.dataclass(frozen=True)
class Distribution:
    name: str
    draw: Callable[[torch.Tensor, torch.Generator], torch.Tensor]


def _normal(mean: float, std: float) -> Callable[[torch.Tensor, torch.Generator], torch.Tensor]:
    def draw(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        return torch.randn(x.shape, generator=gen, device=x.device, dtype=x.dtype) * std + mean

    return draw


def _uniform(low: float, high: float) -> Callable[[torch.Tensor, torch.Generator], torch.Tensor]:
    def draw(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        return torch.rand(x.shape, generator=gen, device=x.device, dtype=x.dtype) * (high - low) + low

    return draw


def _flip(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    return -x


# Mildest first: the candidate is tested under the first one that works.
DISTRIBUTIONS = (
    Distribution("normal(0, 1)", _normal(0.0, 1.0)),
    Distribution("the task's inputs with their sign flipped", _flip),
    Distribution("normal(0, 10)", _normal(0.0, 10.0)),
    Distribution("normal(3, 1)", _normal(3.0, 1.0)),
    Distribution("uniform(-10, 10)", _uniform(-10.0, 10.0)),
    Distribution("normal(0, 100)", _normal(0.0, 100.0)),
)


def _float_leaves(out: Any) -> list[torch.Tensor]:
    return [t for t in flatten(out) if isinstance(t, torch.Tensor)]


def _sample(t: torch.Tensor) -> torch.Tensor:
    """The tensor, or an evenly spaced sample of its elements, flattened, in float64."""
    flat = t.detach().reshape(-1)
    if flat.numel() > SAMPLE_ELEMENTS:
        flat = flat[:: -(-flat.numel() // SAMPLE_ELEMENTS)]
    return flat.double() if (flat.is_floating_point() or not flat.is_complex()) else flat.abs().double()


def output_findings(out: Any, tolerance: tuple[float, float] | None = None) -> list[tuple[str, str]]:
    """(kind, why) for each way these reference outputs cannot tell a right kernel from a wrong one.

    Kinds: empty, constant, non_finite, near_zero, mostly_zero, low_variance, one_value_per_row.
    """
    leaves = _float_leaves(out)
    found: list[tuple[str, str]] = []
    for k, t in enumerate(leaves):
        label = f"output {k}" if len(leaves) > 1 else "the output"
        if t.numel() == 0:
            found.append(("empty", f"{label} is empty"))
            continue
        if t.dtype == torch.bool or not (t.is_floating_point() or t.is_complex()):
            flat = t.detach().reshape(-1)
            if bool((flat == flat[0]).all()):
                found.append(("constant", f"{label} is constant ({flat[0].item()})"))
            continue
        e = _sample(t)
        finite = torch.isfinite(e)
        if not bool(finite.all()):
            found.append(("non_finite", f"{label} has {int((~finite).sum())} of {e.numel()} NaN/inf elements"
                          + (" (sampled)" if e.numel() < t.numel() else "")))
            continue
        atol, rtol = tolerance_for(t.dtype, tolerance)
        allowed = atol + rtol * e.abs()
        zero_share = float((e.abs() <= allowed).double().mean())
        median = e.median()
        const_share = float(((e - median).abs() <= allowed).double().mean())
        if zero_share == 1.0:
            found.append(("near_zero", f"{label} is so close to zero that an all-zero output passes atol={atol:g} "
                                       f"(max |out| {float(e.abs().max()):.3g})"))
        elif zero_share >= MOSTLY:
            found.append(("mostly_zero", f"{label} is mostly zero (zero matches {zero_share:.1%} of its elements within atol={atol:g})"))
        elif const_share == 1.0:
            found.append(("constant", f"{label} is constant ({float(median):.6g} everywhere within tolerance)"))
        elif const_share >= MOSTLY:
            found.append(("low_variance", f"{label} has low variance (one value, {float(median):.6g}, "
                                          f"matches {const_share:.1%} of its elements)"))
        elif t.dim() >= 2 and t.shape[-1] > 1 and _one_value_per_row(t, atol, rtol):
            found.append(("one_value_per_row", f"{label} holds one value per row (constant along its last dimension)"))
    return found


def output_reasons(out: Any, tolerance: tuple[float, float] | None = None) -> list[str]:
    """Why these reference outputs cannot tell a right kernel from a wrong one ([] when they can)."""
    return [why for _, why in output_findings(out, tolerance)]


def _one_value_per_row(t: torch.Tensor, atol: float, rtol: float) -> bool:
    rows = t.detach().reshape(-1, t.shape[-1])
    # at most 256 rows of 4096 columns: a 4096 x 393216 output must not be copied whole
    rows = rows[:: -(-rows.shape[0] // 256), :: -(-rows.shape[1] // 4096)].double()
    spread = (rows - rows[:, :1]).abs()
    return bool((spread <= atol + rtol * rows.abs()).all())


Samples = list  # samples of each output leaf (`samples`): what is kept of an output once judged


def samples(out: Any) -> Samples:
    """A small, fixed sample of every leaf of an output, with its shape, to compare outputs by."""
    return [(tuple(t.shape), _sample(t).to(t.dtype)) for t in _float_leaves(out)]


def _same(a: Samples, b: Samples, tolerance: tuple[float, float] | None) -> bool:
    """Would the verifier accept output `b` for the reference output `a` (judged on their samples)?"""
    if len(a) != len(b) or any(sa != sb for (sa, _), (sb, _) in zip(a, b)):
        return False
    return compare([x for _, x in a], [y for _, y in b], tolerance).ok


def _finite(out: Any) -> bool:
    return all(bool(torch.isfinite(t).all()) for t in _float_leaves(out) if t.is_floating_point() or t.is_complex())


def _float_positions(inputs: Sequence[Any]) -> list[int]:
    return [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.is_floating_point()]


def insensitive_inputs(forward: Forward, a: list[Any], b: list[Any], out_a: Samples, tolerance: tuple[float, float] | None) -> list[int]:
    """Float inputs whose redraw (from set `b` into set `a`) leaves the output unchanged."""
    found = []
    for i in _float_positions(a):
        if i >= len(b) or not isinstance(b[i], torch.Tensor) or b[i].shape != a[i].shape or torch.equal(a[i], b[i]):
            continue
        mixed = list(a)
        mixed[i] = b[i]
        if _same(out_a, samples(forward(mixed)), tolerance):
            found.append(i)
    return found


def nondeterminism(expected: Any, again: Any, tolerance: tuple[float, float] | None) -> str | None:
    """A message when a second reference run on the same inputs (`again`) gave another answer."""
    cmp = compare(expected, again, tolerance)
    if cmp.ok:
        return None
    return (
        "the reference is not deterministic: two runs on the same inputs differ "
        f"({cmp.feedback.split(';')[0]}); dropout in training mode, unseeded randomness or state kept between "
        "calls would make every candidate fail, so no verdict about a candidate is possible. Seed or remove the "
        "randomness in the task."
    )


@dataclasses.dataclass
class Observations:
    """What the regular trials showed about the reference: small output samples, and reasons."""

    tolerance: tuple[float, float] | None
    outputs: list[Any] = dataclasses.field(default_factory=list)
    reasons: list[str] = dataclasses.field(default_factory=list)

    def add(self, expected: Any) -> None:
        self.outputs.append(samples(expected))
        for r in output_reasons(expected, self.tolerance):
            if r not in self.reasons:
                self.reasons.append(r)


Draw = Callable[[], list[Any]]


@dataclasses.dataclass
class StressPlan:
    """Extra input sets the candidate must also match, or why the task stays degenerate."""

    sets: list[tuple[str, Draw]]  # (label, draw): drawn when checked, like every other set
    reasons: list[str]  # why the task's own inputs are degenerate ([]: they are not)
    distribution: str = ""  # the distribution the stress sets come from
    degenerate: str = ""  # set when no distribution helps: the task is degenerate


def degeneracy(forward: Forward, seen: Observations, trial_draws: Sequence[Draw]) -> list[str]:
    """Reasons the task's own inputs are degenerate: the trials' outputs, then a per-input sensitivity probe."""
    reasons = list(seen.reasons)
    if len(seen.outputs) >= 2 and all(_same(seen.outputs[0], o, seen.tolerance) for o in seen.outputs[1:]):
        reasons.append(f"the output is the same on all {len(seen.outputs)} trials' inputs (insensitive to the inputs)")
    elif len(trial_draws) >= 2:
        a, b = trial_draws[0](), trial_draws[1]()
        for i in insensitive_inputs(forward, a, b, samples(forward(a)), seen.tolerance):
            reasons.append(f"the output does not change when input {i} is redrawn (insensitive to input {i})")
    return reasons


def stress_draw(base: Draw, dist: Distribution, seed: int) -> Draw:
    """Draw the task's inputs, then replace each float tensor by one from `dist` (same shape, dtype, device)."""

    def draw() -> list[Any]:
        inputs = list(base())
        for i in _float_positions(inputs):
            gen = torch.Generator(device=inputs[i].device).manual_seed(seed + i)
            inputs[i] = dist.draw(inputs[i], gen)  # the task's tensor is freed as it is replaced
        return inputs

    return draw


def plan_stress(forward: Forward, seen: Observations, trial_draws: Sequence[Draw], *, seed: int, max_sets: int = DRAWS,
                exact: Exact | None = None) -> StressPlan:
    """Stress sets for a degenerate reference (none when the task's own inputs are fine).

    With `exact`, a distribution under which the reference is past trust of its float64 run is skipped."""
    reasons = degeneracy(forward, seen, trial_draws)
    if not reasons or not trial_draws or max_sets <= 0:
        return StressPlan([], reasons)
    why = "; ".join(reasons)
    bases = [trial_draws[k % len(trial_draws)] for k in range(DRAWS)]
    if not _float_positions(bases[0]()):
        return StressPlan([], reasons, degenerate=f"{why}; the task has no float inputs to redraw")
    untrusted = []
    for dist in DISTRIBUTIONS:
        draws = [stress_draw(base, dist, seed + 7919 * (k + 1)) for k, base in enumerate(bases)]
        helps = _helps(forward, draws, seen.tolerance, exact)
        if helps is True:
            sets = [(f"stress trial {k + 1} (inputs from {dist.name}, because on the task's own inputs {why})", d)
                    for k, d in enumerate(draws[:max_sets])]
            return StressPlan(sets, reasons, distribution=dist.name)
        if helps:
            untrusted.append(f"{dist.name}: {helps}")
    tried = ", ".join(d.name for d in DISTRIBUTIONS)
    skipped = f" (skipped as untrustworthy: {'; '.join(untrusted)})" if untrusted else ""
    return StressPlan([], reasons, degenerate=f"{why}; no stress distribution ({tried}) gave finite, non-degenerate "
                                              f"outputs that the reference computes within trust{skipped}")


def reference_error(out: Any, exact_out: Any) -> float | None:
    """The reference's RMS error against its float64 run, relative to that run's RMS, worst over its
    fp32 (or wider) floating outputs; None where there is none to measure. Half-precision outputs are
    left out: their references are routinely past trust (backends/_compare.py)."""
    pairs = [(e, x) for e, x in zip(flatten(out), flatten(exact_out))
             if isinstance(e, torch.Tensor) and isinstance(x, torch.Tensor) and e.is_floating_point()
             and e.dtype not in (torch.float16, torch.bfloat16)]
    if not pairs:
        return None
    cmp = compare([e for e, _ in pairs], [e for e, _ in pairs], exact=[x for _, x in pairs])
    return cmp.reference_error


def _helps(forward: Forward, draws: list[Draw], tolerance: tuple[float, float] | None,
           exact: Exact | None = None) -> bool | str:
    """True for finite, non-degenerate reference outputs on every draw that move with each input and that
    the reference computes within trust of its float64 run; else False, or why the reference is untrusted.

    Only samples of the outputs are kept once judged, so at most two input sets are alive at a time.
    """
    kept = []
    for draw in draws[:2]:
        inputs = draw()
        try:
            out = forward(inputs)
        except Exception:  # the reference refuses this distribution (a domain check): try the next one
            return False
        if not _finite(out) or output_reasons(out, tolerance):
            return False
        if exact is not None:
            err = reference_error(out, exact(inputs, out))
            if err is not None and not err <= TRUSTED_REFERENCE_ERROR:
                return (f"the reference's output is {err:.3g} RMS from its float64 run "
                        f"(trusted up to {TRUSTED_REFERENCE_ERROR:g})")
        kept.append((inputs, samples(out)))
        del out
    (a, out_a), (b, out_b) = kept
    if _same(out_a, out_b, tolerance):
        return False
    return not insensitive_inputs(forward, a, b, out_a, tolerance)


def assess_task(
    task: Any,
    *,
    trials: int = 3,
    seed: int = 1234,
    device: str = "cpu",
    tolerance: tuple[float, float] | None = None,
    precision: str = "fp32",
) -> StressPlan:
    """The executor's degeneracy check on a task module, without a candidate.

    The reference is built with `seed` and run on `trials` input sets drawn
    with seeds `seed + 1 + t` (as the executor draws them), model and floating
    inputs cast to `precision` as the executor casts them; the plan says
    why the task's own inputs are degenerate, if they are, and either the
    distribution its stress trials would come from or, in `degenerate`, that
    none helps. Raises what the task raises.
    """
    dev = torch.device(device)
    if tolerance is None and getattr(task, "TOLERANCE", None) is not None:
        tolerance = tuple(float(v) for v in task.TOLERANCE)  # type: ignore[assignment]
    if tolerance is None and precision != "fp32":
        tolerance = TOLERANCES[precision]
    torch.manual_seed(seed)
    model = cast_model(task.Model(*cast_values(list(task.get_init_inputs()), precision)).to(dev).eval(), precision)

    def draw_with(s: int) -> Draw:
        def draw() -> list[Any]:
            torch.manual_seed(s)
            with dev:
                return cast_values([x.to(dev) if isinstance(x, torch.Tensor) else x for x in task.get_inputs()],
                                   precision)

        return draw

    def forward(xs: list[Any]) -> Any:
        with torch.no_grad():
            return model(*[x.clone() if isinstance(x, torch.Tensor) else x for x in xs])

    draws = [draw_with(seed + 1 + t) for t in range(max(trials, 1))]
    seen = Observations(tolerance)
    for d in draws:
        seen.add(forward(d()))
    oracle = Oracle(model, dev)
    return plan_stress(forward, seen, draws, seed=seed, exact=oracle.exact)


__all__ = [
    "DISTRIBUTIONS",
    "assess_task",
    "Distribution",
    "Observations",
    "StressPlan",
    "degeneracy",
    "insensitive_inputs",
    "nondeterminism",
    "output_findings",
    "output_reasons",
    "plan_stress",
    "reference_error",
    "stress_draw",
]
