"""Static rules: what the code `ModelNew` runs may not contain.

Scope. The rules apply to what runs when the harness imports the candidate
and calls `ModelNew`: the module's top-level code (imports, constants,
decorators, class bodies), the `ModelNew` class, and every module-level
function, class or object its code reaches, followed transitively. A
candidate's own `get_inputs`, `get_init_inputs` and `get_input_groups` (LLMs
often repeat the task's) are never called, so they are not checked, and
neither is an `if __name__ == "__main__":` block or a helper nothing reaches.

Context. Code that runs at import or in `__init__` builds things (weights,
extensions, tables), so torch compute is allowed there; code reachable from
`forward` (and every other method) is where the strict rule set wants all
computation in the candidate's own kernels. The cheating rules (timers,
streams, reaching the reference, patching...) apply everywhere.

Each finding names a rule of `_rules.RULES`; that table says whether it is
cheating (`hack`) or outside the rule set (`disallowed`), and which rule sets
allow it. Caching results is not guessed from the syntax (a `global` holding
a compiled extension is fine): fresh inputs per call and output poisoning
catch it at run time.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
from typing import TYPE_CHECKING, Any

from ._gpu_path import dotted_name, implied_by_on, is_metadata, metadata_names, requires_off, split_loaded_names, terminates
from ._pyast import SyntaxIndex, indexed_module
from ._result import Verdict
from ._rules import DEFAULT_RULES, explain, verdict_for

if TYPE_CHECKING:
    from ._result import EvalResult

TASK_FUNCTIONS = frozenset({"get_inputs", "get_init_inputs", "get_input_groups"})
SETUP_METHODS = frozenset({"__init__", "__new__", "__init_subclass__", "__set_name__", "__post_init__"})
SETUP, FORWARD = "setup", "forward"
# Code only the forward's branches off the accelerator reach (backends/_gpu_path.py): checked as
# forward code, but its compute is not the GPU path's.
OFF_GPU = "off-gpu"
_CONTEXT_RANK = {SETUP: 0, OFF_GPU: 1, FORWARD: 2}  # a def reached in several contexts takes the highest

# Modules a kernel file has no business importing: (rule, why).
FORBIDDEN_MODULES = {
    "threading": ("thread", "threads run work outside the timed region"),
    "_thread": ("thread", "threads run work outside the timed region"),
    "multiprocessing": ("thread", "other processes run work outside the timed region"),
    "torch.multiprocessing": ("thread", "other processes run work outside the timed region"),
    "concurrent": ("thread", "thread or process pools run work outside the timed region"),
    "asyncio": ("thread", "asynchronous tasks run work outside the timed region"),
    "subprocess": ("sandbox", "candidates may not start processes"),
    "_posixsubprocess": ("sandbox", "candidates may not start processes"),
    "socket": ("sandbox", "candidates have no network"),
    "signal": ("sandbox", "signal handlers change the harness"),
    "pickle": ("sandbox", "unpickling runs arbitrary code"),
    "ctypes": ("harness", "raw pointers and foreign calls bypass the checks"),
    "_ctypes": ("harness", "raw pointers and foreign calls bypass the checks"),
    "cffi": ("harness", "raw pointers and foreign calls bypass the checks"),
    "importlib": ("dynamic-code", "dynamic imports can reach the reference"),
    "inspect": ("reference", "frame inspection can reach the reference"),
    "gc": ("reference", "the garbage collector can reach the reference's objects"),
    "builtins": ("monkey-patch", "patching builtins changes the harness"),
    "time": ("timer", "timer access is reserved to the harness"),
    "timeit": ("timer", "timer access is reserved to the harness"),
    "torch.overrides": ("lazy-tensor", "torch function overrides defer or replace the computation"),
    "torch.utils._python_dispatch": ("lazy-tensor", "dispatch modes replace the computation"),
    "torch._dynamo": ("torch-compile", "torch.compile is the baseline, not a kernel"),
    "torch._inductor": ("torch-compile", "torch.compile is the baseline, not a kernel"),
    # Routes around the sandbox (backends/_sandbox.py): the harness's own switches.
    "backends": ("harness", "the harness is not the candidate's to import"),
    "evokernel": ("harness", "the harness is not the candidate's to import"),
}

HARNESS_API = "backends.ascendc"  # the one harness package a candidate may import from

FORBIDDEN_CALLS = {
    "eval": ("dynamic-code", "dynamic code hides what runs"),
    "exec": ("dynamic-code", "dynamic code hides what runs"),
    "compile": ("dynamic-code", "dynamic code hides what runs"),
    "__import__": ("dynamic-code", "dynamic imports can reach the reference"),
    "globals": ("reference", "reaching module globals can find the reference"),
    "vars": ("reference", "reaching module globals can find the reference"),
    "locals": ("reference", "frame inspection"),
    "breakpoint": ("sandbox", "debugger"),
    "delattr": ("monkey-patch", "patching objects"),
}

# Attribute names whose use breaks a rule wherever they appear: (rule, why).
# Some only count on a particular module (see _attribute_rule).
FORBIDDEN_ATTRIBUTES = {
    "Stream": ("stream", "side streams escape the timed region"),
    "stream": ("stream", "side streams escape the timed region"),
    "set_stream": ("stream", "side streams escape the timed region"),
    "ExternalStream": ("stream", "side streams escape the timed region"),
    "StreamContext": ("stream", "side streams escape the timed region"),
    "Event": ("timer", "timers are reserved to the harness"),
    "elapsed_time": ("timer", "timers are reserved to the harness"),
    "_make_subclass": ("lazy-tensor", "tensor subclasses defer the computation"),
    "_make_wrapper_subclass": ("lazy-tensor", "tensor subclasses defer the computation"),
    "__torch_function__": ("lazy-tensor", "tensor subclasses defer the computation"),
    "__torch_dispatch__": ("lazy-tensor", "tensor subclasses defer the computation"),
    "TorchDispatchMode": ("lazy-tensor", "dispatch modes replace the computation"),
    "TorchFunctionMode": ("lazy-tensor", "function modes replace the computation"),
    "modules": ("reference", "sys.modules can reach the reference"),
    "_getframe": ("reference", "frame inspection can reach the reference"),
    "f_back": ("reference", "frame inspection can reach the reference"),
    "f_globals": ("reference", "frame inspection can reach the reference"),
    "f_locals": ("reference", "frame inspection can reach the reference"),
    "__globals__": ("reference", "reaching a function's globals can find the reference and the harness"),
    "__closure__": ("reference", "reaching a closure's cells can find the harness's state"),
    "__subclasses__": ("reference", "walking the class tree can reach anything"),
    "__dict__": ("reference", "a module's namespace can reach anything"),
    "compile": ("torch-compile", "torch.compile is the baseline, not a kernel"),
    "jit": ("torch-compile", "torch.jit is not the candidate's kernel"),
    "manual_seed": ("reseed", "reseeding changes the inputs the harness draws"),
    "manual_seed_all": ("reseed", "reseeding changes the inputs the harness draws"),
    "seed": ("reseed", "reseeding changes the inputs the harness draws"),
    "set_rng_state": ("reseed", "reseeding changes the inputs the harness draws"),
    "fork": ("sandbox", "candidates may not start processes"),
    "system": ("sandbox", "candidates may not start processes"),
    "popen": ("sandbox", "candidates may not start processes"),
    "CUDAGraph": ("cuda-graph", "CUDA graphs replay captured launches instead of running them"),
    "graph": ("cuda-graph", "CUDA graphs replay captured launches instead of running them"),
    "make_graphed_callables": ("cuda-graph", "CUDA graphs replay captured launches instead of running them"),
    "autocast": ("reduced-precision", "autocast lowers the precision of the computation"),
    "amp": ("reduced-precision", "automatic mixed precision lowers the precision of the computation"),
    "tolist": ("host-compute", "Python-level computation on host copies is not a kernel"),
    "numpy": ("host-compute", "host-side numpy computation is not a kernel"),
}

# torch.* functions that neither compute nor reduce: allocation, views,
# copies, grad mode and metadata queries. Everything else in torch's
# namespace computes.
ALLOWED_TORCH_CALLS = frozenset("""
    empty empty_like empty_strided empty_permuted zeros zeros_like ones ones_like full full_like arange tensor
    as_tensor as_strided from_numpy device Size finfo iinfo dtype is_tensor is_storage is_floating_point is_complex
    numel typename get_default_dtype get_default_device is_grad_enabled is_inference_mode_enabled
    is_autocast_enabled no_grad enable_grad set_grad_enabled inference_mode promote_types result_type can_cast
    broadcast_shapes broadcast_tensors broadcast_to cat concat concatenate stack hstack vstack clone
    reshape flatten unflatten squeeze unsqueeze transpose swapaxes swapdims permute movedim t narrow select
    split tensor_split chunk unbind view_as_real view_as_complex
