"""The accuracy oracle: the task's reference run in float64 on the same inputs.

The reference's own output is rounded (fp32 accumulation, TF32 in cuDNN's
convolutions, fp16 where the task is fp16); its float64 run is what the
operator computes, close enough to exact to measure both sides' errors
against (backends/_compare.py judges with it). The model is a float64 copy of
the reference model (floating parameters, buffers and plain tensor
attributes cast), and every floating input is cast to float64; integer
inputs and outputs stay as they are.

Where the reference cannot run in float64 (an op without a float64 kernel,
dtypes fixed inside its forward that clash, too little memory), the oracle
says why in one line and the verdict falls back to the tolerance alone.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from typing import Any, Callable

import torch

from ._compare import CONDITIONING_DRAWS, Comparison, flatten
from ._memory import device_free_bytes, is_out_of_memory
from ._precision import cast_tensor_attributes
from ._task import tensor_bytes

_CROWDED_OUT = "too little free device memory for the float64 reference"
WIDE = {torch.float16: torch.float64, torch.bfloat16: torch.float64, torch.float32: torch.float64,
        torch.complex32: torch.complex128, torch.complex64: torch.complex128}


def _wide_bytes(tensors: Any) -> int:
    """Bytes the tensors take once widened (floating ones to float64, as `widen` casts them)."""
    return sum(t.numel() * WIDE.get(t.dtype, t.dtype).itemsize for t in tensors)


def widen(x: Any) -> Any:
    """Floating tensors (in lists and tuples too) as float64 or complex128; everything else as it is."""
    if isinstance(x, torch.Tensor):
        return x.to(WIDE[x.dtype]) if x.dtype in WIDE else x
    if isinstance(x, (list, tuple)):
        return type(x)(widen(v) for v in x)
    return x


def float64_model(model: torch.nn.Module) -> torch.nn.Module:
    """A float64 copy of `model`: parameters, buffers and tensors kept as plain attributes."""
    wide = copy.deepcopy(model).double()
    cast_tensor_attributes(wide, widen)
    return wide


def needs_oracle(expected: Any) -> str:
    """Why the reference's outputs `expected` need no float64 run ("" when they do)."""
    leaves = [t for t in flatten(expected) if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex())]
    if not leaves:
        return "the outputs are not floating point"
    if all(t.dtype in (torch.float64, torch.complex128) for t in leaves):
        return "the reference computes in float64 already"
    return ""


