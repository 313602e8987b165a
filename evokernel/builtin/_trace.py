"""analyze(task) -> Plan | Unsupported: trace the reference and classify it."""

from __future__ import annotations

import ast
import contextlib
import inspect
import io
import os
import types
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from dataclasses import dataclass, replace

from backends import cast_model, cast_values, parse_python

from ._build import Builder, ComputedView, PyVal, Reject
from ._canon import Context, call_function, call_method, call_module
from ._canon_complex import ComplexLeaf
from ._capture import capture, functionalize
from ._ir import Node, Plan, Ref, Returned, ReturnedTensor, TensorSpec, Unsupported
from ._reroll import Rerolled
from ._schedule import classify, domain_map, schedule, source_of
from ._source import read_model_source

if TYPE_CHECKING:
    from ._config import Config

__all__ = ["analyze", "load_task", "classify", "domain_map"]


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


def analyze(task, rules: str = "strict", precision: str = "fp32") -> Plan | Unsupported:
    """Trace ``Model`` from a task (module or file path) into a Plan, or say why not.

    ``rules`` ("strict" or "kernelbench") decides which work the library may do
    (see _schedule). ``precision`` ("fp32", "fp16", "bf16") is the one the executor
    runs the task in: the model and floating inputs are cast as it casts them, so the
    plan sees the dtypes the kernels will get. Tracing runs the reference on meta
    tensors: shapes only, so analysing a full-size task costs no memory and no compute."""
    try:
        plan = _analyze(load_task(task), rules, precision)
        # kept on this object only, not as a field: a plan derived from it by replace() is
        # another plan and writes its own
        object.__setattr__(plan, "_default_candidate", _trial_generation(plan))
        return plan
    except Reject as exc:
        return Unsupported(str(exc))
    except Exception as exc:  # user code traced by us may fail in any way; that is a verdict too
        return Unsupported(f"analysis failed: {type(exc).__name__}: {exc}")


def _trial_generation(plan: Plan) -> tuple[Config, str]:
    """Write the default candidate once: a graph a template cannot express is found here,
    as a reason, rather than when a policy asks for code. The plan keeps it with its
    configuration (a first draft asks for exactly this candidate)."""
    from ._config import default_config
    from ._generate import generate

    try:
        config = default_config(plan)
        source = generate(plan, config)
    except Exception as exc:
        raise Reject(f"code generation failed: {type(exc).__name__}: {exc}") from exc
    carried = set(_top_level_names(plan.preamble)) if plan.preamble else set()
    defined = _top_level_names(source) if carried else []
    clash = sorted(name for name in carried if defined.count(name) > 1)
    if clash:  # the later definition would silently replace the task's in the candidate
        raise Reject(f"the task file's {clash[0]} has the name of a generated helper")
    return config, source


def _top_level_names(source: str) -> list[str]:
    names = []
    for stmt in parse_python(source).body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(stmt.name)
        elif isinstance(stmt, ast.Assign):
            names.extend(t.id for t in stmt.targets if isinstance(t, ast.Name))
    return names


def _spec_of(value) -> TensorSpec:
    return TensorSpec(tuple(value.shape), str(value.dtype).replace("torch.", ""))


def _node_spec(node) -> TensorSpec | None:
    """The tensor an fx node computes (or ``node`` is: its traced metadata), None where unknown."""
    meta = node.meta.get("tensor_meta") if isinstance(node, torch.fx.Node) else node
    if meta is None or not hasattr(meta, "shape"):
        return None
    return TensorSpec(tuple(meta.shape), str(meta.dtype).replace("torch.", ""))


