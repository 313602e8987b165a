"""Pieces every generated candidate shares: the file header, pure-Python shape
helpers, the ModelNew class, and the expression emitter the kernels build on."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from backends import parse_python

from ._build import FLOAT_DTYPES
from ._canon import VIEW_METHODS
from ._ir import Node, Plan, Ref, Returned
from ._kernel_share import share_identical_kernels
from ._pointwise import literal, pointwise_expr

__all__ = ["Emitter", "StageCode", "assemble", "header", "model_class", "scalar_sources", "strided", "unravel",
           "wrap_params", "BROADCAST_SHAPES", "HELPERS", "TF32_ROUND", "out_dtype_expr", "stage_args", "load_other", "to_f32",
           "returned_expression"]


@dataclass(frozen=True)
class StageCode:
    """One stage's generated code: its @triton.jit kernels, module-level helper
    blocks (deduplicated across stages), and the launcher ``entry`` that
    ModelNew.forward calls with the stage's leaves and scalars."""

    kernels: tuple[str, ...]
    launcher: str
    entry: str
    helpers: tuple[str, ...] = field(default=())

# fp32 to TF32 as generated code (convolutions matching cuDNN's rounding, 3xTF32 matmuls)
TF32_ROUND = '''@triton.jit
def _to_tf32(v):
    # round fp32 values to TF32 as cuDNN does (half away from zero on the dropped 13 bits)
    return ((v.to(tl.int32, bitcast=True) + 0x1000) & -8192).to(tl.float32, bitcast=True)


@triton.jit
def _dot_3xtf32(a, b):
    # a @ b of fp32 tiles in 3xTF32: high parts rounded to TF32, low parts the rounded rest, three
    # tensor-core products, the small ones first, into a fresh accumulator (the caller adds it in fp32:
    # accumulating a whole K on the tensor cores gave 10x cuBLAS's error on the H200)
    a_hi = _to_tf32(a)
    b_hi = _to_tf32(b)
    a_rest = a - a_hi
    b_rest = b - b_hi
    # an infinite value leaves inf - inf: its low part is 0, so its products stay infinite
    a_lo = _to_tf32(tl.where(a_rest == a_rest, a_rest, 0.0))
    b_lo = _to_tf32(tl.where(b_rest == b_rest, b_rest, 0.0))
    out = tl.dot(a_lo, b_hi, input_precision="tf32")
    out = tl.dot(a_hi, b_lo, out, input_precision="tf32")
    return tl.dot(a_hi, b_hi, out, input_precision="tf32")
'''

# torch's broadcasting rule as generated code: also emitted by the Ascend C templates (evokernel/ascendc/_templates.py)
BROADCAST_SHAPES = '''
def _broadcast_shapes(*shapes):
    """torch's broadcasting rule on plain tuples (no tensor op runs)."""
    rank = max([len(s) for s in shapes] + [0])
    out = [1] * rank
    for shape in shapes:
        padded = [1] * (rank - len(shape)) + list(shape)
        for i, size in enumerate(padded):
            if size != 1:
                out[i] = size
    return tuple(out)
'''

HELPERS = BROADCAST_SHAPES + '''

def _prod(values):
    out = 1
    for value in values:
        out *= value
    return out


_FLOAT_RANK = {torch.float16: 1, torch.bfloat16: 1, torch.float32: 2, torch.float64: 3}


def _result_dtype(*tensors):
    """torch's type promotion for floating tensors; 0-dim tensors count only alone."""
    dtypes = {t.dtype for t in tensors if t.dim() > 0} or {t.dtype for t in tensors}
    if dtypes == {torch.float16, torch.bfloat16}:
        return torch.float32
    return max(dtypes, key=lambda d: _FLOAT_RANK[d])
'''


def header(plan: Plan, config_text: str) -> str:
    lines = [
        f'"""Builtin-policy candidate for {plan.name}: {plan.family} family ({config_text})."""',
        "import torch",
        "import torch.nn as nn",
        "import triton",
        "import triton.language as tl",
    ]
    if plan.preamble:
        lines += ["", plan.preamble]
    return "\n".join(lines) + "\n"


