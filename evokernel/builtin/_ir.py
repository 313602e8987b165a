"""The small dataflow IR a traced reference is lowered to, and the plan around it.

A plan is what code generation needs and nothing more: the tensors the kernels
read (leaves, each with the Python expression that fetches it inside
``forward``), the runtime scalars, a topologically ordered list of primitive
nodes, and the family-specific facts (reduction group, matmul operands).

A plan is one kernel (families "elementwise", "rows", "matmul", "conv",
"pool", "scan") or a pipeline of such stages (family "pipeline"), each stage a
plan of its own whose leaves include the buffers earlier stages wrote; a
"host" stage is a copy or a library call made in ``forward`` itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "TensorSpec",
    "Ref",
    "Leaf",
    "Node",
    "ReduceGroup",
    "ReturnedTensor",
    "Returned",
    "Plan",
    "Unsupported",
    "ANCHORS",
]

ANCHORS = ("matmul", "conv", "pool", "scan", "rnn", "attention")  # ops that own their kernel's iteration space


@dataclass(frozen=True)
class TensorSpec:
    shape: tuple[int, ...]
    dtype: str  # torch dtype name without the "torch." prefix, e.g. "float32"

    def text(self) -> str:
        return f"{self.dtype}[{','.join(str(s) for s in self.shape)}]"


@dataclass(frozen=True)
class Ref:
    """An operand: ``kind`` is "node" (value = node id), "leaf" (leaf name),
    "scalar" (a forward-level Python expression passed to the kernel as an
    argument) or "const" (a Python float baked into the kernel)."""

    kind: str
    value: object


@dataclass(frozen=True)
class Leaf:
    name: str  # identifier stem used in generated code (x, w0, ...)
    source: str  # expression evaluated in ModelNew.forward, e.g. "self.fc.weight.t()"
    spec: TensorSpec


@dataclass(frozen=True)
class Node:
    id: int
    op: str  # a primitive: see _pointwise.POINTWISE, "reduce", an anchor (ANCHORS), "view" or "cat"
    args: tuple[Ref, ...]
    attrs: tuple[tuple[str, object], ...]  # static attributes, sorted by name
    shape: tuple[int, ...]

    def attr(self, name: str, default=None):
        for key, value in self.attrs:
            if key == name:
                return value
        return default


@dataclass(frozen=True)
class ReduceGroup:
    """Reductions all run over the contiguous dims [start, stop) of a tensor of
    rank ``rank``; the kernels see that tensor as (outer, N, inner)."""

    rank: int
    start: int
    stop: int
    full_shape: tuple[int, ...]


@dataclass(frozen=True)
class ReturnedTensor:
    """One tensor of several that forward returns: the buffer holding it and the reference's
    views of that buffer (an LSTM's h_n is a slice of its packed result)."""

    buffer: str  # forward's expression of the buffer: a stage's result, or a view of one
    views: tuple[str, ...]  # view calls applied to it, e.g. ".t()"
    spec: TensorSpec  # the tensor as the reference returns it


@dataclass(frozen=True)
class Returned:
    """What a forward returning several tensors returns: a tuple or a list of tensors and of
    such sequences, nested as the reference nests them (an LSTM's ``(out, (h, c))``)."""

    items: tuple["ReturnedTensor | Returned", ...]
    is_list: bool = False  # a list, else a tuple

    def tensors(self) -> tuple[ReturnedTensor, ...]:
        """The returned tensors in order, nested sequences flattened."""
        out: list[ReturnedTensor] = []
        for item in self.items:
            out.extend(item.tensors() if isinstance(item, Returned) else (item,))
        return tuple(out)


@dataclass(frozen=True)
class Plan:
    family: str
    name: str  # the task's name (file stem) for reports and retrieval keys
    leaves: tuple[Leaf, ...]
    nodes: tuple[Node, ...]
    output: Ref
    out_spec: TensorSpec
    forward_args: str  # the reference forward's parameter list, source text without self
    init_source: str  # ModelNew.__init__ (already renamed), indented for a class body
    preamble: str = ""  # module-level constants the __init__ needs
    out_views: tuple[str, ...] = ()  # view calls applied to the kernel output, e.g. ".view(8, -1)"
    fixed_out_dtype: bool = False  # a cast in the graph fixes the output dtype
    reduce: ReduceGroup | None = None
    matmul_id: int | None = None  # id of the matmul node (family "matmul")
    input_specs: tuple[object, ...] = ()  # TensorSpec or repr of a scalar, per get_inputs() entry
    notes: tuple[str, ...] = field(default=())
    anchor_id: int | None = None  # id of the conv/pool/scan node of those families
    stages: tuple["Plan", ...] = ()  # family "pipeline": the kernels in launch order
    main: int = 0  # family "pipeline": the stage the configuration is for
    buffer: str = ""  # a stage: the name of the tensor it returns in forward
    rules: str = "strict"  # the rule set the plan was scheduled for
    # several tensors returned (a pipeline): what forward returns, output and out_spec then its first
    # tensor's; None where forward returns the last stage's result with out_views
    returns: Returned | None = None

    def node(self, node_id: int) -> Node:
        for node in self.nodes:
            if node.id == node_id:
                return node
        raise KeyError(node_id)

    def leaf(self, name: str) -> Leaf:
        for leaf in self.leaves:
            if leaf.name == name:
                return leaf
        raise KeyError(name)

    @property
    def main_stage(self) -> "Plan":
        """The plan a configuration applies to: itself, or a pipeline's main stage."""
        return self.stages[self.main] if self.family == "pipeline" else self

    @property
    def ops(self) -> tuple[str, ...]:
        """Op names in graph order (reductions as reduce_<kind>), for descriptions."""
        names = []
        for node in self.nodes:
            if node.op == "reduce":
                names.append(f"reduce_{node.attr('kind')}")
            else:
                names.append(node.op)
        return tuple(names)


@dataclass(frozen=True)
class Unsupported:
    """The explicit "no plan" answer: why the reference falls outside the families."""

    reason: str

    def __bool__(self) -> bool:  # lets callers write `if not plan:`
        return False
