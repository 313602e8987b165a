"""One fused kernel over the output's elements, broadcasting by strides."""

from __future__ import annotations

from ._config import Config
from ._emit import Emitter, StageCode, load_other, out_dtype_expr, scalar_sources, strided, unravel, wrap_params
from ._ir import Node, Plan

__all__ = ["generate_elementwise", "COALESCE", "SPAN_HELPER", "LAYOUT_HELPER"]


class _PointwiseEmitter(Emitter):
    def __init__(self, plan: Plan):
        super().__init__(plan)
        self.iotas: list[Node] = []

    def load_leaf(self, name: str, ctx: str) -> str:
        var = f"l_{name}"
        self.emit(f"{var} = tl.load({name}_ptr + {name}_offs, mask=mask, other={load_other(self.plan, name)})"
                  ".to(tl.float32)")
        return var

    def compute(self, node: Node, ctx: str) -> str:
        if node.op == "iota":
            # the index along one output dim, from the linear output index
            self.iotas.append(node)
            var = f"v{node.id}"
            self.emit(f"{var} = ((offs // iota{node.id}_div) % iota{node.id}_mod).to(tl.float32)")
            return var
        return super().compute(node, ctx)


COALESCE = '''def _coalesce(sizes, strides):
    """Drop size-1 dims and merge neighbours every operand walks contiguously:
    fewer index divisions, and extra leading dims still fit the kernel's rank."""
    keep = [d for d in range(len(sizes)) if sizes[d] != 1]
    sizes = [sizes[d] for d in keep]
    strides = [[s[d] for d in keep] for s in strides]
    d = len(sizes) - 1
    while d > 0:
        if all(s[d - 1] == s[d] * sizes[d] for s in strides):
            sizes[d - 1] *= sizes[d]
            for s in strides:
                s[d - 1] = s[d]
                del s[d]
            del sizes[d]
        d -= 1
    return sizes, strides
'''

LAYOUT_HELPER = '''def _dense_order(shape, *tensors):
    """The dims, outermost first, of the first operand with the output's shape whose memory is
    dense in an order other than the plain one (channels-last, say); None when that operand is
    plain or there is none. The output is laid out, and walked, in that order, as torch lays out
    its own pointwise results: a channels-last convolution's epilogue stays channels-last."""
    for t in tensors:
        if tuple(t.shape) != tuple(shape):
            continue
        if t.is_contiguous():
            return None
        order = sorted(range(t.dim()), key=lambda d: (-t.stride(d), d))
        run = 1
        for d in reversed(order):
            if t.shape[d] != 1 and t.stride(d) != run:
                break
            run *= t.shape[d]
        else:
            return order
    return None


def _in_order(values, order):
    return list(values) if order is None else [values[d] for d in order]


def _empty_in(shape, order, dtype, device):
    if order is None:
        return torch.empty(shape, dtype=dtype, device=device)
    return torch.empty_permuted(shape, order, dtype=dtype, device=device)
'''

SPAN_HELPER = '''def _needs_i64(*tensors):
    """True when an element offset inside one of the tensors can pass 2**31 - 1:
    the kernel then computes its offsets in 64 bits."""
    for t in tensors:
        span = 1 + sum((s - 1) * abs(st) for s, st in zip(t.shape, t.stride()) if s > 0)
        if max(span, t.numel()) >= 2 ** 31 - 2 ** 16:
            return True
    return False
'''


def iota_args(iotas: list[Node], shape_var: str) -> list[str]:
    """Launcher expressions for each index value's divisor and modulus over ``shape_var``."""
    out = []
    for node in iotas:
        back = len(node.shape) - node.attr("dim")  # the dim, counted from the end
        out += [f"_prod({shape_var}[len({shape_var}) - {back} + 1:])", f"{shape_var}[len({shape_var}) - {back}]"]
    return out