def scalar_sources(plan: Plan) -> list[str]:
    """Forward-level scalar expressions passed to the kernel, in first-use order."""
    out: list[str] = []
    for node in plan.nodes:
        for ref in node.args:
            if ref.kind == "scalar" and ref.value not in out:
                out.append(ref.value)
    return out


def out_dtype_expr(plan: Plan) -> str:
    floats = [leaf.name for leaf in plan.leaves if leaf.spec.dtype in FLOAT_DTYPES]
    if plan.fixed_out_dtype or not floats:
        return f"torch.{plan.out_spec.dtype}"
    return f"_result_dtype({', '.join(floats)})"


def load_other(plan: Plan, name: str) -> str:
    """The fill value of a masked load: integer and bool tensors (masks, class
    indices) take an integer."""
    return "0.0" if plan.leaf(name).spec.dtype in FLOAT_DTYPES else "0"


def to_f32(plan: Plan, name: str) -> str:
    return ".to(tl.float32)"


def stage_args(plan: Plan) -> list[str]:
    """The expressions forward passes to a stage's launcher."""
    return [leaf.source for leaf in plan.leaves] + scalar_sources(plan)


def _returned(call: str, plan: Plan) -> str:
    """What forward returns: the last stage's result with the reference's views on it."""
    return _viewed(call, plan.out_views)


def _viewed(tensor: str, views: tuple[str, ...]) -> str:
    """A returned tensor with the reference's views on it: the same strides the reference returns."""
    return tensor + "".join(views)


def returned_expression(returned: Returned) -> str:
    """forward's returned tuple or list of several tensors, nested as the reference's."""
    items = [returned_expression(item) if isinstance(item, Returned) else _viewed(item.buffer, item.views)
             for item in returned.items]
    if returned.is_list:
        return f"[{', '.join(items)}]"
    return f"({', '.join(items)},)" if len(items) == 1 else f"({', '.join(items)})"


# A tensor forward reads from a submodule: "self" and its hops (".name", "[i]"), up to the
# tensor's own name, which no call follows (".view(" after it is a method of the tensor).
_CHAIN = re.compile(r"\bself((?:\.[A-Za-z_]\w*|\[\d+\])+)")
_HOP = re.compile(r"\.[A-Za-z_]\w*|\[\d+\]")
_TENSOR_ATTRS = {".T", ".mT", ".H", ".mH", ".data", ".real", ".imag", ".shape", ".dtype", ".device", ".ndim"}


def _owner_chains(lines: list[str]) -> tuple[list[str], list[str]]:
    """Forward's lines with every `self.a[0].b.weight` read as `owners[k].weight`, and the
    owner chains (`self.a[0].b`) in first-use order. A read through one hop stays as it is."""
    owners: list[str] = []

    def bind(match: re.Match) -> str:
        hops = _HOP.findall(match.group(1))
        if match.string.startswith("(", match.end()):  # the last hop is a method: the tensor is the one before it
            hops = hops[:-1]
        while hops and hops[-1] in _TENSOR_ATTRS:  # .T, .data...: of the tensor, not a module's
            hops = hops[:-1]
        if len(hops) < 2 or not hops[-1].startswith("."):
            return match.group(0)
        owner = "self" + "".join(hops[:-1])
        if owner not in owners:
            owners.append(owner)
        tail = match.group(1)[len("".join(hops)):]
        return f"owners[{owners.index(owner)}]{hops[-1]}{tail}"

    return [_CHAIN.sub(bind, line) for line in lines], owners


