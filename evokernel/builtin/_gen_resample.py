"""Resampling (nn.Upsample, F.interpolate): one kernel over the output's elements; each
element computes its source position along every spatial dim and reads the input there
(one read for the nearest modes, two per dim blended for the linear ones).

torch's source-index rule, per spatial dim, with ``scale`` an fp32 step from output to
input (the launcher's ``_resample_scales``):

* nearest: ``min(floor(o * scale), n_in - 1)``; nearest-exact: ``floor((o + 0.5) * scale)``,
  clamped alike;
* linear, bilinear, trilinear: ``r = scale * o`` with aligned corners, else the half-pixel
  position ``max(scale * (o + 0.5) - 0.5, 0)``; the two neighbours ``i0 = trunc(r)`` and
  ``i0 + 1`` (``i0`` again at the last input) weighted ``1 - (r - i0)`` and ``r - i0``,
  blended innermost dim first.

The output is laid out as the input when that is channels-last (torch's resampling keeps
the input's memory format), else contiguous; the kernel walks it in memory order.
"""

from __future__ import annotations

from ._emit import StageCode, wrap_params
from ._gen_elementwise import SPAN_HELPER
from ._ir import Plan

__all__ = ["generate_resample", "RESAMPLE_HELPER"]

BLOCK = 1024

# The step per spatial dim, as torch computes it. Where a scale factor keeps a dim's size (1.1 on a
# 7-wide dim) or doubles it (2.1 on a 5-wide one), some of torch's kernels take the exact step
# (a copy, a halving) instead of 1 / factor, and which do differs by device and rank (measured
# against torch 2.13 on the CPU and on an H200):
#   CPU:  2-d nearest, a kept or doubled dim; the linear modes, a kept dim;
#   CUDA: 2-d nearest and nearest-exact, a kept dim; the linear modes, when every dim is kept.
RESAMPLE_HELPER = '''def _resample_scales(mode, n_in, n_out, factors, align_corners, on_cuda):
    """Per spatial dim, the step from an output position to the input's (fp32 in the kernel)."""
    all_kept = tuple(n_in) == tuple(n_out)
    scales = []
    for d, (i, o) in enumerate(zip(n_in, n_out)):
        if align_corners:
            scale = (i - 1) / (o - 1) if o > 1 else 0.0
        elif factors is not None and factors[d] > 0:
            scale = 1.0 / factors[d]
        else:
            scale = i / o
        if mode == "linear" and not align_corners:
            if all_kept if on_cuda else o == i:
                scale = 1.0
        elif mode != "linear" and len(n_in) == 2 and on_cuda and o == i:
            scale = 1.0
        elif len(n_in) == 2 and not on_cuda and mode == "nearest" and o in (i, 2 * i):
            scale = i / o
        scales.append(scale)
    return scales


def _resample_layout(x):
    """torch's resampling keeps a channels-last input's layout (its result is channels-last too)."""
    formats = {4: torch.channels_last, 5: torch.channels_last_3d}
    fmt = formats.get(x.dim())
    if fmt is not None and not x.is_contiguous() and x.is_contiguous(memory_format=fmt):
        return fmt, True
    return torch.contiguous_format, False
'''


def _blend(nd: int, d: int = 0, corner: str = "") -> str:
    """The linear modes' value: dim d's two neighbours blended, the dims after it inside."""
    if d == nd:
        return f"v_{corner}"
    low, high = _blend(nd, d + 1, corner + "0"), _blend(nd, d + 1, corner + "1")
    return f"l0_{d} * ({low}) + l1_{d} * ({high})" if d + 1 < nd else f"l0_{d} * {low} + l1_{d} * {high}"


