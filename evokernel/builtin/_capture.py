"""capture(model, inputs, names) -> GraphModule, for forwards torch.fx cannot trace.

torch.fx's symbolic tracing stops where a forward uses a traced size as a
Python value (``att[:, :, :T, :T]``, ``range(x.size(1))``, ``B, L, C = x.shape``),
calls a library such as einops, or keeps tensors as plain attributes. Dynamo
captures such forwards by running them on fake tensors with the task's shapes:
sizes become constants and Python control flow is unrolled. Its graph is at the
level symbolic tracing records (torch functions, Tensor methods, operators), so
the existing handlers lower it unchanged once three differences are undone:

- dynamo inlines torch.nn modules; calls of one torch.nn module with one tensor
  in and one out become ``call_module`` nodes again (the module's handler sees the
  module and its parameters, as on the torch.fx path), found through the
  ``nn_module_stack`` and ``source_fn_stack`` dynamo records on every node;
- parameters, buffers and tensor attributes are read back as ``self.<path>``
  (by identity with the model's tensors, or by dynamo's flattened name);
- in-place ops are made functional: later uses of the tensor an op mutates read
  the op's result, and ``dst.copy_(src)`` is ``src``; ``dst[index] = src`` (operator.setitem,
  which returns None) becomes a call of ``setitem_value``, which returns the written tensor.
"""

from __future__ import annotations

import operator
import re

import torch
import torch.nn as nn
from torch.utils._pytree import tree_unflatten

from ._build import Reject
from ._einops import lower_einops

__all__ = ["capture", "functionalize", "setitem_value"]

# Python's in-place operators (``out += identity``): they mutate their first operand.
_INPLACE_OPERATORS = {operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
                      operator.ipow, operator.imod, operator.iand, operator.ior, operator.ixor}
# Ops whose result shares memory with their first argument: an in-place op on one mutates its base.
_VIEWS = {"view", "reshape", "transpose", "permute", "t", "unsqueeze", "squeeze", "flatten", "expand",
          "expand_as", "view_as", "reshape_as", "swapaxes", "swapdims", "movedim", "unflatten", "narrow",
          "select", "getitem", "split", "chunk", "unbind", "as_strided", "diagonal", "unfold", "detach"}


def setitem_value(base: torch.Tensor, index, value) -> torch.Tensor:
    """``base[index] = value`` as a value: a copy of ``base`` with the write made (the graph's
    later readers of ``base`` read this instead, see functionalize)."""
    out = base.clone()
    out[index] = value
    return out


def capture(model: nn.Module, inputs: list, names: list[str]) -> torch.fx.GraphModule:
    """The forward of ``model`` on ``inputs`` as a torch.fx graph over ``model``'s own
    submodules and tensors, its placeholders named by ``names`` (forward's parameters)."""
    import torch._dynamo

    torch._dynamo.reset()  # a fresh cache: no recompile limits carried over from other models
    try:
        captured, _ = torch._dynamo.export(model, aten_graph=False, assume_static_by_default=True)(*inputs)
    except Exception as exc:  # a graph break, an unsupported construct: a reason, in one line
        raise Reject(f"dynamo could not capture forward either: {_first_line(exc)}") from exc
    finally:
        torch._dynamo.reset()
    graph = _rebuild(captured, model, names[:len(inputs)])
    lower_einops(graph)  # where einops' calls stayed whole (see _einops)
    functionalize(graph)
    _shapes_from_capture(graph)
    return torch.fx.GraphModule(model, graph)


def _shapes_from_capture(graph: torch.fx.Graph) -> None:
    """ShapeProp's ``tensor_meta`` from the fake values dynamo traced with: no need to run
    the graph again (on real tensors, where the model could only be built on the CPU)."""
    from torch.fx.passes.shape_prop import _extract_tensor_metadata

    for node in graph.nodes:
        value = node.meta.get("example_value")
        if value is not None:
            node.meta["tensor_meta"] = torch.fx.node.map_aggregate(
                value, lambda v: _extract_tensor_metadata(v) if isinstance(v, torch.Tensor) else v)


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def _is_leaf(cls: type) -> bool:
    """torch.fx's rule for modules it does not trace into."""
    return (cls.__module__.startswith(("torch.nn", "torch.ao.nn"))
            and not issubclass(cls, (nn.Sequential, nn.ModuleList, nn.ModuleDict)))


def _module_path(stack_path: str) -> str:
    """dynamo's "L['self'].layer1.0.conv1" -> "layer1.0.conv1"."""
    path = re.sub(r"^L\['self'\]\.?", "", stack_path)
    path = re.sub(r"\._modules\['([^']+)'\]", r".\1", path)
    return path.lstrip(".")