def model_class(plan: Plan, launcher: str, body: list[str] | None = None) -> str:
    """ModelNew: the reference's __init__ and a forward that calls the launchers.
    ``body``: statements run before the final call (a pipeline's earlier stages).

    Forward reads each parameter and buffer from its submodule, found once on the first call:
    walking `self.layer1[0].bn1.running_var` costs an nn.Module attribute lookup per hop and a
    scan per Sequential index, thousands of them in a deep network's forward (on the H200 about
    1 ms of ResNet101's 8 ms of host time). Submodules keep their identity through `.to()`,
    `.half()` and `.eval()`; one assigned anew after the first call would not be seen."""
    call = f"{launcher}({', '.join(stage_args(plan) if body is None else [])})" if body is None else launcher
    forward_params = f"self, {plan.forward_args}" if plan.forward_args else "self"
    statements = share_host_copies(route_copies([*(body or []), f"return {_returned(call, plan)}"]))
    statements, owners = _owner_chains(statements)
    lines = [f"        {line}" for line in statements]
    bound = ""
    if owners:
        lines.insert(0, "        owners = self._bound_owners()")
        bound = (
            "\n\n    def _bound_owners(self):\n"
            "        # the submodules forward reads tensors from, found on the first call\n"
            "        owners = self.__dict__.get(\"_evokernel_owners\")\n"
            "        if owners is None:\n"
            f"            owners = ({''.join(o + ', ' for o in owners)})\n"
            "            self.__dict__[\"_evokernel_owners\"] = owners\n"
            "        return owners\n"
        )
    names = _plain_params(plan.forward_args)
    if names is None:  # keyword-only or variadic parameters: forward runs as written every call
        forward = f"    def forward({forward_params}):\n" + "".join(line + "\n" for line in lines)
    else:
        args = "(" + "".join(f"{n}, " for n in names) + ")"
        forward = (
            f"    def forward({forward_params}):\n"
            "        # the launches recorded on an earlier call with these inputs' layout, or the body below\n"
            f"        return _launch_plans(self).run(self, self._launches, {args})\n\n"
            f"    def _launches({forward_params}):\n"
            + "".join(line + "\n" for line in lines)
        )
    return "class ModelNew(nn.Module):\n" f"{plan.init_source}{bound}\n\n" + forward


# Tensor methods in forward's view chains that may copy, and the recorded host steps that make
# the copy where a launch plan sees it (evokernel/builtin/_launch_plan.py): a copy made outside the
# plan left its replay reading memory nothing wrote (29_SwinMLP's window partitions on the H200).
_COPYING = {"contiguous": "_contiguous", "reshape": "_reshape", "flatten": "_flatten", "reshape_as": "_reshape_as"}
# torch's factories forward calls (a pad's fill, a mask of ones): the host steps that make them
_MADE = {"full": "_full", "zeros": "_zeros", "ones": "_ones"}


def _call(name: str, args: list[ast.expr]) -> ast.Call:
    return ast.Call(func=ast.Name(name, ast.Load()), args=args, keywords=[])


