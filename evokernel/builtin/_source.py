"""Reading the task file: the reference's __init__ (copied into ModelNew so the
seeded RNG builds identical parameters) and its forward parameter list."""

from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
import types

from ._build import Reject

__all__ = ["ModelSource", "read_model_source"]

_KNOWN = {"torch", "nn", "self", "super", "triton", "tl"}
_SIMPLE = (int, float, str, bool, type(None))


class ModelSource:
    def __init__(self, init_source: str, preamble: str, forward_args: str, forward_names: list[str]):
        self.init_source = init_source
        self.preamble = preamble
        self.forward_args = forward_args
        self.forward_names = forward_names


class _DropSuperArgs(ast.NodeTransformer):
    """super(Model, self).__init__() -> super().__init__(): ModelNew must not name Model."""

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "super":
            node.args = []
            node.keywords = []
        return node


def _is_simple(value) -> bool:
    if isinstance(value, _SIMPLE):
        return True
    if isinstance(value, (tuple, list)):
        return all(_is_simple(v) for v in value)
    return False


def _free_names(func: ast.FunctionDef) -> set[str]:
    bound = {a.arg for a in func.args.args + func.args.kwonlyargs}
    if func.args.vararg:
        bound.add(func.args.vararg.arg)
    if func.args.kwarg:
        bound.add(func.args.kwarg.arg)
    loads, stores = set(), set()
    for node in ast.walk(func):
        if isinstance(node, ast.Name):
            (loads if isinstance(node.ctx, ast.Load) else stores).add(node.id)
        elif isinstance(node, (ast.comprehension,)):
            for target in ast.walk(node.target):
                if isinstance(target, ast.Name):
                    stores.add(target.id)
    return loads - bound - stores - set(dir(builtins)) - _KNOWN


def read_model_source(module: types.ModuleType, cls: type) -> ModelSource:
    try:
        text = inspect.getsource(module)
    except (OSError, TypeError) as exc:
        raise Reject(f"cannot read the task's source: {exc}") from exc
    tree = ast.parse(text)
    classdef = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls.__name__), None)
    if classdef is None:
        raise Reject(f"the task source has no class {cls.__name__}")
    methods = {n.name: n for n in classdef.body if isinstance(n, ast.FunctionDef)}
    forward = methods.get("forward")
    if forward is None:
        raise Reject("Model has no forward method")
    if forward.args.vararg or forward.args.kwarg:
        raise Reject("forward with *args/**kwargs is not supported")
    init = methods.get("__init__")
    if init is None:
        init = ast.parse("def __init__(self):\n    super().__init__()").body[0]
    init = _DropSuperArgs().visit(init)
    init.decorator_list = []
    ast.fix_missing_locations(init)

    preamble = []
    for name in sorted(_free_names(init)):
        if name == cls.__name__:
            raise Reject("Model.__init__ refers to the class Model itself")
        if not hasattr(module, name):
            raise Reject(f"Model.__init__ uses {name}, which the task file does not define")
        value = getattr(module, name)
        if isinstance(value, types.ModuleType):
            preamble.append(f"import {value.__name__} as {name}")
        elif _is_simple(value):
            preamble.append(f"{name} = {value!r}")
        else:
            raise Reject(f"Model.__init__ uses {name} ({type(value).__name__}) defined in the task file; "
                         "only constants and modules can be carried over")
    init_text = textwrap.indent(ast.unparse(init), "    ")

    params = ast.arguments(posonlyargs=[], args=forward.args.args[1:], vararg=None,
                           kwonlyargs=forward.args.kwonlyargs, kw_defaults=forward.args.kw_defaults,
                           kwarg=None, defaults=forward.args.defaults)
    forward_args = ast.unparse(params)
    names = [a.arg for a in forward.args.args[1:]] + [a.arg for a in forward.args.kwonlyargs]
    return ModelSource(init_text, "\n".join(preamble), forward_args, names)