def _leaf_call(node: torch.fx.Node, model: nn.Module, paths: dict[int, str]):
    """(module path, call name) of the outermost torch.nn module call the node belongs to."""
    stack = node.meta.get("nn_module_stack") or {}
    for key, (stack_path, cls) in stack.items():
        if not isinstance(cls, type) or not _is_leaf(cls):
            continue
        # dynamo keys the stack by the module's id; a module reached through a closure or a
        # container has no attribute path in the stack's text, but has one in the model
        path = paths.get(int(key)) if str(key).isdigit() else None
        if path is None:
            path = _module_path(stack_path)
            try:
                if type(model.get_submodule(path)) is not cls:
                    return None
            except AttributeError:
                return None
        # which call of the module: two calls of one module are two groups, never one
        calls = [name for name, source in node.meta.get("source_fn_stack") or [] if source is cls]
        # the stack's key ("<id>@<n>" from the second call on) names the call; source_fn_stack names
        # each node apart, which would make one op of a cell (an unsqueeze, a getitem) a call of its own
        return (path, str(key)) if calls else None
    return None


def _tensor_paths(model: nn.Module) -> tuple[dict[int, str], dict[str, str]]:
    """Every tensor the model holds: by identity, and by dynamo's flattened name."""
    by_id: dict[int, str] = {}
    for prefix, module in model.named_modules(remove_duplicate=False):
        for name, value in vars(module).items():
            tensors = {}
            if name in ("_parameters", "_buffers"):
                tensors = {k: v for k, v in value.items() if v is not None}
            elif isinstance(value, torch.Tensor):
                tensors = {name: value}
            for key, tensor in tensors.items():
                by_id.setdefault(id(tensor), f"{prefix}.{key}" if prefix else key)
    flat = {_flat(path): path for path in by_id.values()}
    return by_id, flat


def _flat(text: str) -> str:
    return re.sub(r"[^0-9A-Za-z]+", "_", text).strip("_")


def _attribute_path(captured: torch.fx.GraphModule, target: str, by_id, flat) -> str:
    path = by_id.get(id(_resolve(captured, target)))
    if path is None:  # a tensor attribute dynamo lifted as a copy: its name still says where it lives
        stripped = _flat(re.sub(r"^(getattr_)?L__self__", "", target))
        path = flat.get(stripped)
    if path is None:
        raise Reject(f"forward reads a tensor ({target}) that is not an attribute of the model")
    return path


def _module_groups(captured: torch.fx.GraphModule, model: nn.Module) -> dict:
    """{output node: (module path, input node, member nodes)} for each torch.nn module call
    with one tensor input and one output that dynamo inlined."""
    members: dict = {}
    paths = {id(module): path for path, module in model.named_modules() if path}
    order = {node: k for k, node in enumerate(captured.graph.nodes)}
    for node in captured.graph.nodes:
        if node.op in ("call_function", "call_method"):
            key = _leaf_call(node, model, paths)
            if key is not None:
                members.setdefault(key, []).append(node)
    groups = {}
    for (path, _), nodes in members.items():
        inside = set(nodes)
        owned = {id(t) for t in [*model.get_submodule(path).parameters(), *model.get_submodule(path).buffers()]}
        inputs, outputs = [], []
        for node in nodes:
            for arg in node.all_input_nodes:
                if arg in inside or arg in inputs:
                    continue
                if arg.op == "get_attr" and id(_resolve(captured, arg.target)) in owned:
                    continue
                inputs.append(arg)
            if any(user not in inside for user in node.users):
                outputs.append(node)
        # the call's output is its last op: nothing of the module runs after what it returns
        last = max(nodes, key=lambda n: order[n]) if nodes else None
        if len(inputs) == 1 and len(outputs) == 1 and outputs[0] is last:
            groups[last] = (path, inputs[0], inside)
    return groups


def _resolve(root, target: str):
    for part in target.split("."):
        root = getattr(root, part)
    return root


def _rebuild(captured: torch.fx.GraphModule, model: nn.Module, names: list[str]) -> torch.fx.Graph:
    by_id, flat = _tensor_paths(model)
    groups = _module_groups(captured, model)
    grouped = set().union(*(inside for _, _, inside in groups.values())) if groups else set()
    graph = torch.fx.Graph()
    env: dict = {}
    attrs: dict[str, torch.fx.Node] = {}
    placeholder = 0
    if sum(node.op == "placeholder" for node in captured.graph.nodes) != len(names):
        raise Reject("dynamo's graph does not take forward's inputs one for one")
    for node in captured.graph.nodes:
        if node.op == "placeholder":
            env[node] = graph.placeholder(names[placeholder])
            placeholder += 1
        elif node.op == "get_attr":
            path = _attribute_path(captured, str(node.target), by_id, flat)
            if path not in attrs:
                attrs[path] = graph.get_attr(path)
            env[node] = attrs[path]
        elif node in groups:
            path, source, _ = groups[node]
            env[node] = graph.call_module(path, (env[source],))
        elif node in grouped:
            continue
        elif node.op == "call_function" and node.target is torch._C._log_api_usage_once:
            continue  # a module built inside forward (``nn.Softmax(dim=-1)(w)``) logs its construction
        elif node.op == "output":  # dynamo returns the outputs flattened; forward's structure is its out_spec
            outputs = [env[n] if isinstance(n, torch.fx.Node) else n for n in node.args[0]]
            graph.output(tree_unflatten(outputs, captured.graph._codegen.pytree_info.out_spec))
        else:
            env[node] = graph.node_copy(node, lambda n: env[n])
            _device_from_input(graph, env[node])
        if node.op != "output" and node in env:
            env[node].meta.update({k: v for k, v in node.meta.items() if k in ("example_value", "stack_trace")})
    for node in attrs.values():  # the parameters a regrouped module now reads itself
        if not node.users:
            graph.erase_node(node)
    return graph