""".split())
TORCH_NAMESPACES_ALLOWED = frozenset({"cuda", "utils", "nn", "backends", "library", "version", "Tensor", "types", "compiler"})
TORCH_COMPUTE_NAMESPACES = frozenset({"linalg", "fft", "special", "sparse", "_C", "_refs", "_prims", "_decomp", "ops", "nested"})
TORCH_COMPILER_ALLOWED = frozenset({"is_compiling", "is_dynamo_compiling", "is_exporting"})
# torch.nn.functional calls that only copy data (the runtime guard allows their aten ops too).
FUNCTIONAL_ALLOWED = frozenset({"pad"})


@dataclasses.dataclass(frozen=True)
class StaticFinding:
    rule: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message} [{self.rule}]"

    def verdict(self, rules: str = DEFAULT_RULES) -> Verdict | None:
        """HACK, DISALLOWED, or None where `rules` allows it."""
        return verdict_for(self.rule, rules)


def _is_main_guard(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.If) or not isinstance(stmt.test, ast.Compare):
        return False
    names = [stmt.test.left, *stmt.test.comparators]
    return any(isinstance(n, ast.Name) and n.id == "__name__" for n in names) and any(
        isinstance(n, ast.Constant) and n.value == "__main__" for n in names
    )


def _loaded_names(nodes: list[ast.AST], index: SyntaxIndex) -> set[str]:
    return {n.id for n in index.subtrees(nodes) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


# ---------------------------------------------------------------- scope


@dataclasses.dataclass
class Scope:
    """What of a candidate module runs: import-time code and reached definitions."""

    index: SyntaxIndex  # of the module
    import_time: list[ast.AST]  # statements and expressions run at import
    defs: dict[str, ast.AST]  # module-level functions and classes by name
    reached: dict[str, str]  # name of a reached def -> SETUP or FORWARD
    has_model_new: bool
    construction: dict[str, set[str]]  # reached class name -> its construction_methods

    @property
    def tree(self) -> ast.Module:
        return self.index.tree

    def local_names(self) -> set[str]:
        return set(self.defs)

    def nodes(self) -> list[tuple[ast.AST, str]]:
        """(node, context) pairs to check: import-time code, then reached bodies."""
        out: list[tuple[ast.AST, str]] = [(n, SETUP) for n in self.import_time]
        for name, ctx in self.reached.items():
            node = self.defs.get(name)
            if isinstance(node, ast.ClassDef):
                setup = self.construction[name]
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        out.append((item, SETUP if item.name in setup else _called(ctx)))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append((node, ctx))  # checked as its body (the header ran at import: import_time)
        return out


def name_mentions(index: SyntaxIndex) -> dict[str, int]:
    """How often each attribute name and string constant occurs in the indexed tree (what
    `construction_methods` compares a helper's calls from the setup methods against)."""
    mentions: dict[str, int] = {}
    for n in index.nodes:
        name = n.attr if isinstance(n, ast.Attribute) else n.value if isinstance(n, ast.Constant) else None
        if isinstance(name, str):
            mentions[name] = mentions.get(name, 0) + 1
    return mentions


def construction_methods(node: ast.ClassDef, mentions: dict[str, int], index: SyntaxIndex) -> set[str]:
    """The methods that run only while an object is built: the setup methods, and a helper
    nothing but those calls, as `self._make_layer(...)` (the one mention of its name in the
    file). Builders carried from a reference (ResNet's `_make_layer`) run as `__init__` does.
    `mentions`: its module's `name_mentions`, counted once by the caller (a generated candidate
    has dozens of classes and thousands of lines: walking the whole tree again for each class
    was most of the static check's time); `index`: the tree's."""
    methods = {m.name: m for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
    setup = set(SETUP_METHODS) & set(methods)
    grew = True
    while grew:
        calls: dict[str, int] = {}
        for name in setup:
            for n in index.subtree(methods[name]):
                f = n.func if isinstance(n, ast.Call) else None
                if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self":
                    calls[f.attr] = calls.get(f.attr, 0) + 1
        found = {m for m in methods if m not in setup and calls.get(m, 0) == mentions.get(m, 0) > 0}
        setup |= found
        grew = bool(found)
    return setup


def _def_header(node: ast.AST) -> list[ast.AST]:
    """The parts of a def or class statement that run when it is defined."""
    if isinstance(node, ast.ClassDef):
        body = [s for s in node.body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
        methods = [s for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
        return [*node.decorator_list, *node.bases, *node.keywords, *body, *(h for m in methods for h in _def_header(m))]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = node.args
        return [*node.decorator_list, *a.defaults, *(d for d in a.kw_defaults if d is not None)]
    return []


def _called(class_context: str) -> str:
    """The context of a class's methods other than construction: the forward's, unless only
    code off the accelerator reaches the class."""
    return OFF_GPU if class_context == OFF_GPU else FORWARD


def scope(tree: ast.Module, index: SyntaxIndex | None = None) -> Scope:
    """What of `tree` runs; `index`: the tree's, if the caller has one."""
    if index is None:
        index = SyntaxIndex(tree)
    import_time: list[ast.AST] = []
    defs: dict[str, ast.AST] = {}
    aliases: dict[str, list[ast.AST]] = {}  # module-level name -> what a use of it may run
    for stmt in tree.body:
        if _is_main_guard(stmt):
            continue
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defs[stmt.name] = stmt
            import_time.extend(_def_header(stmt))
            continue
        import_time.append(stmt)
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            value = stmt.value
            # `ops = load_inline(...)` ran at import: using `ops` later does not
            # call load_inline again, only what its arguments name (partial(f)).
            runs = [*value.args, *value.keywords] if isinstance(value, ast.Call) else [value]
            for n in index.subtrees(targets):
                if isinstance(n, ast.Name):
                    aliases.setdefault(n.id, []).extend(runs)

    reached: dict[str, str] = {}
    mentions = name_mentions(index)
    construction: dict[str, set[str]] = {}  # a class reached in several contexts is analysed once
    aliases_seen: set[tuple[str, str]] = set()
    work: list[tuple[str, str]] = []

    def reach(names: set[str], ctx: str) -> None:
        work.extend((n, ctx) for n in names)

    def reach_body(body: list[ast.stmt], ctx: str) -> None:
        if ctx != FORWARD:
            reach(_loaded_names(body, index), ctx)
            return
        on_gpu, off_gpu_only = split_loaded_names(body, index)  # a helper only a CPU fallback calls is off the GPU path
        reach(on_gpu, FORWARD)
        reach(off_gpu_only, OFF_GPU)

    has_model_new = isinstance(defs.get("ModelNew"), ast.ClassDef)
    if has_model_new:
        reach({"ModelNew"}, FORWARD)
    reach(_loaded_names(import_time, index), SETUP)
    while work:
        name, ctx = work.pop()
        node = defs.get(name)
        if node is None:
            if name in aliases and (name, ctx) not in aliases_seen:
                aliases_seen.add((name, ctx))
                reach(_loaded_names(aliases[name], index), ctx)
            continue
        previous = reached.get(name)
        ctx = max(ctx, previous or SETUP, key=_CONTEXT_RANK.__getitem__)
        if previous == ctx:
            continue
        reached[name] = ctx
        if isinstance(node, ast.ClassDef):
            # A class's methods other than construction run when it is called.
            if name not in construction:
                construction[name] = construction_methods(node, mentions, index)
            setup = construction[name]
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    reach_body(item.body, SETUP if item.name in setup else _called(ctx))
        else:
            reach_body(node.body, ctx)
    return Scope(index, import_time, defs, reached, has_model_new, construction)


def scoped_strings(source: str) -> str:
    """Every string constant in the code ModelNew runs: the C++/CUDA it builds."""
    try:
        s = _checked_source(source).scope  # the scope the static rules built for the same text
    except SyntaxError:
        return ""
    parts = []
    for node, _ in s.nodes():  # ast.walk's order, not the index's: the strings are joined in the order they always were
        parts.extend(n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str))
    return "\n".join(parts)


# ---------------------------------------------------------------- the checker


def _module_aliases(index: SyntaxIndex) -> dict[str, str]:
    """local name -> module path, from every import in the file (the last `ast.walk` meets wins)."""
    aliases: dict[str, str] = {}
    for node in index.breadth_first((ast.Import, ast.ImportFrom)):
        if isinstance(node, ast.Import):
            for a in node.names:
                aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    return aliases


def _attribute_rule(attr: str, dotted: str, resolved: str, context: str) -> tuple[str, str] | None:
    """The rule using `attr` (on `dotted`, whose root resolves to `resolved`) breaks, if any."""
    hit = FORBIDDEN_ATTRIBUTES.get(attr)
    if hit is None:
        return None
    on_torch = resolved == "torch" or resolved.startswith("torch.")
    cuda = "cuda" in dotted or "cuda" in resolved
    if attr == "jit" and resolved != "torch":
        return None  # triton.jit is the point; only torch.jit is not a kernel
    if attr == "compile" and resolved != "torch":
        return None  # re.compile and friends are harmless; torch.compile is not
    if attr == "modules" and resolved != "sys":
        return None  # self.modules() on nn.Module is harmless
    if attr in ("stream", "Event", "StreamContext", "graph", "CUDAGraph") and not (on_torch and cuda):
        return None
    if attr in ("Stream", "ExternalStream", "set_stream") and not on_torch:
        return None
    if attr in ("fork", "system", "popen") and resolved != "os":
        return None
    if attr in ("manual_seed", "manual_seed_all", "seed", "set_rng_state") and not (
        on_torch or resolved.split(".")[0] in ("random", "numpy")
    ):
        return None
    if attr in ("autocast", "amp") and not on_torch:
        return None
    if attr == "make_graphed_callables" and not on_torch:
        return None
    if attr == "__dict__" and dotted.split(".")[0] == "self":
        return None
    if hit[0] == "host-compute" and context != FORWARD:
        return None
    return hit


# Rules about computing outside the candidate's kernels: code only reachable off the GPU is exempt.
COMPUTE_RULES = frozenset({"torch-compute", "host-compute", "library-call"})


class _Checker(ast.NodeVisitor):
    def __init__(self, scope: Scope, aliases: dict[str, str]) -> None:
        self.findings: list[StaticFinding] = []
        # Compute only reachable when the inputs are not on the GPU (backends/_gpu_path.py): not the
        # GPU path's, so not a finding; kept to tell a run that reached it off the GPU.
        self.off_accelerator: list[StaticFinding] = []
        self.module_aliases = aliases
        self.scope = scope  # what of the module runs: kept for `scoped_strings`
        self.local_names = scope.local_names()
        self.context = SETUP
        self.off_depth = 0  # > 0 inside code only reachable off the accelerator
        self.metadata: set[str] = set()  # the current function's names that only hold metadata

    def run(self, node: ast.AST, context: str) -> None:
        off = context == OFF_GPU
        self.context = FORWARD if off else context
        self.off_depth += off
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._function_body(node)
        else:
            self.visit(node)
        self.off_depth -= off

    def flag(self, rule: str, node: ast.AST, message: str) -> None:
        finding = StaticFinding(rule, getattr(node, "lineno", 0), message)
        (self.off_accelerator if self.off_depth and rule in COMPUTE_RULES else self.findings).append(finding)

    # --- blocks and branches: what only runs off the accelerator ------------
    def generic_visit(self, node: ast.AST) -> None:
        for _, value in ast.iter_fields(node):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                self._block(value)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        self.visit(item)
            elif isinstance(value, ast.AST):
                self.visit(value)

    def _block(self, stmts: list[ast.stmt]) -> None:
        for i, stmt in enumerate(stmts):
            self.visit(stmt)
            # `if x.is_cuda: return launch(x)` leaves the rest of the block to inputs off the GPU
            if isinstance(stmt, ast.If) and not stmt.orelse and terminates(stmt.body) and implied_by_on(stmt.test):
                self.off_depth += 1
                self._block(stmts[i + 1:])
                self.off_depth -= 1
                return

    def _branch(self, off: bool, nodes: list[ast.AST] | ast.AST) -> None:
        self.off_depth += off
        if isinstance(nodes, list):
            self._block(nodes)
        else:
            self.visit(nodes)
        self.off_depth -= off

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        self._branch(requires_off(node.test), node.body)
        self._branch(implied_by_on(node.test), node.orelse)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self.visit(node.test)
        self._branch(requires_off(node.test), node.body)
        self._branch(implied_by_on(node.test), node.orelse)

    def _function_body(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        outer = self.metadata
        self.metadata = metadata_names(node, self.scope.index)
        self._block(node.body)
        self.metadata = outer

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for part in _def_header(node):
            self.visit(part)
        self._function_body(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def _resolve(self, dotted: str) -> list[str]:
        parts = dotted.split(".")
        return self.module_aliases.get(parts[0], parts[0]).split(".") + parts[1:]

    # --- imports -----------------------------------------------------------
    def _check_module(self, name: str, node: ast.AST) -> None:
        for forbidden, (rule, why) in FORBIDDEN_MODULES.items():
            if name == forbidden or name.startswith(forbidden + "."):
                self.flag(rule, node, f"imports {name}: {why}")
                return

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._check_module(alias.name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level:
            self.flag("reference", node, "relative imports can reach the reference's package")
        # Ascend C candidates build with `from backends.ascendc import load_inline`:
        # public names of that one package, and only in this form.
        harness_api = module == HARNESS_API and all(not a.name.startswith("_") and a.name != "*" for a in node.names)
        if not harness_api:
            self._check_module(module, node)
        for alias in node.names:
            full = f"{module}.{alias.name}"
            if not harness_api:
                self._check_module(full, node)
            if alias.name == "Model":
                self.flag("reference", node, "imports the reference Model")
            # `from torch.cuda import Stream` is torch.cuda.Stream (other modules' names: the sandbox's business)
            hit = _attribute_rule(alias.name, full, module, self.context) if module.split(".")[0] in ("torch", "sys") else None
            if hit:
                self.flag(hit[0], node, f"imports {full}: {hit[1]}")

    # --- structure ---------------------------------------------------------
    def visit_Try(self, node: ast.AST) -> None:
        self.flag("try-except", node, "try/except is not allowed: a fallback path can hide a failing kernel; let errors surface")
        self.generic_visit(node)

    visit_TryStar = visit_Try

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.check_bases(node)
        self.generic_visit(node)

    def check_bases(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            dotted = dotted_name(base)
            if dotted.split(".")[-1] == "Model" and "Model" not in self.local_names:
                self.flag("reference", node, f"class {node.name} inherits from the reference Model")
            if dotted.split(".")[-1] == "Tensor":
                self.flag("lazy-tensor", node, f"class {node.name} subclasses torch.Tensor: the work could be deferred")

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "Model" and isinstance(node.ctx, ast.Load) and "Model" not in self.local_names:
            self.flag("reference", node, "uses the reference Model")
        elif node.id in ("__builtins__", "__loader__", "__spec__"):
            self.flag("reference", node, f"uses {node.id}")

    def _attribute(self, node: ast.AST, attr: str, dotted: str) -> None:
        root = dotted.split(".")[0] if dotted else ""
        resolved = self.module_aliases.get(root, root)
        hit = _attribute_rule(attr, dotted, resolved, self.context)
        if hit:
            self.flag(hit[0], node, f"uses {dotted or attr}: {hit[1]}")
        # torch.set_* changes global state the reference depends on (tf32, dtype, threads)
        if resolved == "torch" and dotted.count(".") == 1 and attr.startswith("set_") and attr not in ("set_grad_enabled",):
            self.flag("global-state", node, f"uses {dotted}: changes torch state the reference depends on")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self._attribute(node, node.attr, dotted_name(node))
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._check_target(target)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check_target(node.target)
        self.generic_visit(node)

    def _check_target(self, target: ast.AST) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self._check_target(t)
            return
        if isinstance(target, ast.Attribute):
            dotted = dotted_name(target)
            root = dotted.split(".")[0]
            if root in self.module_aliases:
                rule = "reduced-precision" if "allow_tf32" in dotted or "allow_fp16" in dotted or "allow_bf16" in dotted else "monkey-patch"
                self.flag(rule, target, f"assigns to {dotted}: patching a library changes the harness")

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name):
            if func.id in FORBIDDEN_CALLS:
                rule, why = FORBIDDEN_CALLS[func.id]
                self.flag(rule, node, f"calls {func.id}(): {why}")
            if func.id == "setattr" and node.args and not (isinstance(node.args[0], ast.Name) and node.args[0].id == "self"):
                self.flag("monkey-patch", node, "setattr on anything but self patches shared objects")
            if func.id == "getattr" and len(node.args) >= 2:
                name = node.args[1]
                if isinstance(name, ast.Constant) and isinstance(name.value, str):
                    # getattr(torch.cuda, "Stream") is torch.cuda.Stream
                    base = dotted_name(node.args[0])
                    self._attribute(node, name.value, f"{base}.{name.value}" if base else name.value)
                else:
                    self.flag("dynamic-code", node, "getattr with a computed name can reach anything")
        dotted = dotted_name(func)
        # torch on shapes and sizes (torch.prod(torch.tensor(x.shape))) computes no tensor data
        if dotted and self.context == FORWARD and not is_metadata(node, self.metadata):
            self._check_compute(node, self._resolve(dotted))
        self.generic_visit(node)

    def _check_compute(self, node: ast.Call, resolved: list[str]) -> None:
        name = ".".join(resolved)
        if resolved[0] == "numpy":
            self.flag("host-compute", node, f"calls {name}: host-side numpy computation is not a kernel")
            return
        if resolved[0] != "torch" or len(resolved) < 2:
            return
        message = f"calls {name}: compute must happen in the candidate's own kernels"
        if resolved[1] == "nn" and len(resolved) >= 3 and resolved[2] == "functional":
            if resolved[-1] not in FUNCTIONAL_ALLOWED:
                self.flag("torch-compute", node, message)
        elif resolved[1] in TORCH_COMPUTE_NAMESPACES and len(resolved) >= 3:
            self.flag("torch-compute", node, message)
        elif resolved[1] == "compiler" and len(resolved) >= 3 and resolved[2] not in TORCH_COMPILER_ALLOWED:
            self.flag("torch-compile", node, f"calls {name}: torch.compile is the baseline, not a kernel")
        elif len(resolved) == 2 and resolved[1] not in ALLOWED_TORCH_CALLS and resolved[1] not in TORCH_NAMESPACES_ALLOWED:
            if resolved[1][:1].islower() and not resolved[1].startswith(("is_", "get_")):
                self.flag("torch-compute", node, message)


def _checked(index: SyntaxIndex) -> _Checker:
    s = scope(index.tree, index)
    checker = _Checker(s, _module_aliases(index))
    for node, context in s.nodes():
        checker.run(node, context)
    for name in s.reached:
        node = s.defs[name]
        if isinstance(node, ast.ClassDef):
            checker.check_bases(node)
    if not s.has_model_new:
        checker.flag("no-modelnew", index.tree, "the candidate must define class ModelNew at module level")
    return checker


@functools.lru_cache(maxsize=4)
def _checked_source(source: str) -> _Checker:
    """`_checked` of a source text, kept for the next call on the same text: an evaluation asks
    for its findings (`static_rejection`) and then for its lines off the accelerator
    (`off_accelerator_lines`), and checking a generated candidate of a few thousand lines takes
    a few tenths of a second. Callers only read the checker. A SyntaxError is raised again on
    every call (lru_cache keeps no exceptions)."""
    return _checked(indexed_module(source))


def off_accelerator_lines(source: str) -> list[int]:
    """Lines of compute that ModelNew's code only reaches when its inputs are not on the GPU
    (backends/_gpu_path.py): set aside by the static rules; a run that reaches one off the GPU
    never ran the GPU path. [] for a source that does not parse."""
    try:
        checker = _checked_source(source)
    except SyntaxError:
        return []
    return sorted({f.line for f in checker.off_accelerator if f.line})


def static_findings(source: str, rules: str = DEFAULT_RULES) -> list[StaticFinding]:
    """Every rule the code ModelNew runs breaks under `rules`; empty when it looks honest.

    A syntax error is not a finding: the caller reports it as a compile error.
    A missing ModelNew is the finding `no-modelnew`.
    """
    checker = _checked_source(source)
    # Report each rule once per line, in source order, keeping only what `rules` forbids.
    seen: set[tuple[str, int, str]] = set()
    unique = []
    for f in sorted(checker.findings, key=lambda f: f.line):
        k = (f.rule, f.line, f.message)
        if k in seen or (f.rule != "no-modelnew" and verdict_for(f.rule, rules) is None):
            continue
        seen.add(k)
        unique.append(f)
    return unique




def _as_finding(problem: Any) -> StaticFinding:
    """Backends report typed findings; a plain string (an older or third-party backend) is a backend rule."""
    return problem if isinstance(problem, StaticFinding) else StaticFinding("backend", 0, str(problem))


def static_rejection(source: str, backend: Any, rules: str = DEFAULT_RULES) -> "EvalResult | None":
    """The verdict the static rules give `source` under `rules`, or None when they find nothing.

    A syntax error or a missing ModelNew is a compile error; any cheating
    finding makes the verdict `hack`; otherwise breaking the rule set is
    `disallowed`. The message names the rule and, where another rule set
    allows it, says so.
    """
    from ._result import EvalResult

    try:
        findings = static_findings(source, rules)
    except SyntaxError as exc:
        msg = f"syntax error in candidate at line {exc.lineno}: {exc.msg}"
        return EvalResult(Verdict.COMPILE_ERROR, msg, feedback=msg, rules=rules)
    if any(f.rule == "no-modelnew" for f in findings):
        msg = "the candidate must define class ModelNew at module level"
        return EvalResult(Verdict.COMPILE_ERROR, msg, feedback=msg, rules=rules)
    findings += [f for f in map(_as_finding, backend.static_problems(source)) if verdict_for(f.rule, rules) is not None]
    if not findings:
        return None
    hacks = [f for f in findings if f.verdict(rules) is Verdict.HACK]
    status = Verdict.HACK if hacks else Verdict.DISALLOWED
    first = (hacks or findings)[0]
    where = f"line {first.line}: " if first.line else ""
    message = f"static check: {where}{first.message} ({explain(first.rule, rules)})"
    lines = [f"{f} - {explain(f.rule, rules)}" for f in findings]
    kind = "cheating" if hacks else "outside the rule set"
    feedback = f"The static rules found code that is {kind}:\n- " + "\n- ".join(lines)
    return EvalResult(status, message, feedback=feedback, rules=rules)


__all__ = ["StaticFinding", "Scope", "TASK_FUNCTIONS", "off_accelerator_lines", "scope", "scoped_strings", "static_findings",
           "static_rejection"]