@dataclasses.dataclass
class Oracle:
    """The float64 reference of one evaluation: built at first use, or why it cannot be."""

    reference: torch.nn.Module  # the task's model, widened to float64 at first use
    device: torch.device
    model: torch.nn.Module | None = None  # its float64 copy
    unavailable: str = ""  # why there is no float64 reference ("" while there is, or may be)
    # What the comparisons against it measured, the worst over the input sets (see `note`).
    reference_error: float | None = None
    candidate_error: float | None = None
    by_accuracy: bool = False

    def note(self, cmp: Comparison) -> None:
        """Keep the worst errors a comparison measured against the float64 output."""
        if cmp.reference_error is not None:
            self.reference_error = max(self.reference_error or 0.0, cmp.reference_error)
        if cmp.candidate_error is not None:
            self.candidate_error = max(self.candidate_error or 0.0, cmp.candidate_error)
        self.by_accuracy = self.by_accuracy or cmp.by_accuracy

    def facts(self, cmp: Comparison | None = None) -> dict[str, Any]:
        """The EvalResult fields of what was measured (`cmp` noted first), by name."""
        if cmp is not None:
            self.note(cmp)
        return {"reference_error": self.reference_error, "candidate_error": self.candidate_error,
                "by_accuracy": self.by_accuracy, "oracle_unavailable": self.unavailable}

    def describe(self) -> str:
        """One sentence for the feedback: both errors, or why there is no float64 reference."""
        if self.unavailable:
            return f"No float64 reference to measure accuracy against ({self.unavailable}): judged by the tolerance alone."
        if self.candidate_error is None:
            return ""
        text = (f"Against the reference run in float64: RMS error {self.candidate_error:.3g} of the output's RMS "
                f"(the reference's own {self.reference_error:.3g}).")
        if self.by_accuracy:
            text += (" Elements past the tolerance against the reference were accepted because they are within it "
                     "of the float64 output, where the reference's own rounding is not.")
        return text

    def exact(self, inputs: list[Any], expected: Any) -> Any | None:
        """The reference's outputs on `inputs` computed in float64, or None (then `unavailable` says why)."""
        if self.unavailable:
            return None
        why = needs_oracle(expected)
        if why:
            self.unavailable = why
            return None
        crowded = self.crowds_out(inputs, expected)
        if crowded:
            self.drop(crowded)
            return None
        try:
            if self.model is None:
                self.model = float64_model(self.reference)
            with torch.no_grad():
                out = self.model(*widen([x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]))
            if self.device.type == "cuda":
                torch.cuda.synchronize(self.device)
        except Exception as exc:  # noqa: BLE001 - any failure means no oracle, never a verdict
            first = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}" if str(exc) else type(exc).__name__
            if self.device.type == "cuda" and is_out_of_memory(exc):
                # the estimate fitted but the run did not (its intermediates, a neighbour's allocation since):
                # crowded out as well, so a re-run with the GPU to itself may find the room (level1's
                # 89-93 cumsums and 4_Matrix_vector in bf16 beside a second worker on an H100)
                self.drop(f"{_CROWDED_OUT}: the float64 run ran out of memory ({first})")
            else:
                self.drop(f"the reference does not run in float64: {first}")
            return None
        got, want = flatten(out), flatten(expected)
        if len(got) != len(want) or any(isinstance(w, torch.Tensor) and (not isinstance(g, torch.Tensor) or g.shape != w.shape)
                                         for g, w in zip(got, want)):
            self.drop("the reference's float64 run returns outputs of other shapes than its own")
            return None
        return out

    def conditioning(self, inputs: list[Any], expected: Any, exact: Any) -> Callable[[], Any]:
        """A call returning each output's per-element conditioning on `inputs` (in `exact`'s
        structure; None where it cannot be measured): how far the float64 run moves when every
        floating input, parameter and buffer is scaled by 1 +/- one unit of roundoff of the
        task's precision (random signs), the largest move over CONDITIONING_DRAWS draws. It
        runs the float64 model that many more times, so it is called only when a comparison
        needs it (backends/_compare.py, COND_SLACK), and measured once: every comparison on
        these inputs (the first run's, the re-run's after poisoning) is judged by the same
        measure, whatever memory the candidate holds by then."""
        @functools.cache
        def measure() -> Any:
            if exact is None or self.model is None or self.unavailable:
                return None
            floats = [t for t in flatten(expected) if isinstance(t, torch.Tensor) and t.is_floating_point()]
            if not floats or self.crowds_out(inputs, expected) or not self._room_for_draws(inputs, exact):
                return None
            unit = float(torch.finfo(floats[0].dtype).eps) / 2.0
            generator = torch.Generator(device="cpu").manual_seed(0)

            def flip(t: torch.Tensor) -> torch.Tensor:
                signs = torch.randint(0, 2, t.shape, generator=generator).to(device=t.device, dtype=t.dtype)
                return signs.mul_(2.0 * unit).add_(1.0 - unit).mul_(t)  # t * (1 +/- unit)

            try:
                wide, targets = widen(list(inputs)), flatten(exact)
                worst: list[Any] = [None] * len(targets)
                for _ in range(CONDITIONING_DRAWS):
                    model = copy.deepcopy(self.model)
                    with torch.no_grad():
                        for t in (*model.parameters(), *model.buffers()):
                            if t.is_floating_point():
                                t.copy_(flip(t))
                        moved = model(*[flip(x) if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                                        for x in wide])
                    outs = flatten(moved)
                    storages = [m.untyped_storage().data_ptr() for m in outs if isinstance(m, torch.Tensor)]
                    in_place = len(set(storages)) == len(storages)  # outputs sharing memory are moved apart
                    for i, (m, x) in enumerate(zip(outs, targets)):
                        if isinstance(m, torch.Tensor) and isinstance(x, torch.Tensor) and m.shape == x.shape \
                                and x.is_floating_point() and m.dtype == x.dtype:
                            # in place where it can: a deep network's float64 outputs are large
                            d = m.sub_(x).abs_() if in_place and m.is_contiguous() else (m - x).abs()
                            worst[i] = d if worst[i] is None else torch.maximum(worst[i], d, out=worst[i])
                    del model, moved, outs
                return worst
            except Exception:  # noqa: BLE001 - no measure of conditioning means no allowance by it, never a verdict
                if self.device.type == "cuda":
                    torch.cuda.empty_cache()
                return None

        return measure

    def _room_for_draws(self, inputs: list[Any], exact: Any) -> bool:
        """Whether a draw of `conditioning` fits in device memory beside everything else: the
        float64 model twice (a draw's copy, and as much again for its activations), the float64
        inputs twice (widened, then perturbed) and the float64 outputs twice (the perturbed
        run's, and the largest move so far)."""
        if self.device.type != "cuda" or self.model is None:
            return True
        model = tensor_bytes([*self.model.parameters(), *self.model.buffers()])
        ins = _wide_bytes(t for t in flatten(inputs) if isinstance(t, torch.Tensor))
        outs = tensor_bytes(flatten(exact))  # float64 already
        return 2 * (model + ins + outs) <= device_free_bytes(self.device)

    def crowds_out(self, inputs: list[Any], expected: Any) -> str:
        """Why a float64 run now would leave the candidate too little device memory ("" when it would not).

        The memory plan (backends/_memory.py) counts the candidate's share, not this run's: its
        float64 inputs and outputs (and weights, the first time) must fit beside the candidate's
        output and input clones, or the candidate would be blamed for running out."""
        if self.device.type != "cuda":
            return ""
        tensors = [t for t in flatten(inputs) if isinstance(t, torch.Tensor)]
        outputs = [t for t in flatten(expected) if isinstance(t, torch.Tensor)]
        weights = [] if self.model is not None else self.base_tensors()
        wide = _wide_bytes((*tensors, *outputs, *weights))
        reserve = tensor_bytes([*tensors, *outputs])
        free = device_free_bytes(self.device)  # the caching allocator's idle blocks count: a draw leaves some
        if wide + reserve <= free:
            return ""
        return (f"{_CROWDED_OUT}: {wide / 2**30:.2f} GiB for it beside "
                f"{reserve / 2**30:.2f} GiB the candidate needs, {free / 2**30:.2f} GiB free")

    @staticmethod
    def crowded_out(unavailable: str) -> bool:
        """Whether an oracle was `unavailable` (its reason) for want of free device memory, which a
        neighbour on a shared GPU may have taken: with the GPU to itself it may fit."""
        return unavailable.startswith(_CROWDED_OUT)

    def base_tensors(self) -> list[torch.Tensor]:
        """The reference model's parameters and buffers, which the float64 copy widens."""
        return list(self.reference.parameters()) + list(self.reference.buffers())

    def drop(self, why: str) -> None:
        """No float64 reference from here on, for this reason; its model's memory is freed."""
        self.unavailable, self.model = why, None
        if self.device.type == "cuda":
            torch.cuda.empty_cache()


__all__ = ["Oracle", "float64_model", "needs_oracle", "widen"]
