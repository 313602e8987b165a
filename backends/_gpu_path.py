"""What the GPU path runs: code only reachable off the accelerator, and metadata.

Kernels written for the GPU often keep a PyTorch fallback for inputs that are
not on it (`if not x.is_cuda: return torch.softmax(x, -1)`, the `else` of
`if x.is_cuda:`, or everything after an `if x.is_cuda: return launch(x)`),
and compute sizes with torch on shapes (`torch.prod(torch.tensor(x.shape))`).
Neither is the GPU path's computation, so the static rules do not count them
as compute (backends/_static.py asks `requires_off`, `implied_by_on` and
`is_metadata`); what really runs on the GPU is judged at run time there, by
the guard and the profile.

Off the GPU the fallback is what runs, and then nothing verifies the GPU
path: `LineTrace` records which lines of the candidate's file ran, and a run
that reached compute the static rules set aside as off-accelerator code is
`unverified` here (a typed verdict, not `disallowed`).
"""

from __future__ import annotations

import ast
import contextlib
import sys
from typing import Any

from ._pyast import SyntaxIndex

# torch's device types of accelerators ("cuda" for NVIDIA and ROCm GPUs alike, "npu" for Ascend):
# a test for any of them guards the accelerator path, a test for another ("cpu", "meta") the fallback.
ACCELERATOR_TYPES = frozenset({"cuda", "npu", "xpu"})
ON, OFF = "on", "off"

# Tensor attributes and methods that only read metadata.
META_ATTRIBUTES = frozenset({"shape", "ndim", "dtype", "device", "is_cuda", "is_cpu", "layout", "itemsize",
                             "requires_grad", "is_contiguous"})
META_METHODS = frozenset({"size", "dim", "ndimension", "numel", "nelement", "stride", "element_size", "storage_offset",
                          "is_contiguous", "get_device"})
# Python builtins and math functions that compute on numbers (metadata when their arguments are).
NUMBER_FUNCTIONS = frozenset({"len", "int", "float", "bool", "tuple", "list", "range", "min", "max", "abs", "round",
                              "divmod", "pow", "sum"})
# torch calls that draw random values: never metadata, whatever their arguments.
RANDOM_PREFIXES = ("rand", "normal", "bernoulli", "multinomial", "poisson")


def dotted_name(node: ast.AST) -> str:
    """`torch.nn.functional.relu` for that attribute chain, '' for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


# ---------------------------------------------------------------- device tests


def _device_literal(node: ast.AST) -> bool | None:
    """True for an accelerator device ("cuda", "cuda:0", torch.device("cuda")), False for another, None if not one."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.split(":")[0] in ACCELERATOR_TYPES
    if isinstance(node, ast.Call) and dotted_name(node.func).split(".")[-1] == "device" and node.args:
        return _device_literal(node.args[0])
    return None


def _is_device(node: ast.AST) -> bool:
    """x.device, x.device.type, device, device.type, str(x.device)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str" and node.args:
        return _is_device(node.args[0])
    parts = dotted_name(node).split(".")
    return parts[-1] == "device" or parts[-2:] == ["device", "type"]


def device_test(node: ast.AST) -> str | None:
    """ON for a test that holds exactly on the accelerator (`x.is_cuda`, `x.device.type == "cuda"`,
    `torch.cuda.is_available()`), OFF for one that holds exactly off it (`x.is_cpu`, `... == "cpu"`), else None."""
    if isinstance(node, ast.Attribute) and node.attr in ("is_cuda", "is_cpu"):
        return ON if node.attr == "is_cuda" else OFF
    if isinstance(node, ast.Call) and dotted_name(node.func).endswith("cuda.is_available"):
        return ON
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1):
        return None
    op, left, right = node.ops[0], node.left, node.comparators[0]
    if isinstance(op, (ast.In, ast.NotIn)) and _is_device(left) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
        kinds = {_device_literal(e) for e in right.elts}
        if len(kinds) != 1 or None in kinds:
            return None
        inside = ON if kinds.pop() else OFF
        return inside if isinstance(op, ast.In) else (OFF if inside == ON else ON)
    for dev, literal in ((left, right), (right, left)):
        accelerator = _device_literal(literal)
        if accelerator is None or not _is_device(dev):
            continue
        if isinstance(op, (ast.Eq, ast.Is)):
            return ON if accelerator else OFF
        if isinstance(op, (ast.NotEq, ast.IsNot)):
            return OFF if accelerator else ON
    return None


def requires_off(test: ast.AST) -> bool:
    """Whether `test` can only hold off the accelerator: what it guards never runs on the GPU path."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return implied_by_on(test.operand)
    if isinstance(test, ast.BoolOp):
        return (any if isinstance(test.op, ast.And) else all)(requires_off(v) for v in test.values)
    return device_test(test) == OFF