def route_copies(lines: list[str]) -> list[str]:
    """Forward's statements with every ``t.reshape(...)``, ``t.flatten(...)``, ``t.contiguous()``
    and ``t.reshape_as(o)`` called as the host step of the same name (``_reshape(t, ...)``), and
    ``torch.full/zeros/ones(shape, ..., dtype=, device=)`` and ``torch.zeros_like(t)`` as ``_full``,
    ``_zeros``, ``_ones`` and ``_zeros_like``."""

    class Route(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            func = node.func
            given = {k.arg: k.value for k in node.keywords}
            if not isinstance(func, ast.Attribute):
                return node
            if func.attr in _COPYING:
                args = list(node.args)
                if func.attr == "flatten" and given and set(given) <= {"start_dim", "end_dim"} and not args:
                    args, given = [given.get("start_dim", ast.Constant(0)), given.get("end_dim", ast.Constant(-1))], {}
                if not given:
                    return _call(_COPYING[func.attr], [func.value, *args])
                return node
            if not (isinstance(func.value, ast.Name) and func.value.id == "torch"):
                return node
            if func.attr == "zeros_like" and len(node.args) == 1 and all(
                    k == "requires_grad" and isinstance(v, ast.Constant) and v.value is False for k, v in given.items()):
                return _call("_zeros_like", list(node.args))  # no gradient under no_grad either way
            if func.attr in _MADE and set(given) <= {"dtype", "device"} and node.args:
                fill = [given.get(name, ast.Constant(None)) for name in ("dtype", "device")]
                if func.attr == "full" and len(node.args) == 2:
                    return _call("_full", [*node.args, *fill])
                if func.attr != "full":  # zeros/ones: the shape as one tuple or as its sizes
                    shape = node.args[0] if len(node.args) == 1 else ast.Tuple(list(node.args), ast.Load())
                    return _call(_MADE[func.attr], [shape, *fill])
            return node

    out = []
    for line in lines:
        if not any(f".{name}(" in line for name in (*_COPYING, *_MADE, "zeros_like")):
            out.append(line)
            continue
        out.append(ast.unparse(ast.fix_missing_locations(Route().visit(parse_python(line)))))
    return out


# The host steps whose result may be a copy of their operand (a reshape of a permuted tensor)
_HOST_COPIES = frozenset(_COPYING.values())
# the host steps that write into their first argument (a cat's slot); a launcher does with `out=`
_WRITES_FIRST = ("_copy_", "_zero_")


def share_host_copies(lines: list[str]) -> list[str]:
    """Forward's statements (after route_copies) with each host copy evaluated in more than one
    place (``_reshape(x.permute(0, 2, 1, 3), 6, 4, 5)`` for two matmuls) made once into a local
    ``_host{n}``: assigned before its first reader and deleted after its last, as buffers are, so
    the one copy is held from its first reader to its last where each reader made its own. Each
    evaluation copied the whole tensor again (48_Mamba2ReturnY's chunked scan copied C's and X's
    chunks, 34M and 134M elements, twice each); a launch plan records the one host step and replays it once.

    The outermost repeat is shared first; a part of it repeated elsewhere then is too. Shared
    only where every evaluation gives the same tensor: nothing in it but host copies, view
    methods and indexing of names (a launcher or a factory may draw), and no name it reads
    bound anew or written in place (a cat's slots) from its first reader to its last. Inputs and
    parameters are not written within a forward, and each buffer is assigned once."""
    trees = [parse_python(line).body[0] for line in lines]
    texts: list[str | None] = list(lines)  # a statement's text, None once it changed
    aliases = _aliases(trees)
    made: list[str] = []
    while True:
        uses: dict[str, tuple[ast.Call, list[int]]] = {}
        for i, tree in enumerate(trees):
            for node in ast.walk(tree):
                if _shareable(node):
                    uses.setdefault(ast.dump(node), (node, []))[1].append(i)
        repeats = [(key, node, at) for key, (node, at) in uses.items()
                   if len(at) > 1 and _same_at_each(node, trees[at[0]:at[-1]], aliases)]
        if not repeats:
            break
        key, node, at = max(repeats, key=lambda r: len(r[0]))  # the outermost: its parts then occur once
        local = f"_made{len(made)}"  # named _host{n} below, once the order they are assigned in is known
        made.append(local)
        for i in set(at):
            trees[i] = _Replace(key, local).visit(trees[i])
            texts[i] = None
        trees.insert(at[0], ast.Assign([ast.Name(local, ast.Store())], node))
        texts.insert(at[0], None)
    if not made:
        return lines
    # numbered in the order forward assigns them
    names = {}
    for tree in trees:
        if isinstance(tree, ast.Assign) and isinstance(tree.targets[0], ast.Name) and tree.targets[0].id in made:
            names[tree.targets[0].id] = f"_host{len(names)}"
    last: dict[str, int] = {}
    for i, tree in enumerate(trees):
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id in names:
                node.id = names[node.id]
                last[node.id] = i
    # each deleted after its last reader, in the `del` of the buffers that line read last if there is one
    for name, i in sorted(last.items(), key=lambda item: -item[1]):
        if isinstance(trees[i], ast.Return):
            continue
        if not (i + 1 < len(trees) and isinstance(trees[i + 1], ast.Delete)):
            trees.insert(i + 1, ast.Delete([]))
            texts.insert(i + 1, None)
        trees[i + 1].targets.append(ast.Name(name, ast.Del()))
        texts[i + 1] = None
    return [ast.unparse(ast.fix_missing_locations(tree)) if text is None else text for tree, text in zip(trees, texts)]


def _shareable(node: ast.AST) -> bool:
    """Whether ``node`` is a host copy whose every evaluation gives the same tensor from the same
    operands: it calls nothing but host copies and view methods."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _HOST_COPIES):
        return False
    for part in ast.walk(node):
        if isinstance(part, ast.Call) and not (
                isinstance(part.func, ast.Name) and part.func.id in _HOST_COPIES
                or isinstance(part.func, ast.Attribute) and part.func.attr in VIEW_METHODS):
            return False
    return True


def _aliases(trees: list[ast.stmt]) -> dict[str, set[str]]:
    """{name: the names bound with it in one statement}: a cat's tensor and its slots
    (``buf3, _slots3 = _cat_slots(...)``), where a write into one is a write into the other."""
    out: dict[str, set[str]] = {}
    for tree in trees:
        if isinstance(tree, ast.Assign):
            bound = {n.id for target in tree.targets for n in ast.walk(target) if isinstance(n, ast.Name)}
            for name in bound:
                out.setdefault(name, set()).update(bound)
    return out


def _same_at_each(node: ast.expr, between: list[ast.stmt], aliases: dict[str, set[str]]) -> bool:
    """Whether ``node``'s names hold the same tensors through ``between`` (the statements from its
    first reader up to its last, that one excluded: its own writes come after its arguments)."""
    read = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    for tree in between:
        changed: set[str] = set()
        for part in ast.walk(tree):
            if isinstance(part, ast.Name) and isinstance(part.ctx, ast.Store):
                changed.add(part.id)
            if isinstance(part, ast.Call):
                written = [k.value for k in part.keywords if k.arg == "out"]
                if isinstance(part.func, ast.Name) and part.func.id in _WRITES_FIRST and part.args:
                    written.append(part.args[0])
                for target in written:
                    for name in (n.id for n in ast.walk(target) if isinstance(n, ast.Name)):
                        changed |= aliases.get(name, {name})
        if changed & read:
            return False
    return True


class _Replace(ast.NodeTransformer):
    """Every occurrence of one expression (by its ast.dump) replaced by a name."""

    def __init__(self, key: str, name: str):
        self.key, self.name = key, name

    def visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, ast.Call) and ast.dump(node) == self.key:
            return ast.Name(self.name, ast.Load())
        return super().visit(node)


def _plain_params(forward_args: str) -> list[str] | None:
    """The parameter names of a forward that takes positional parameters only, else None."""
    params = parse_python(f"def f({forward_args}): pass").body[0].args
    if params.vararg or params.kwarg or params.kwonlyargs or params.posonlyargs:
        return None
    return [a.arg for a in params.args]


# The launch plans' runtime (evokernel/builtin/_launch_plan.py below its marker), in every candidate.
LAUNCH_PLAN = "\n".join(
    line for line in (Path(__file__).with_name("_launch_plan.py").read_text()
                      .split("# --- candidate code below (copied into generated candidates) ---\n", 1)[1]
                      .splitlines())
    if not line.startswith("import ")
).strip() + "\n"


def route_launches(text: str, kernels: set[str]) -> str:
    """``kernel[grid](args)`` -> ``_launch(kernel, grid, args)`` for the candidate's own kernels,
    so the recording in progress sees every launch (evokernel/builtin/_launch_plan.py)."""
    out: list[str] = []
    pos = 0
    for match in re.finditer(r"\b([A-Za-z_]\w*)\[", text):
        # a kernel by its own name, or a launcher's local alias for one (main_kernel = ...)
        if not (match.group(1) in kernels or match.group(1).endswith("_kernel")) or match.start() < pos:
            continue
        depth, i = 0, match.end() - 1
        while i < len(text):
            depth += {"[": 1, "]": -1}.get(text[i], 0)
            if depth == 0:
                break
            i += 1
        if i + 1 >= len(text) or text[i + 1] != "(":
            continue
        grid = text[match.end():i]
        out.append(text[pos:match.start()])
        out.append(f"_launch({match.group(1)}, {grid}, ")
        pos = i + 2
    out.append(text[pos:])
    return "".join(out)


def assemble(plan: Plan, config_text: str, codes: list[StageCode], calls: list[str] | None = None) -> str:
    """The candidate file: header, kernels, helpers, launchers and ModelNew.
    ``calls``: for a pipeline, one ``buf = entry(args)`` line per stage; the last
    line is the returned expression."""
    helpers: list[str] = [HELPERS.strip() + "\n"]
    for code in codes:
        for helper in code.helpers:
            if helper not in helpers:
                helpers.append(helper)
    parts = [header(plan, config_text)]
    for code in codes:
        parts.extend(code.kernels)
    kernels = {name for text in [*(k for code in codes for k in code.kernels), *helpers]
               for name in re.findall(r"^def (\w+)\(", text, re.M)}
    parts.extend(route_launches(helper, kernels) for helper in helpers)
    parts.append(LAUNCH_PLAN)
    parts.extend(route_launches(code.launcher, kernels) for code in codes)
    if calls is None:
        parts.append(model_class(plan, codes[-1].entry))
    else:
        parts.append(model_class(plan, calls[-1], body=calls[:-1]))
    return share_identical_kernels("\n\n".join(parts))


class Emitter:
    """Writes one Triton expression per IR value into a kernel body.

    Subclasses decide how a leaf is loaded (``load_leaf``) and may intercept
    nodes (``compute``); ``ctx`` lets a family evaluate the same value in
    several index spaces (the rows family's per-element and per-row values).
    """

    def __init__(self, plan: Plan, indent: int = 1):
        self.plan = plan
        self.lines: list[str] = []
        self.indent = indent
        self.memo: dict = {}
        self.scalars = {src: f"s{i}" for i, src in enumerate(scalar_sources(plan))}

    def emit(self, text: str) -> None:
        self.lines.append("    " * self.indent + text)

    def memo_key(self, ref: Ref, ctx: str):
        return (ref.kind, ref.value, ctx)

    def value(self, ref: Ref, ctx: str = "tile") -> str:
        if ref.kind == "const":
            return literal(ref.value)
        if ref.kind == "scalar":  # a size read in forward arrives as an integer: math on it is in fp32
            return f"tl.cast({self.scalars[ref.value]}, tl.float32)"  # the interpreter passes a Python number
        if ref.kind == "rsize":
            return self.rsize()
        key = self.memo_key(ref, ctx)
        if key not in self.memo:
            if ref.kind == "leaf":
                self.memo[key] = self.load_leaf(ref.value, ctx)
            else:
                self.memo[key] = self.compute(self.plan.node(ref.value), ctx)
        return self.memo[key]

    def var_name(self, node: Node, ctx: str) -> str:
        return f"v{node.id}"

    def compute(self, node: Node, ctx: str) -> str:
        operands = [self.value(a, ctx) for a in node.args]
        var = self.var_name(node, ctx)
        self.emit(f"{var} = {pointwise_expr(node.op, operands, dict(node.attrs))}")
        return var

    def load_leaf(self, name: str, ctx: str) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def rsize(self) -> str:
        raise ValueError("the reduced size is only defined in the rows family")


def unravel(rank: int, coord: str = "c", indent: str = "    ") -> list[str]:
    """Kernel lines splitting the flat index ``rem`` (row-major over ``size_1..size_{rank-1}``)
    into coordinates ``{coord}_0..{coord}_{rank-1}``."""
    lines = []
    for d in range(rank - 1, 0, -1):
        lines += [f"{indent}{coord}_{d} = rem % size_{d}", f"{indent}rem = rem // size_{d}"]
    return lines + [f"{indent}{coord}_0 = rem"]


def strided(coord: str, strides: str, rank: int) -> str:
    """The offset ``{coord}_0 * {strides}_0 + ...`` of coordinates through per-dim strides."""
    return " + ".join(f"{coord}_{d} * {strides}_{d}" for d in range(rank))


def wrap_params(params: list[str], indent: str = "    ", width: int = 96) -> list[str]:
    """Kernel parameters as lines of at most ``width`` columns, each ending in a comma."""
    lines, current = [], ""
    for p in params:
        piece = p + ","
        if current and len(indent) + len(current) + 1 + len(piece) > width:
            lines.append(indent + current)
            current = piece
        else:
            current = f"{current} {piece}" if current else piece
    if current:
        lines.append(indent + current)
    return lines
