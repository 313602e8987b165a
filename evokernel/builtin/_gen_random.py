"""Random draws a forward makes (``torch.randn``/``torch.rand`` of a static shape),
e.g. an LSTM's h0/c0 drawn when the caller passes none.

The draw is state the task makes up, not compute over its inputs: every call of
the reference draws fresh values, so its output can only be checked where it does
not depend on them (the executor runs the reference twice on the same inputs and
calls a task whose runs differ nondeterministic). The candidate draws as the
reference does, where the rules let it:

- ``kernelbench`` rules allow library calls beside our own kernels: the candidate
  calls ``torch.randn``/``torch.rand`` with the reference's shape, dtype and device
  at the same point of forward, on the same global generator. A harness that seeds
  the generator before each model call (KernelBench's does) sees the very values
  the reference drew; one that does not sees another draw of the same distribution,
  as the reference's own second run does.
- ``strict`` rules count torch's random kernels as PyTorch compute outside our
  kernels: our own kernel draws the same distribution (Philox, Triton's
  ``tl.randn``/``tl.rand``), seeded from a counter the candidate keeps, so each call
  is a fresh draw, as the reference's is. The seed is a launch argument, so such a
  forward is never replayed from a launch plan (it would draw the recorded seed again). The values differ from torch's generator;
  no rule lets a candidate read that generator's state without drawing from it.
"""

from __future__ import annotations

import math

from ._emit import StageCode
from ._ir import Plan

__all__ = ["generate_random"]

BLOCK = 1024

_TORCH_CALL = {"normal": "randn", "uniform": "rand"}

# one counter for every draw of the candidate: two draws in one call, and two calls, get different seeds
_COUNTER = "_random_draws = [0]  # draws made so far by this candidate; the next one's seed is one more\n"


def _kernel(tag: str) -> str:
    # the seed changes every call: not specialised on (a seed of 1 or a multiple of 16 would compile anew)
    return f'''@triton.jit(do_not_specialize=["seed"])
def _random_kernel{tag}(out_ptr, seed, n, NORMAL: tl.constexpr, BLOCK: tl.constexpr):
    # element i is Philox's draw at counter i under this call's seed
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if NORMAL:
        value = tl.randn(seed, offs)
    else:
        value = tl.rand(seed, offs)
    tl.store(out_ptr + offs, value.to(out_ptr.dtype.element_ty), mask=mask)
'''


def generate_random(plan: Plan, tag: str) -> StageCode:
    node = plan.node(plan.anchor_id)
    device = plan.leaves[0].name  # the forward tensor whose device the draw is made on
    kind = node.attr("kind")
    shape = tuple(node.shape)
    dtype = f"torch.{plan.out_spec.dtype}"
    entry = f"fused_random{tag}"
    if plan.rules == "kernelbench":
        # a host step: a launch plan replays it by calling it again, so every call draws anew
        body = [f"    # the reference's own call, on the same global generator (library calls are allowed here)",
                f"    return torch.{_TORCH_CALL[kind]}({shape!r}, dtype={dtype}, device={device}.device)"]
        return StageCode(kernels=(), launcher=f"@_host_draw\ndef {entry}({device}):\n" + "\n".join(body) + "\n",
                         entry=entry)
    n = math.prod(shape)
    if n >= 2 ** 31:
        raise ValueError(f"a random draw of {n} elements: the kernel counts elements in 32 bits")
    lines = [
        f"def {entry}({device}):",
        "    # strict rules: our kernel draws the distribution torch's generator would (see the docstring of",
        "    # the builtin's _gen_random: no rule lets a candidate read that generator without drawing from it)",
        "    _unplannable('a random draw: each call draws anew')",
        "    _random_draws[0] += 1",
        f"    out = torch.empty({shape!r}, dtype={dtype}, device={device}.device)",
        "    if out.numel():",
        f"        _random_kernel{tag}[(triton.cdiv(out.numel(), {BLOCK}),)](",
        f"            out, _random_draws[0], out.numel(), NORMAL={kind == 'normal'}, BLOCK={BLOCK})",
        "    return out",
    ]
    return StageCode(kernels=(_kernel(tag),), launcher="\n".join(lines) + "\n", entry=entry, helpers=(_COUNTER,))