def implied_by_on(test: ast.AST) -> bool:
    """Whether `test` always holds on the accelerator: its `else`, or what follows an `if` that returns, is off-GPU only."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return requires_off(test.operand)
    if isinstance(test, ast.BoolOp):
        return (all if isinstance(test.op, ast.And) else any)(implied_by_on(v) for v in test.values)
    return device_test(test) == ON


def terminates(body: list[ast.stmt]) -> bool:
    """A block that always leaves its function (return or raise as its last statement)."""
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise))


def off_accelerator_parts(body: list[ast.stmt], index: SyntaxIndex) -> list[ast.AST]:
    """The statements and expressions of `body` only reachable off the accelerator (the same
    branches the static checker sets aside), for reachability: what only they name runs off the GPU.
    `index`: the index of the tree `body` belongs to."""
    # Every conditional expression's off-GPU side, found in one pass over the body: one inside a
    # branch or a tail that is off the GPU as a whole adds nothing that branch does not hold.
    off: list[ast.AST] = [part for n in index.subtrees(body) if isinstance(n, ast.IfExp)
                          for part, gone in ((n.body, requires_off(n.test)), (n.orelse, implied_by_on(n.test))) if gone]

    def block(stmts: list[ast.stmt]) -> None:
        for i, stmt in enumerate(stmts):
            if isinstance(stmt, ast.If):
                for branch, gone in ((stmt.body, requires_off(stmt.test)), (stmt.orelse, implied_by_on(stmt.test))):
                    off.extend(branch) if gone else block(branch)
                if not stmt.orelse and terminates(stmt.body) and implied_by_on(stmt.test):
                    off.extend(stmts[i + 1:])
                    return
                continue
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    block(inner)
            for handler in getattr(stmt, "handlers", []):
                block(handler.body)

    block(body)
    return off


def split_loaded_names(body: list[ast.stmt], index: SyntaxIndex) -> tuple[set[str], set[str]]:
    """(names loaded where the GPU path runs, names loaded only off the accelerator) in `body`
    (of the tree `index` indexes)."""
    off_ids = {id(n) for n in index.subtrees(off_accelerator_parts(body, index))}
    on: set[str] = set()
    off: set[str] = set()
    for n in index.subtrees(body):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            (off if id(n) in off_ids else on).add(n.id)
    return on, off - on


# ---------------------------------------------------------------- metadata


def metadata_names(function: ast.AST, index: SyntaxIndex) -> set[str]:
    """Local names every assignment of which (in `function`, of the tree `index` indexes) is
    metadata: `B, C = x.shape[:2]`, `n = x.numel()`."""
    assigned: dict[str, list[ast.AST]] = {}
    for node in index.subtree(function):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for n in index.subtrees(targets):
                if isinstance(n, ast.Name):
                    assigned.setdefault(n.id, []).append(node.value)
        elif isinstance(node, (ast.For, ast.comprehension)):
            for n in index.subtree(node.target):
                if isinstance(n, ast.Name):
                    assigned.setdefault(n.id, []).append(node.iter)
    # The largest set that holds: a name assigned from itself (`n = n * 2`) stays metadata.
    names = set(assigned)
    changed = True
    while changed:
        changed = False
        for name in list(names):
            if not all(is_metadata(v, names) for v in assigned[name]):
                names.discard(name)
                changed = True
    return names


def is_metadata(node: ast.AST, names: set[str]) -> bool:
    """An expression computed from shapes, sizes, dtypes, devices and constants only (`names`: local metadata)."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.Attribute):
        return node.attr in META_ATTRIBUTES or dotted_name(node).startswith("torch.")  # torch.float32, torch.int64...
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(is_metadata(e, names) for e in node.elts)
    if isinstance(node, ast.Starred):
        return is_metadata(node.value, names)
    if isinstance(node, ast.Subscript):
        return is_metadata(node.value, names) and is_metadata(node.slice, names)
    if isinstance(node, ast.Slice):
        return all(p is None or is_metadata(p, names) for p in (node.lower, node.upper, node.step))
    if isinstance(node, ast.BinOp):
        return is_metadata(node.left, names) and is_metadata(node.right, names)
    if isinstance(node, ast.UnaryOp):
        return is_metadata(node.operand, names)
    if isinstance(node, (ast.BoolOp, ast.Compare)):
        parts = node.values if isinstance(node, ast.BoolOp) else [node.left, *node.comparators]
        return all(is_metadata(p, names) for p in parts)
    if isinstance(node, ast.IfExp):
        return all(is_metadata(p, names) for p in (node.test, node.body, node.orelse))
    if isinstance(node, ast.Call):
        return _metadata_call(node, names)
    return False