def generate_elementwise(plan: Plan, config: Config, tag: str = "") -> StageCode:
    rank = max(1, len(plan.out_spec.shape))
    read = {a.value for n in plan.nodes for a in n.args if a.kind == "leaf"}
    # a stage of index arithmetic alone gets a tensor of the model's for its device only
    device_only = [leaf.name for leaf in plan.leaves if leaf.name not in read]
    names = [leaf.name for leaf in plan.leaves if leaf.name in read]
    scalars = [f"s{i}" for i in range(len(scalar_sources(plan)))]

    body = _PointwiseEmitter(plan)
    result = body.value(plan.output)
    iotas = list(dict.fromkeys(body.iotas))
    iota_params = [p for n in iotas for p in (f"iota{n.id}_div", f"iota{n.id}_mod")]

    sizes = [f"size_{d}" for d in range(1, rank)]
    strides = [f"stride_{n}_{d}" for n in names for d in range(rank)]
    out_strides = [f"stride_out_{d}" for d in range(rank)]
    params = ([f"{n}_ptr" for n in names] + ["out_ptr"] + scalars + ["n_elements"] + sizes + strides + out_strides
              + iota_params)
    kernel_name = f"_fused_pointwise_kernel{tag}"
    k = []
    k.append("@triton.jit")
    k.append(f"def {kernel_name}(")
    k.extend(wrap_params(params))
    inner = config.inner_grid and rank > 1
    if inner:
        k.append("    INNER: tl.constexpr,")
    k.append("    IS_FLAT: tl.constexpr, OUT_STRIDED: tl.constexpr, IDX64: tl.constexpr, BLOCK_SIZE: tl.constexpr,")
    k.append("):")
    # the flat-block path, indented one level under INNER's else where there is one
    flat = ["if IDX64:",
            "    start = tl.program_id(0).to(tl.int64) * BLOCK_SIZE",
            "else:",
            "    start = tl.program_id(0) * BLOCK_SIZE",
            "offs = start + tl.arange(0, BLOCK_SIZE)",
            "mask = offs < n_elements",
            "if IS_FLAT:",
            "    # every operand walks the output's memory order contiguously",
            *[f"    {n}_offs = offs" for n in names],
            "    out_offs = offs",
            "else:",
            "    # unravel the output index; broadcast operands have stride 0 there",
            "    rem = offs"]
    flat += unravel(rank, "idx")
    flat += [f"    {n}_offs = " + strided("idx", f"stride_{n}", rank) for n in names]
    flat += ["    if OUT_STRIDED:  # a slice of a larger tensor (a cat's part, written in place)",
             "        out_offs = " + strided("idx", "stride_out", rank),
             "    else:",
             "        out_offs = offs"]
    ind = "    "
    if inner:
        last = rank - 1
        k += ["    if INNER:",
              "        # a program per (outer index, block of the innermost dim): each operand's outer offset",
              "        # is one scalar, and no lane divides",
              "        row = tl.program_id(0)",
              "        if IDX64:",
              "            row = row.to(tl.int64)",
              "        col = tl.program_id(1) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)",
              f"        mask = col < size_{last}",
              f"        offs = row * size_{last} + col",
              "        rem = row"]
        k += unravel(last, "idx", "        ")
        for n in [*names, "out"]:
            terms = " + ".join([f"idx_{d} * stride_{n}_{d}" for d in range(last)] + [f"col * stride_{n}_{last}"])
            k.append(f"        {n}_offs = {terms}")
        k.append("    else:")
        ind = "        "
    k += [ind + line for line in flat]
    k.extend(body.lines)
    k.append(f"    tl.store(out_ptr + out_offs, {result}.to(out_ptr.dtype.element_ty), mask=mask)")
    kernel = "\n".join(k) + "\n"

    entry = f"fused_pointwise{tag}"
    launch_args = names + device_only + scalars
    # an index or a constant has its own shape (an arange's dims the operands broadcast against)
    shapes = ", ".join([f"{n}.shape" for n in names]
                       + sorted({repr(tuple(n.shape)) for n in plan.nodes if n.op in ("iota", "full")}))
    l = [f"def {entry}_out({', '.join(launch_args)}):",
         '    """The result\'s (shape, dims in memory order or None, dtype, device)."""',
         f"    shape = _broadcast_shapes({shapes})",
         # an index value counts in the plain order of the output's elements: its layout stays plain
         f"    order = {'None' if iotas or not names else '_dense_order(shape, ' + ', '.join(names) + ')'}",
         f"    return shape, order, {out_dtype_expr(plan)}, {(names + device_only)[0]}.device",
         "",
         "",
         f"def {entry}({', '.join(launch_args)}, out=None):",
         "    # out: where to write (a part of a cat, say); by default a new tensor",
         f"    shape, order, dtype, device = {entry}_out({', '.join(launch_args)})",
         "    if out is None:",
         "        out = _empty_in(shape, order, dtype, device)",
         "    elif tuple(out.shape) != tuple(shape):",
         "        raise ValueError(f'out has shape {tuple(out.shape)}, the result {tuple(shape)}')",
         "    n_elements = out.numel()",
         "    if n_elements == 0:",
         "        return out"]
    strides = ", ".join([f"_in_order({n}.expand(shape).stride(), order)" for n in names]
                        + ["_in_order(out.stride(), order)"])
    l.append(f"    sizes, strides = _coalesce(_in_order(shape, order), [{strides}])")
    l.append(f"    if len(sizes) > {rank}:")
    l.append(f"        raise ValueError('this kernel indexes at most {rank} non-mergeable dims')")
    # every operand walks the output's memory order contiguously: the kernel indexes all by offs
    l.append("    is_flat = len(sizes) == 1 and all(s == [1] for s in strides)")
    l.append("    out_strided = strides[-1] != [_prod(sizes[d + 1:]) for d in range(len(sizes))]")
    l.append(f"    pad = {rank} - len(sizes)")
    l.append("    sizes = [1] * pad + sizes")
    for j, n in enumerate([*names, "out"]):
        l.append(f"    {n}_strides = [0] * pad + strides[{j}]")
    if inner:
        # rows of whole blocks, or long enough that a part-filled last block wastes little (a quarter)
        l.append(f"    inner = sizes[-1] if not is_flat and (sizes[-1] % {config.block_n} == 0 or sizes[-1] >= "
                 f"{4 * config.block_n}) else 0")
        l.append("    if inner and triton.cdiv(inner, %d) <= 65535:  # the grid's second dim" % config.block_n)
        l.append(f"        grid = (n_elements // inner, triton.cdiv(inner, {config.block_n}))")
        l.append("    else:")
        l.append("        inner = 0")
        l.append(f"        grid = (triton.cdiv(n_elements, {config.block_n}),)")
    else:
        l.append(f"    grid = (triton.cdiv(n_elements, {config.block_n}),)")
    stride_args = " + ".join(f"{n}_strides" for n in [*names, "out"])
    extra = "".join(f"{a}, " for a in iota_args(iotas, "shape"))
    l.append(f"    {kernel_name}[grid](")
    l.append(f"        {''.join(n + ', ' for n in names)}out, {''.join(s + ', ' for s in scalars)}n_elements,")
    l.append(f"        *sizes[1:], *({stride_args}), {extra}")
    l.append(f"        {'INNER=inner > 0, ' if inner else ''}IS_FLAT=is_flat, OUT_STRIDED=out_strided, "
             f"IDX64=_needs_i64(out, {', '.join(names)}), "
             f"BLOCK_SIZE={config.block_n},")
    l.append(f"        num_warps={config.num_warps},")
    l.append("    )")
    l.append("    return out")
    launcher = "\n".join(l) + "\n"
    return StageCode(kernels=(kernel,), launcher=launcher, entry=entry, helpers=(COALESCE, SPAN_HELPER, LAYOUT_HELPER))