def _trace(model: torch.nn.Module, inputs: list, names: list[str]):
    """torch.fx's symbolic trace (the graph every level1/level2 plan is made from), or, where
    that cannot follow forward, PyTorch's own capture with the task's shapes (_capture)."""
    from torch.fx import symbolic_trace
    from torch.fx.passes.shape_prop import ShapeProp

    state = [(module, dict(vars(module))) for module in model.modules()]
    # forward's optional parameters get_inputs() leaves out keep their defaults: traced as
    # proxies, `if h0 is None` would take the branch the reference never takes
    left_out = {name: p.default for name, p in list(inspect.signature(model.forward).parameters.items())[len(inputs):]
                if p.default is not inspect.Parameter.empty}
    try:
        gm = symbolic_trace(model, concrete_args=left_out or None)
        if left_out:
            _drop_specialised_inputs(gm, len(inputs))
        _check_state_kept(state)
        _check_constants(gm)
    except Exception as exc:
        fx_reason = f"torch.fx could not trace forward: {type(exc).__name__}: {exc}".splitlines()[0]
        try:
            return capture(model, inputs, names)  # shapes recorded while capturing
        except Reject as again:
            raise Reject(f"{fx_reason}; {again}") from exc
    # `out.index_add_(...)` then `return out`: later readers of a tensor an in-place method mutates read its result
    functionalize(gm.graph)
    gm.recompile()
    with torch.no_grad():
        ShapeProp(gm).propagate(*inputs)
    return gm


def _drop_specialised_inputs(gm, supplied: int) -> None:
    """torch.fx keeps a placeholder and a check for each concrete argument; forward's
    candidate takes them at their defaults, so neither belongs in the plan."""
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and getattr(node.target, "__name__", "") == "_assert_is_none":
            gm.graph.erase_node(node)
    for node in [n for n in gm.graph.nodes if n.op == "placeholder"][supplied:]:
        if not node.users:
            gm.graph.erase_node(node)
    gm.recompile()


def _check_constants(gm) -> None:
    """torch.fx proxies parameters but not buffers: ``self.index.view(-1)`` runs at trace time
    and lands in the graph as a constant (on meta tensors, one without values). Dynamo's
    capture reads the buffer and records the view."""
    for node in gm.graph.nodes:
        if node.op == "get_attr" and str(node.target).startswith("_tensor_constant"):
            value = getattr(gm, str(node.target))
            if value.numel() != 1 or value.is_meta:
                raise RuntimeError("forward computes on a buffer outside the graph (a tensor constant)")


def _check_state_kept(state: list) -> None:
    """A forward that assigns module attributes (``self.hidden = ...``) leaves torch.fx's
    proxies in the model: put the values back and say so (the graph would read a proxy)."""
    changed = []
    for module, attributes in state:
        for name, value in vars(module).items():
            if isinstance(value, torch.fx.Proxy):
                changed.append(name)
                if name in attributes:
                    setattr(module, name, attributes[name])
                else:
                    delattr(module, name)
    if changed:
        raise RuntimeError(f"forward assigns module state ({', '.join(sorted(changed))})")


def _instantiate(module: types.ModuleType, device: str, precision: str = "fp32"):
    """The reference model (eval mode, as the executor runs it) and its inputs on ``device``,
    cast to ``precision`` as the executor casts them."""
    with torch.device(device):
        torch.manual_seed(0)
        model = cast_model(module.Model(*cast_values(list(module.get_init_inputs()), precision)).eval(), precision)
        inputs = cast_values(list(module.get_inputs()), precision)
    return model, inputs


