"""Reading the task file: what ModelNew needs to build the reference's parameters.

ModelNew runs the reference's ``__init__`` (so the seeded RNG draws identical
parameters) and whatever that constructor reaches in the task file: constants,
imported modules, helper functions, Model's own helper methods (``_make_layer``)
and the file's module classes (``BasicBlock``), carried into the candidate as
parameter holders. A carried class keeps its constructor and the methods
construction calls, never ``forward``: the candidate's forward is the generated
kernels, so a carried block's forward must not run (nn.Module's default forward
raises if anything tried), and the static rules see no torch compute of the
reference's in what ModelNew.forward reaches.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
import types

from backends import parse_python

from ._build import Reject

__all__ = ["ModelSource", "read_model_source"]

_KNOWN = {"torch", "nn", "self", "super", "triton", "tl"}
_SIMPLE = (int, float, str, bool, type(None))
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class ModelSource:
    def __init__(self, init_source: str, preamble: str, forward_args: str, forward_names: list[str]):
        self.init_source = init_source  # ModelNew's __init__ and the helper methods it calls, indented
        self.preamble = preamble  # module-level constants, imports and carried definitions
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


def _free_names(nodes: list[ast.AST]) -> set[str]:
    """Names the code loads but does not bind itself (arguments, locals, nested defs
    and comprehension targets anywhere inside count as bound)."""
    loads, bound = set(), set()
    for top in nodes:
        for node in ast.walk(top):
            if isinstance(node, ast.Name):
                (loads if isinstance(node.ctx, ast.Load) else bound).add(node.id)
            elif isinstance(node, ast.arg):
                bound.add(node.arg)
            elif isinstance(node, (*_FUNCTIONS, ast.ClassDef)) and node is not top:
                bound.add(node.name)
            elif isinstance(node, ast.alias):
                bound.add(node.asname or node.name.split(".")[0])
            elif isinstance(node, ast.ExceptHandler) and node.name:
                bound.add(node.name)
    return loads - bound - set(dir(builtins)) - _KNOWN


def _self_attributes(nodes: list[ast.AST]) -> set[str]:
    """Attribute names read from ``self`` (``self._make_layer(...)``, ``self.expansion``)."""
    return {n.attr for top in nodes for n in ast.walk(top)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"}


def _bindings(tree: ast.Module) -> dict[str, ast.stmt]:
    """Top-level name -> the (last) statement of the task file that binds it."""
    out: dict[str, ast.stmt] = {}
    for stmt in tree.body:
        if isinstance(stmt, (*_FUNCTIONS, ast.ClassDef)):
            out[stmt.name] = stmt
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for alias in stmt.names:
                out[alias.asname or alias.name.split(".")[0]] = stmt
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                for n in ast.walk(target):
                    if isinstance(n, ast.Name):
                        out[n.id] = stmt
    return out


class _Carrier:
    """Collects what ModelNew's constructor reaches in the task file, to a fixed point:
    a carried method can use another class, whose constructor calls a helper, ..."""

    def __init__(self, module: types.ModuleType, tree: ast.Module, model: ast.ClassDef):
        self.module = module
        self.model = model
        self.bindings = _bindings(tree)
        self.order = {id(stmt): k for k, stmt in enumerate(tree.body)}
        self.constants: dict[str, str] = {}  # name -> "import m as name" or "name = 3"
        self.statements: dict[int, ast.stmt] = {}  # carried top-level statements by id
        self.classes: list[ast.ClassDef] = []  # carried classes (pruned when the fixed point is reached)
        self.methods: set[str] = set()  # attribute names read from self anywhere in carried code
        self.seen: set[str] = set()

    def carry(self, nodes: list[ast.AST]) -> None:
        self.methods |= _self_attributes(nodes)
        for name in sorted(_free_names(nodes)):
            self.carry_name(name)

    def carry_name(self, name: str) -> None:
        if name in self.seen:
            return
        self.seen.add(name)
        if name == self.model.name:
            raise Reject(f"Model.__init__ refers to the class {name} itself")
        if not hasattr(self.module, name):
            raise Reject(f"Model.__init__ uses {name}, which the task file does not define")
        value = getattr(self.module, name)
        stmt = self.bindings.get(name)
        if isinstance(value, types.ModuleType):
            self.constants[name] = f"import {value.__name__} as {name}"
        elif _is_simple(value):
            self.constants[name] = f"{name} = {value!r}"
        elif stmt is None:
            raise Reject(f"Model.__init__ uses {name} ({type(value).__name__}), which no top-level statement "
                         "of the task file defines")
        elif id(stmt) not in self.statements:
            self.statements[id(stmt)] = stmt
            if isinstance(stmt, ast.ClassDef):
                self.classes.append(stmt)
                self.carry([*stmt.bases, *stmt.keywords, *stmt.decorator_list,
                            *(s for s in stmt.body if not isinstance(s, _FUNCTIONS))])
            elif not isinstance(stmt, (ast.Import, ast.ImportFrom)):
                self.carry([stmt])

    def kept_methods(self, classdef: ast.ClassDef) -> list[ast.stmt]:
        """A class's constructor and the methods carried code reads from self, never forward."""
        return [s for s in classdef.body if isinstance(s, _FUNCTIONS) and s.name != "forward"
                and (s.name == "__init__" or s.name in self.methods)]

    def close(self, methods: list[ast.FunctionDef]) -> None:
        """Carry until nothing new is reached: Model's methods, then each carried class's."""
        done: set[int] = set()
        while True:
            todo = [m for m in methods if id(m) not in done]
            todo += [m for c in self.classes for m in self.kept_methods(c) if id(m) not in done]
            if not todo:
                return
            for method in todo:
                done.add(id(method))
                self.carry([method])

    def definitions(self) -> list[str]:
        """The carried statements in the task file's order, classes without forward."""
        out = []
        for stmt in sorted(self.statements.values(), key=lambda s: self.order[id(s)]):
            if isinstance(stmt, ast.ClassDef):
                body = [s for s in stmt.body if not isinstance(s, _FUNCTIONS) and not _is_docstring(s)]
                body += self.kept_methods(stmt)
                stmt = ast.ClassDef(name=stmt.name, bases=stmt.bases, keywords=stmt.keywords,
                                    body=body or [ast.Pass()], decorator_list=stmt.decorator_list,
                                    type_params=getattr(stmt, "type_params", []))
            elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
                names = [a for a in stmt.names if (a.asname or a.name.split(".")[0]) in self.seen]
                stmt = type(stmt)(names=names, **({"module": stmt.module, "level": stmt.level}
                                                  if isinstance(stmt, ast.ImportFrom) else {}))
            out.append(ast.unparse(ast.fix_missing_locations(stmt)))
        return out


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _model_methods(classdef: ast.ClassDef) -> list[ast.FunctionDef]:
    """Model's methods other than forward that construction reaches through self."""
    methods = {n.name: n for n in classdef.body if isinstance(n, _FUNCTIONS)}
    reached, stack = [], ["__init__"]
    while stack:
        name = stack.pop()
        node = methods.get(name)
        if node is None or node in reached or name == "forward":
            continue
        reached.append(node)
        stack.extend(sorted(_self_attributes([node])))
    return sorted(reached, key=lambda n: classdef.body.index(n))


