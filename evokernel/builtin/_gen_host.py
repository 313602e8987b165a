"""Stages of their own that need no configuration: torch.cat of buffers (a copy
made in forward, allowed under every rule set), under the kernelbench rules the
library's convolution or matmul whose result our following kernels finish, and
our small kernels for random draws (_gen_random) and indexed reads (_gen_gather)."""

from __future__ import annotations

from ._emit import TF32_ROUND, StageCode
from ._gen_conv import NHWC_COPY_HELPER
from ._gen_elementwise import LAYOUT_HELPER as DENSE_LAYOUT
from ._gen_gather import generate_gather
from ._gen_random import generate_random
from ._gen_resample import generate_resample
from ._gen_scatter import generate_scatter
from ._gen_topk import generate_topk
from ._ir import Plan

__all__ = ["generate_host", "CAT_SLOTS"]

# A cat whose pointwise parts write into it (_generate._cat_in_place): its tensor and the slice of
# each part, from each part's (shape, dims in memory order, dtype, device); laid out as the first
# part, its dtype torch.cat's promotion of the parts' (floats; written without a torch call, which the
# strict rules' audit would count as compute)
CAT_SLOTS = '''def _tensor_out(t):
    return tuple(t.shape), _dense_order(tuple(t.shape), t), t.dtype, t.device


def _cat_slots(dim, parts):
    shape, order, dtype, device = parts[0]
    dim = dim % len(shape)
    for other in parts[1:]:
        if len(other[0]) != len(shape) or any(a != b for d, (a, b) in enumerate(zip(other[0], shape)) if d != dim):
            raise RuntimeError(f"torch.cat: sizes of tensors must match except in dimension {dim}")
        if other[2] != dtype:  # floats of different widths (traced alike, see _generate._cat_parts)
            if dtype not in _FLOAT_RANK or other[2] not in _FLOAT_RANK:
                raise TypeError(f"this cat writes its parts in place and takes one dtype, got {dtype} and {other[2]}")
            dtype = torch.float32 if {dtype, other[2]} == {torch.float16, torch.bfloat16} else \\
                max(dtype, other[2], key=_FLOAT_RANK.get)
    full = list(shape)
    full[dim] = sum(part[0][dim] for part in parts)
    out = _empty_in(tuple(full), order, dtype, device)
    slots, at = [], 0
    for part in parts:
        slots.append(out.narrow(dim, at, part[0][dim]))
        at += part[0][dim]
    return out, slots
'''


def generate_host(plan: Plan, tag: str) -> StageCode:
    node = plan.node(plan.anchor_id)
    if node.op == "random":
        return generate_random(plan, tag)
    if node.op == "gather":
        return generate_gather(plan, tag)
    if node.op == "resample":
        return generate_resample(plan, tag)
    if node.op == "topk":
        return generate_topk(plan, tag)
    if node.op == "scatter":
        return generate_scatter(plan, tag)
    names = [leaf.name for leaf in plan.leaves]
    operand = {leaf.name: leaf.name for leaf in plan.leaves}
    args = [operand[a.value] for a in node.args]
    helpers: tuple[str, ...] = ()
    if node.op == "cat":
        entry = f"fused_cat{tag}"
        body = f"    return torch.cat(({', '.join(args)},), dim={node.attr('dim')})"
        helpers = (DENSE_LAYOUT, CAT_SLOTS)
    elif node.op == "libmm":
        entry = f"fused_library_matmul{tag}"
        body = f"    return torch.matmul({args[0]}, {args[1]})"
    elif node.op == "libconv":
        entry = f"fused_library_conv{tag}"
        nd = node.attr("nd")
        x, w = args
        if node.attr("transposed"):
            call = (f"torch.nn.functional.conv_transpose{nd}d({x}, {w}, None, {node.attr('stride')}, "
                    f"{node.attr('padding')}, {node.attr('output_padding')}, {node.attr('groups')}, "
                    f"{node.attr('dilation')})")
        else:
            call = (f"torch.nn.functional.conv{nd}d({x}, {w}, None, {node.attr('stride')}, {node.attr('padding')}, "
                    f"{node.attr('dilation')}, {node.attr('groups')})")
        body = "    # the library's convolution (cuDNN on a GPU); the work after it is ours\n"
        body += f"    return {call}"
        if node.attr("channels_last"):
            # NHWC (see _schedule._channels_last): the result, and our pointwise kernels' after it, stay
            # channels-last. The input is copied by our tiled kernel, not torch's copy: in bf16 torch's
            # took 42-50% of level2's 1, 31, 32, 54, 42 and 10 on the H100 (268 MB at 0.9 TB/s)
            fmt = "channels_last_3d" if nd == 3 else "channels_last"
            conv_entry = f"_library_conv{tag}"
            launcher = (f"@_host_step\ndef {conv_entry}({', '.join(names)}):\n{body}\n\n\n"
                        f"@_host_step\ndef _torch_channels_last{tag}(t):\n"
                        f"    return t.contiguous(memory_format=torch.{fmt})\n\n\n"
                        f"def {entry}({', '.join(names)}):\n"
                        f"    _cl = {x}\n"
                        f"    if not {x}.is_contiguous(memory_format=torch.{fmt}):\n"
                        f"        # our tiled copy; torch's where the positions are not one strided run\n"
                        f"        _cl = _conv_channels_last({x}, False)\n"
                        f"        _cl = _cl if _cl is not None else _torch_channels_last{tag}({x})\n"
                        f"    return {conv_entry}({', '.join('_cl' if n == x else n for n in names)})\n")
            return StageCode(kernels=(), launcher=launcher, entry=entry, helpers=(TF32_ROUND, NHWC_COPY_HELPER))

    else:  # pragma: no cover - the scheduler makes host stages of these ops only
        raise ValueError(f"no host stage for {node.op}")
    # torch runs this stage: a launch plan records it as a call (evokernel/builtin/_launch_plan.py)
    launcher = f"@_host_step\ndef {entry}({', '.join(names)}):\n{body}\n"
    return StageCode(kernels=(), launcher=launcher, entry=entry, helpers=helpers)