def _analyze(module: types.ModuleType, rules: str = "strict", precision: str = "fp32") -> Plan:
    for attr in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, attr):
            raise Reject(f"task defines no {attr}")
    source = read_model_source(module, module.Model)
    try:
        with contextlib.redirect_stderr(io.StringIO()):  # ShapeProp prints the failures it re-raises
            model, inputs = _instantiate(module, "meta", precision)
            gm = _trace(model, inputs, source.forward_names)
    except Reject:
        raise
    except Exception:  # an op without a meta kernel, or .item() at init: trace on real tensors
        with contextlib.redirect_stderr(io.StringIO()):
            model, inputs = _instantiate(module, "cpu", precision)
            gm = _trace(model, [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs], source.forward_names)

    b = Builder()
    env: dict = {}
    placeholder = 0
    result = None
    rerolled = Rerolled(gm)  # loops over time written out in forward: one recurrent stage
    for node in gm.graph.nodes:
        spec = _node_spec(node)
        ctx = Context(b, spec)
        if rerolled.lower(node, ctx, env):
            continue
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
            if str(node.target).startswith("_tensor_constant"):
                # torch.tensor(c) in forward, folded by torch.fx into a constant of its own module
                if value.numel() != 1 or value.is_meta:
                    raise Reject("a tensor constant built in forward with more than one element")
                env[node] = Ref("const", float(value.reshape(()).item()))
                continue
            path = ".".join(f"[{p}]" if p.isdigit() else p for p in str(node.target).split(".")).replace(".[", "[")
            if value.is_complex():  # read as its real and imaginary parts where used (see _canon_complex)
                env[node] = ComplexLeaf(f"self.{path}", tuple(value.shape), str(value.dtype).replace("torch.", ""))
                continue
            env[node] = b.leaf(f"self.{path}", _spec_of(value), str(node.target).replace(".", "_"))
        elif node.op == "call_function":
            env[node] = call_function(ctx, node.target, args, kwargs)
        elif node.op == "call_method":
            env[node] = call_method(ctx, str(node.target), args, kwargs)
        elif node.op == "call_module":
            env[node] = call_module(ctx, gm.get_submodule(str(node.target)), str(node.target), args, kwargs)
        value = env.get(node)
        if spec is not None and spec.dtype == "bool" and isinstance(value, Ref) and value.kind == "node":
            b.booleans.add(value.value)
        if (spec is not None and spec.dtype.startswith(("int", "uint")) and isinstance(value, Ref)
                and value.kind == "node" and b.dtype(value) != spec.dtype):
            # integer arithmetic computes in float (see _canon._INTS): the value keeps torch's integer
            # dtype, so a buffer of it is an integer tensor (an index a gather can read)
            env[node] = b.pw("cast", value, dtype=spec.dtype)
        if node.op == "output":
            result = args[0]
            out_node = node.args[0]
    if placeholder < len(inputs):
        raise Reject("get_inputs() returns more values than forward takes")
    return _make_plan(module, source, b, result, out_node, inputs, rules)


def _reachable(b: Builder, root: Ref, extra: tuple[Ref, ...] = ()) -> tuple[list[Node], set[str]]:
    seen, leaves, stack = set(), set(), [root, *extra]
    while stack:
        ref = stack.pop()
        if ref.kind == "leaf":
            leaves.add(ref.value)
        elif ref.kind == "node" and ref.value not in seen:
            seen.add(ref.value)
            stack.extend(b.nodes[ref.value].args)
    return [n for n in b.nodes if n.id in seen], leaves


@dataclass(frozen=True)
class _Output:
    """One tensor forward returns, lowered: the value its kernel computes and the reference's
    views of that value (applied in forward)."""

    base: Ref
    views: tuple[str, ...]  # view calls applied to base's buffer, naming extra as @1, @2...
    extra: tuple[Ref, ...]
    spec: TensorSpec  # base's shape, the returned tensor's dtype
    returned: TensorSpec  # the tensor as torch's trace saw it returned