def _metadata_call(node: ast.Call, names: set[str]) -> bool:
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in META_METHODS:
        return all(is_metadata(a, names) for a in node.args)  # x.size(1): the receiver's values are not read
    dotted = dotted_name(func)
    root, last = dotted.split(".")[0], dotted.split(".")[-1]
    numbers = (isinstance(func, ast.Name) and func.id in NUMBER_FUNCTIONS) or root == "math"
    torch_on_metadata = root == "torch" and not last.startswith(RANDOM_PREFIXES)
    if not (numbers or torch_on_metadata):
        return False
    return all(is_metadata(a, names) for a in node.args) and all(is_metadata(k.value, names) for k in node.keywords)


# ---------------------------------------------------------------- which lines ran


class LineTrace:
    """Record the line numbers of `filename` that run inside the block (this thread only).

    Only frames of that file are traced line by line; every other call returns at once,
    so the cost is one check per Python call made while it is on."""

    def __init__(self, filename: str):
        self.filename = filename
        self.lines: set[int] = set()
        self._previous: Any = None

    def _call(self, frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename != self.filename:
            return None
        self.lines.add(frame.f_lineno)
        return self._line

    def _line(self, frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            self.lines.add(frame.f_lineno)
        return self._line

    def __enter__(self) -> "LineTrace":
        self._previous = sys.gettrace()
        sys.settrace(self._call)
        return self

    def __exit__(self, *exc: Any) -> None:
        sys.settrace(self._previous)


class OffGpuWatch:
    """One evaluation's watch on its off-accelerator compute (lines from `_static.off_accelerator_lines`):
    off the GPU, the candidate's first run is traced, and `reached` says which of those lines it ran."""

    def __init__(self, lines: list[int] | None = None, device_type: str = "cuda"):
        self.lines = frozenset(lines or ())
        self.pending = bool(self.lines) and device_type not in ACCELERATOR_TYPES

    def trace(self, filename: str) -> "LineTrace | contextlib.nullcontext":
        """A LineTrace for the next run while one is pending (the first run only), else nothing."""
        if not self.pending:
            return contextlib.nullcontext()
        self.pending = False
        return LineTrace(filename)

    def reached(self, trace: Any) -> list[int]:
        return sorted(self.lines & trace.lines) if isinstance(trace, LineTrace) else []


def off_accelerator_message(lines: list[int], device: str) -> str:
    """The verdict's words for a run that reached off-accelerator compute on `lines`."""
    where = ", ".join(str(n) for n in lines[:5]) + (", ..." if len(lines) > 5 else "")
    return (f"not verifiable here: on {device} ModelNew.forward ran code only reachable when its inputs are not on "
            f"the GPU (line{'s' if len(lines) > 1 else ''} {where}), so its GPU path never ran; judge it on a GPU")


__all__ = ["LineTrace", "OffGpuWatch", "device_test", "off_accelerator_parts", "split_loaded_names", "implied_by_on", "is_metadata", "metadata_names", "off_accelerator_message",
           "requires_off", "terminates"]
