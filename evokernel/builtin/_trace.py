"""analyze(task) -> Plan | Unsupported: trace the reference and classify it."""

from __future__ import annotations

import os
import types
from pathlib import Path

import torch

from ._build import Builder, ComputedView, PyVal, Reject
from ._canon import Context, call_function, call_method, call_module
from ._ir import Node, Plan, ReduceGroup, Ref, TensorSpec, Unsupported
from ._source import read_model_source

__all__ = ["analyze", "load_task"]


def load_task(task, size: str = "full") -> types.ModuleType:
    """A task module object, or a path to a KernelBench-format file (imported at
    `size` by the executor's own loader, once per file version and size)."""
    if isinstance(task, types.ModuleType):
        return task
    from backends import TaskError, load_task_module

    try:
        return load_task_module(Path(os.fspath(task)), size=size)
    except TaskError as exc:
        raise Reject(f"cannot load task file: {exc}") from None


def analyze(task) -> Plan | Unsupported:
    """Trace ``Model`` from a task (module or file path) into a Plan, or say why not."""
    try:
        return _analyze(load_task(task))
    except Reject as exc:
        return Unsupported(str(exc))
    except Exception as exc:  # user code traced by us may fail in any way; that is a verdict too
        return Unsupported(f"analysis failed: {type(exc).__name__}: {exc}")


def _spec_of(value) -> TensorSpec:
    return TensorSpec(tuple(value.shape), str(value.dtype).replace("torch.", ""))


def _node_spec(node) -> TensorSpec | None:
    meta = node.meta.get("tensor_meta")
    if meta is None or not hasattr(meta, "shape"):
        return None
    return TensorSpec(tuple(meta.shape), str(meta.dtype).replace("torch.", ""))


def _trace(model: torch.nn.Module, inputs: list):
    from torch.fx import symbolic_trace
    from torch.fx.passes.shape_prop import ShapeProp

    try:
        gm = symbolic_trace(model)
    except Exception as exc:
        raise Reject(f"torch.fx could not trace forward (data-dependent control flow?): "
                     f"{type(exc).__name__}: {exc}") from exc
    clones = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
    with torch.no_grad():
        ShapeProp(gm).propagate(*clones)
    return gm


def _analyze(module: types.ModuleType) -> Plan:
    for attr in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, attr):
            raise Reject(f"task defines no {attr}")
    source = read_model_source(module, module.Model)
    torch.manual_seed(0)
    model = module.Model(*module.get_init_inputs())
    inputs = list(module.get_inputs())
    gm = _trace(model, inputs)

    b = Builder()
    env: dict = {}
    placeholder = 0
    result = None
    for node in gm.graph.nodes:
        spec = _node_spec(node)
        ctx = Context(b, spec)
        args = torch.fx.node.map_arg(node.args, lambda n: env[n])
        kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: env[n])
        if node.op == "placeholder":
            if placeholder >= len(inputs):
                raise Reject(f"forward parameter {node.target} has no value in get_inputs()")
            value = inputs[placeholder]
            placeholder += 1
            name = str(node.target)
            if isinstance(value, torch.Tensor):
                env[node] = b.leaf(name, _spec_of(value), name)
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                env[node] = PyVal(name, value)
            else:
                raise Reject(f"forward input {name} of type {type(value).__name__} is not supported")
        elif node.op == "get_attr":
            value = gm
            for part in str(node.target).split("."):
                value = getattr(value, part)
            if not isinstance(value, torch.Tensor):
                raise Reject(f"attribute {node.target} is not a tensor")
            path = ".".join(f"[{p}]" if p.isdigit() else p for p in str(node.target).split(".")).replace(".[", "[")
            env[node] = b.leaf(f"self.{path}", _spec_of(value), str(node.target).replace(".", "_"))
        elif node.op == "call_function":
            env[node] = call_function(ctx, node.target, args, kwargs)
        elif node.op == "call_method":
            env[node] = call_method(ctx, str(node.target), args, kwargs)
        elif node.op == "call_module":
            env[node] = call_module(ctx, gm.get_submodule(str(node.target)), str(node.target), args, kwargs)
        elif node.op == "output":
            result = args[0]
            out_node = node.args[0]
    if placeholder < len(inputs):
        raise Reject("get_inputs() returns more values than forward takes")
    return _make_plan(module, source, b, result, out_node, inputs)


def _reachable(b: Builder, root: Ref) -> tuple[list[Node], set[str]]:
    seen, leaves, stack = set(), set(), [root]
    while stack:
        ref = stack.pop()
        if ref.kind == "leaf":
            leaves.add(ref.value)
        elif ref.kind == "node" and ref.value not in seen:
            seen.add(ref.value)
            stack.extend(b.nodes[ref.value].args)
    return [n for n in b.nodes if n.id in seen], leaves