def _kernel(nd: int, mode: str, align_corners: bool, tag: str) -> str:
    dims = range(nd)
    params = (["src_ptr", "out_ptr", "n_elements", "size_c"] + [f"out_{d}" for d in dims] + [f"in_{d}" for d in dims]
              + ["stride_n", "stride_c"] + [f"stride_{d}" for d in dims] + [f"scale_{d}" for d in dims])
    lines = ["@triton.jit", f"def _resample_kernel{tag}(", *wrap_params(params),
             "    CHANNELS_LAST: tl.constexpr, IDX64: tl.constexpr, BLOCK_SIZE: tl.constexpr,", "):",
             "    if IDX64:",
             "        offs = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)",
             "    else:",
             "        offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)",
             "    mask = offs < n_elements",
             "    rem = offs",
             "    if CHANNELS_LAST:  # memory order: batch, spatial dims, channel",
             "        c = rem % size_c",
             "        rem = rem // size_c"]
    spatial = [line for d in reversed(dims)
               for line in (f"        o_{d} = rem % out_{d}", f"        rem = rem // out_{d}")]
    lines += spatial + ["    else:"] + spatial + ["        c = rem % size_c", "        rem = rem // size_c",
                                                  "    base = rem * stride_n + c * stride_c"]
    for d in dims:
        pos = f"o_{d}.to(tl.float32)"
        if mode == "linear":
            at = f"scale_{d} * {pos}" if align_corners else f"tl.maximum(scale_{d} * ({pos} + 0.5) - 0.5, 0.0)"
            lines += [f"    r_{d} = {at}",
                      f"    i0_{d} = tl.minimum(r_{d}.to(tl.int32), in_{d} - 1)",
                      f"    i1_{d} = i0_{d} + (i0_{d} < in_{d} - 1).to(tl.int32)",
                      f"    l1_{d} = r_{d} - i0_{d}.to(tl.float32)",
                      f"    l0_{d} = 1.0 - l1_{d}",
                      "    if IDX64:",
                      f"        i0_{d} = i0_{d}.to(tl.int64)",
                      f"        i1_{d} = i1_{d}.to(tl.int64)",
                      f"    a0_{d} = i0_{d} * stride_{d}",
                      f"    a1_{d} = i1_{d} * stride_{d}"]
        else:
            at = f"{pos} * scale_{d}" if mode == "nearest" else f"({pos} + 0.5) * scale_{d}"
            lines += [f"    s_{d} = tl.minimum(tl.floor({at}).to(tl.int32), in_{d} - 1)",
                      "    if IDX64:",
                      f"        s_{d} = s_{d}.to(tl.int64)"]
    if mode == "linear":
        for corner in range(2 ** nd):
            bits = format(corner, f"0{nd}b")
            at = " + ".join(f"a{b}_{d}" for d, b in enumerate(bits))
            lines.append(f"    v_{bits} = tl.load(src_ptr + base + {at}, mask=mask, other=0.0).to(tl.float32)")
        lines.append(f"    value = {_blend(nd)}")
    else:
        at = " + ".join(f"s_{d} * stride_{d}" for d in dims)
        lines.append(f"    value = tl.load(src_ptr + base + {at}, mask=mask, other=0)")
    lines.append("    tl.store(out_ptr + offs, value.to(out_ptr.dtype.element_ty), mask=mask)")
    return "\n".join(lines) + "\n"


def generate_resample(plan: Plan, tag: str) -> StageCode:
    node = plan.node(plan.anchor_id)
    (src,) = (ref.value for ref in node.args)
    nd, mode, align = node.attr("nd"), node.attr("mode"), node.attr("align_corners")
    size, factors = node.attr("size"), node.attr("factors")
    entry = f"fused_resample{tag}"
    names = [leaf.name for leaf in plan.leaves]
    lines = [f"def {entry}({', '.join(names)}):",
             f"    src = {src}",
             "    n_in = tuple(src.shape[2:])"]
    if size is not None:
        lines.append(f"    n_out = {tuple(size)!r}")
    else:  # torch's output size: floor(input size * factor), in double precision
        lines.append(f"    n_out = tuple(int(n * f) for n, f in zip(n_in, {tuple(factors)!r}))")
    index_factors = tuple(factors) if node.attr("factors_index") else None
    lines += [
        f"    scales = _resample_scales({mode!r}, n_in, n_out, {index_factors!r}, {align!r}, src.is_cuda)",
        "    _layout, _channels_last = _resample_layout(src)",
        "    out = torch.empty(tuple(src.shape[:2]) + n_out, dtype=src.dtype, device=src.device, memory_format=_layout)",
        "    if out.numel() == 0:",
        "        return out",
        f"    _resample_kernel{tag}[(triton.cdiv(out.numel(), {BLOCK}),)](",
        "        src, out, out.numel(), src.shape[1], *n_out, *n_in, *src.stride(), *scales,",
        f"        CHANNELS_LAST=_channels_last, IDX64=_needs_i64(out, src), BLOCK_SIZE={BLOCK}, num_warps=4)",
        "    return out",
    ]
    return StageCode(kernels=(_kernel(nd, mode, align, tag),), launcher="\n".join(lines) + "\n", entry=entry,
                     helpers=(SPAN_HELPER, RESAMPLE_HELPER))