def read_model_source(module: types.ModuleType, cls: type) -> ModelSource:
    try:
        text = inspect.getsource(module)
    except (OSError, TypeError) as exc:
        raise Reject(f"cannot read the task's source: {exc}") from exc
    tree = parse_python(text)
    classdef = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls.__name__), None)
    if classdef is None:
        raise Reject(f"the task source has no class {cls.__name__}")
    methods = {n.name: n for n in classdef.body if isinstance(n, ast.FunctionDef)}
    forward = methods.get("forward")
    if forward is None:
        raise Reject("Model has no forward method")
    if forward.args.vararg or forward.args.kwarg:
        raise Reject("forward with *args/**kwargs is not supported")
    if "__init__" not in methods:
        classdef.body.insert(0, parse_python("def __init__(self):\n    super().__init__()").body[0])

    carrier = _Carrier(module, tree, classdef)
    own = _model_methods(classdef)
    for method in own:
        _DropSuperArgs().visit(method)
        if method.name == "__init__":
            method.decorator_list = []
        ast.fix_missing_locations(method)
    # class-level attributes (ResNet's ``expansion = 1``) that the constructor reads through self
    attributes = [s for s in classdef.body if not isinstance(s, _FUNCTIONS) and not _is_docstring(s)]
    carrier.carry(attributes)
    carrier.close(own)
    init_text = "\n\n".join(textwrap.indent(ast.unparse(m), "    ") for m in [*attributes, *own])
    preamble = "\n".join(line for _, line in sorted(carrier.constants.items()))
    carried = carrier.definitions()
    if carried:
        preamble = "\n\n\n".join(filter(None, [preamble, *carried]))

    params = ast.arguments(posonlyargs=[], args=forward.args.args[1:], vararg=None,
                           kwonlyargs=forward.args.kwonlyargs, kw_defaults=forward.args.kw_defaults,
                           kwarg=None, defaults=forward.args.defaults)
    forward_args = ast.unparse(params)
    names = [a.arg for a in forward.args.args[1:]] + [a.arg for a in forward.args.kwonlyargs]
    return ModelSource(init_text, preamble, forward_args, names)