def _lower_output(b: Builder, result, meta: TensorSpec | None) -> _Output:
    """A returned value as an _Output; ``meta`` is the tensor torch's trace saw there."""
    views: tuple[str, ...] = ()
    extra: tuple[Ref, ...] = ()
    if isinstance(result, Ref) and result.kind == "node" and b.nodes[result.value].op == "view":
        node = b.nodes[result.value]  # a grouped view as the output: the views of its buffer
        result = ComputedView(node.args[0], (node.attr("suffix"),), node.shape, node.args[1:])
    if isinstance(result, ComputedView):
        views, extra, result = result.suffixes, result.extra, result.base
    if not isinstance(result, Ref) or result.kind not in ("node", "leaf"):
        raise Reject("forward does not return a tensor computed from its inputs")
    if result.kind == "leaf":  # forward returns an input (or a view of one): a copy kernel
        result = b.pw("identity", result)
    if meta is None:
        raise Reject("could not determine the output's shape and dtype")
    base_shape = b.shape(result)
    if not views and tuple(base_shape) != tuple(meta.shape):
        raise Reject(f"internal shape inference gave {base_shape}, torch gave {meta.shape}")
    # an integer output only from ops that make integers (argmax, an index read): integer
    # arithmetic is computed in float, exact for ids and positions, not for every int64
    if not meta.dtype.startswith(("float", "bfloat")) and (
            b.dtypes[result.value] != meta.dtype or b.nodes[result.value].op == "cast"):
        raise Reject(f"output dtype {meta.dtype} is not a floating type")
    return _Output(result, views, extra, TensorSpec(tuple(base_shape), meta.dtype), meta)


def _copy_kernel(b: Builder, ref: Ref) -> Ref:
    """A kernel of ours that copies ``ref``: where host stages alone compute the outputs (a lone
    topk or gather), it is the stage a configuration tunes."""
    dtype = b.dtypes[ref.value]
    return b.pw("identity", ref) if dtype.startswith(("float", "bfloat")) else b.pw("cast", ref, dtype=dtype)


def _views_in_forward(b: Builder, out: _Output, buffers) -> tuple[str, ...]:
    """An output's views as forward writes them: the values they name (@1, @2...) read from their buffers."""
    views = out.views
    for j, ref in enumerate(out.extra, 1):
        views = tuple(view.replace(f"@{j}", source_of(b, ref, buffers)) for view in views)
    return views


def _common_fields(module, source, inputs, rules: str) -> dict:
    """The Plan fields of the task itself, the same for a one-kernel plan and a pipeline."""
    name = getattr(module, "__file__", None)
    return dict(
        name=Path(name).stem if name else module.__name__,
        forward_args=source.forward_args,
        init_source=source.init_source,
        preamble=source.preamble,
        input_specs=tuple(_spec_of(x) if isinstance(x, torch.Tensor) else repr(x) for x in inputs),
        rules=rules,
    )


def _make_plan(module, source, b: Builder, result, out_node, inputs, rules: str = "strict") -> Plan:
    if isinstance(result, (tuple, list)):
        return _several_outputs_plan(module, source, b, result, out_node, inputs, rules)
    out = _lower_output(b, result, _node_spec(out_node) if hasattr(out_node, "meta") else None)
    result, views, extra = out.base, out.views, out.extra
    nodes, leaf_names = _reachable(b, result, extra)
    leaves = tuple(leaf for leaf in b.leaves.values() if leaf.name in leaf_names)
    common = _common_fields(module, source, inputs, rules)
    keep = tuple(e.value for e in extra if e.kind == "node")
    stages, main, buffers = schedule(b, nodes, result, rules, keep=keep)
    if all(s.family == "host" for s in stages) and not views:
        result = _copy_kernel(b, result)
        nodes = _reachable(b, result, extra)[0]
        stages, main, buffers = schedule(b, nodes, result, rules, keep=keep)
    # views that name values: forward's text of them, as one view
    common["out_views"] = ("".join(_views_in_forward(b, out, buffers)),) if extra else views
    if len(stages) == 1 and stages[0].family != "host":
        # one kernel: the plan is that kernel's, over the original leaves
        only = stages[0]
        return replace(only, leaves=leaves, out_spec=out.spec, fixed_out_dtype=only.fixed_out_dtype, buffer="",
                       **common)
    return Plan(family="pipeline", leaves=leaves, nodes=tuple(nodes), output=result, out_spec=out.spec,
                fixed_out_dtype=any(n.op == "cast" for n in nodes), stages=tuple(stages), main=main, **common)