def _make_plan(module, source, b: Builder, result, out_node, inputs) -> Plan:
    if isinstance(result, (tuple, list)):
        raise Reject("forward returns several outputs; only a single tensor output is supported")
    views: tuple[str, ...] = ()
    if isinstance(result, ComputedView):
        views, result = result.suffixes, result.base
    if not isinstance(result, Ref) or result.kind not in ("node", "leaf"):
        raise Reject("forward does not return a tensor computed from its inputs")
    if result.kind == "leaf":  # forward returns an input (or a view of one): a copy kernel
        result = b.pw("identity", result)
    out_spec_meta = _node_spec(out_node) if hasattr(out_node, "meta") else None
    if out_spec_meta is None:
        raise Reject("could not determine the output's shape and dtype")
    base_shape = b.shape(result)
    if not views and tuple(base_shape) != tuple(out_spec_meta.shape):
        raise Reject(f"internal shape inference gave {base_shape}, torch gave {out_spec_meta.shape}")
    if not out_spec_meta.dtype.startswith(("float", "bfloat")):
        raise Reject(f"output dtype {out_spec_meta.dtype} is not a floating type")
    nodes, leaf_names = _reachable(b, result)
    leaves = tuple(leaf for leaf in b.leaves.values() if leaf.name in leaf_names)
    family, group, matmul_id = classify(nodes, result, b)
    name = getattr(module, "__file__", None)
    return Plan(
        family=family,
        name=Path(name).stem if name else module.__name__,
        leaves=leaves,
        nodes=tuple(nodes),
        output=result,
        out_spec=TensorSpec(tuple(base_shape), out_spec_meta.dtype),
        forward_args=source.forward_args,
        init_source=source.init_source,
        preamble=source.preamble,
        out_views=views,
        fixed_out_dtype=any(n.op == "cast" for n in nodes),
        reduce=group,
        matmul_id=matmul_id,
        input_specs=tuple(_spec_of(x) if isinstance(x, torch.Tensor) else repr(x) for x in inputs),
    )


def classify(nodes: list[Node], output: Ref, b: Builder):
    """Family, reduction group and matmul id; Reject when the graph fits no family."""
    matmuls = [n for n in nodes if n.op == "matmul"]
    reductions = [n for n in nodes if n.op == "reduce"]
    if matmuls and reductions:
        raise Reject("a matmul combined with a reduction (e.g. linear + softmax) needs two kernels; "
                     "the builtin generator fuses only pointwise epilogues into a matmul")
    if len(matmuls) > 1:
        raise Reject(f"{len(matmuls)} matmuls in one forward; the builtin generator handles one")
    if matmuls:
        mm = matmuls[0]
        if b.shape(output) != mm.shape:
            raise Reject("the matmul epilogue broadcasts the product to a larger shape")
        return "matmul", None, mm.id
    if reductions:
        return "rows", _check_rows(nodes, output, b), None
    return "elementwise", None, None


def _check_rows(nodes: list[Node], output: Ref, b: Builder) -> ReduceGroup:
    reductions = [n for n in nodes if n.op == "reduce"]
    full = b.shape(reductions[0].args[0])
    start, stop = reductions[0].attr("start"), reductions[0].attr("stop")
    for node in reductions:
        if (b.shape(node.args[0]), node.attr("start"), node.attr("stop")) != (full, start, stop):
            raise Reject("reductions over different dims or shapes in one forward; "
                         "the builtin generator handles one reduction group")
    rank = len(full)
    keep = tuple(1 if start <= i < stop else s for i, s in enumerate(full))
    squeezed = full[:start] + full[stop:]
    domain = domain_map(nodes, full, keep)
    for node in nodes:
        d = domain[node.id]
        arg_domains = [domain.get(a.value, "free") if a.kind == "node" else "free" for a in node.args]
        if node.op == "reduce":
            if arg_domains[0] == "red":
                raise Reject("a reduction of a reduced value (nested reductions) is not supported")
        elif d == "row":
            if node.shape != full:
                raise Reject(f"an op broadcasts the reduced tensor {full} to {node.shape}")
            for a, ad in zip(node.args, arg_domains):
                if ad == "red" and len(b.shape(a)) != rank:
                    raise Reject("a reduction result taken without keepdim is broadcast against the "
                                 "unreduced tensor (it lines up with the wrong dims)")
        elif d == "red":
            if node.shape not in (keep, squeezed):
                raise Reject(f"a reduced value is broadcast to shape {node.shape}")
    return ReduceGroup(rank=rank, start=start, stop=stop, full_shape=full)


def domain_map(nodes: list[Node], full: tuple[int, ...], keep: tuple[int, ...]) -> dict[int, str]:
    """Per node: "row" (a value per element of the unreduced tensor), "red" (a value
    per row, i.e. per element of the reduced tensor) or "free" (depends on no
    reduction: computed in whichever domain its consumer needs)."""
    domain: dict[int, str] = {}
    for node in nodes:
        arg_domains = {domain[a.value] for a in node.args if a.kind == "node"}
        if node.op == "reduce":
            domain[node.id] = "red"
        elif "row" in arg_domains:
            domain[node.id] = "row"
        elif "red" in arg_domains:
            # per-row values combined with a full-size operand become full-size again
            domain[node.id] = "row" if node.shape == full and full != keep else "red"
        else:
            domain[node.id] = "free"
    return domain