def _device_from_input(graph: torch.fx.Graph, node: torch.fx.Node) -> None:
    """dynamo bakes ``device=x.device`` in as the device it traced on (meta): read it from
    forward's first tensor input again, as torch.fx records it."""
    found = []
    torch.fx.node.map_aggregate((node.args, node.kwargs), lambda a: found.append(a) if isinstance(a, torch.device) else a)
    source = next((n for n in graph.nodes if n.op == "placeholder"
                   and isinstance(n.meta.get("example_value"), torch.Tensor)), None)
    if not found or source is None:
        return
    with graph.inserting_before(node):
        device = graph.call_function(getattr, (source, "device"))
    swap = lambda a: device if isinstance(a, torch.device) else a  # noqa: E731
    node.args = torch.fx.node.map_aggregate(node.args, swap)
    node.kwargs = torch.fx.node.map_aggregate(node.kwargs, swap)


def _mutated(node: torch.fx.Node) -> bool:
    if node.op == "call_method":
        name = str(node.target)
        return name.endswith("_") and not name.startswith("_")
    if node.op == "call_function":
        if node.target is setitem_value:
            return True
        if node.target in _INPLACE_OPERATORS:
            return isinstance(node.args[0], torch.fx.Node) and _is_tensor(node.args[0])
        name = getattr(node.target, "__name__", "")
        return node.kwargs.get("inplace") is True or (name.endswith("_") and not name.startswith("_"))
    return False


def _is_tensor(node: torch.fx.Node) -> bool:
    return isinstance(node.meta.get("example_value"), torch.Tensor) or node.op in ("placeholder", "get_attr")


def _op_name(node: torch.fx.Node) -> str:
    if node.target is setitem_value:
        return "x[index] = v (setitem)"
    name = str(node.target) if node.op == "call_method" else getattr(node.target, "__name__", str(node.target))
    return name.rstrip("_")


def functionalize(graph: torch.fx.Graph) -> None:
    """Later readers of a tensor an op mutated read the op's result instead."""
    _setitem_as_value(graph)
    order = {node: k for k, node in enumerate(graph.nodes)}
    for node in list(graph.nodes):
        if not _mutated(node) or not isinstance(node.args[0], torch.fx.Node):
            continue
        target = node.args[0]
        if target.op in ("call_method", "call_function") and _op_name(target) in _VIEWS:
            raise Reject(f"in-place {_op_name(node)} writes through a view ({_op_name(target)}); "
                         "only whole tensors can be updated in place")
        later = lambda user, at=order[node]: order.get(user, len(order)) > at  # noqa: E731
        target.replace_all_uses_with(node, delete_user_cb=later)
        if _op_name(node) == "copy":
            _copy_as_value(graph, node)


def _setitem_as_value(graph: torch.fx.Graph) -> None:
    """``dst[index] = src`` on a tensor: a node whose value is the written tensor, with
    dst's shape and dtype (dynamo records None for the statement)."""
    for node in graph.nodes:
        if (node.op == "call_function" and node.target is operator.setitem
                and isinstance(node.args[0], torch.fx.Node) and _is_tensor(node.args[0])):
            node.target = setitem_value
            example = node.args[0].meta.get("example_value")
            if isinstance(example, torch.Tensor):
                node.meta["example_value"] = example


def _copy_as_value(graph: torch.fx.Graph, node: torch.fx.Node) -> None:
    """``dst.copy_(src)`` with src of dst's shape and dtype is src."""
    dst, src = node.args[0], node.args[1]
    want, have = dst.meta.get("example_value"), getattr(src, "meta", {}).get("example_value")
    if not (isinstance(want, torch.Tensor) and isinstance(have, torch.Tensor)
            and want.shape == have.shape and want.dtype == have.dtype):
        raise Reject("copy_ into a tensor of another shape or dtype is not supported")
    node.replace_all_uses_with(src)
    graph.erase_node(node)