def _several_outputs_plan(module, source, b: Builder, result, out_node, inputs, rules: str) -> Plan:
    """A pipeline for a forward that returns a tuple or list of tensors (nested or not): every
    returned value is a stored buffer, which forward returns with the reference's views of it in
    the reference's structure. A value returned twice, or returned and viewed, is one buffer."""
    lowered: list[_Output] = []
    tree = _lower_returned(b, result, out_node, lowered, "")
    nodes, leaf_names, stages, main, buffers = _schedule_outputs(b, lowered, rules)
    plain = next((i for i, out in enumerate(lowered) if not out.views), None)
    if all(s.family == "host" for s in stages) and plain is not None:
        lowered[plain] = replace(lowered[plain], base=_copy_kernel(b, lowered[plain].base))
        nodes, _, stages, main, buffers = _schedule_outputs(b, lowered, rules)
    tensors = [ReturnedTensor(buffers[out.base.value].source, _views_in_forward(b, out, buffers), out.returned)
               for out in lowered]
    first = lowered[0]
    return Plan(family="pipeline", leaves=tuple(leaf for leaf in b.leaves.values() if leaf.name in leaf_names),
                nodes=tuple(nodes), output=first.base, out_spec=first.spec,
                fixed_out_dtype=any(n.op == "cast" for n in nodes), stages=tuple(stages), main=main,
                returns=_returned(tree, tensors), **_common_fields(module, source, inputs, rules))


def _lower_returned(b: Builder, value, arg, lowered: list[_Output], where: str) -> tuple | list:
    """A returned tuple or list with each tensor in it lowered (appended to ``lowered``) and
    replaced by its position there, nesting kept. ``arg``: the output node's matching part (fx
    nodes, or the traced metadata of a node that returned the whole sequence); ``where``: the
    sequence's position in what forward returns ("" for all of it, "[1]" for its second item)."""
    if type(value) is not tuple and not isinstance(value, list):  # fx keeps a namedtuple's type
        raise Reject(f"forward returns a {type(value).__name__}{f' at {where}' if where else ''}; "
                     "only tensors, and tuples and lists of them, are supported")
    if not value:
        raise Reject(f"forward returns an empty {'list' if isinstance(value, list) else 'tuple'}"
                     f"{f' at {where}' if where else ''}")
    if isinstance(arg, torch.fx.Node):
        arg = arg.meta.get("tensor_meta")
    if not isinstance(arg, (tuple, list)) or hasattr(arg, "shape") or len(arg) != len(value):
        raise Reject("could not determine the outputs' shapes and dtypes")
    items: list = []
    for i, (item, part) in enumerate(zip(value, arg)):
        at = f"{where}[{i}]"
        if isinstance(item, (tuple, list)):
            items.append(_lower_returned(b, item, part, lowered, at))
            continue
        try:
            lowered.append(_lower_output(b, item, _node_spec(part)))
        except Reject as exc:
            raise Reject(f"{exc} (forward's output {at})") from None
        items.append(len(lowered) - 1)
    return items if isinstance(value, list) else tuple(items)


def _schedule_outputs(b: Builder, lowered: list[_Output], rules: str):
    """(nodes, leaf names, stages, main stage, buffers) of a graph computing every lowered output,
    each one's value stored (a stage's last: see schedule's keep)."""
    bases = tuple(dict.fromkeys(out.base for out in lowered))
    extra = tuple(e for out in lowered for e in out.extra)
    keep = tuple(dict.fromkeys(ref.value for ref in (*bases, *extra) if ref.kind == "node"))
    nodes, leaf_names = _reachable(b, bases[0], (*bases[1:], *extra))
    stages, main, buffers = schedule(b, nodes, bases[0], rules, keep=keep)
    return nodes, leaf_names, stages, main, buffers


def _returned(tree: tuple | list, tensors: list[ReturnedTensor]) -> Returned:
    """The Returned record of a tree from _lower_returned, its positions replaced by ``tensors``."""
    items = tuple(_returned(item, tensors) if isinstance(item, (tuple, list)) else tensors[item] for item in tree)
    return Returned(items, is_list=isinstance(tree, list))
