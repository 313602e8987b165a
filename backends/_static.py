"""Static anti-hack rules: what a candidate's source may not contain.

These are the tricks seen in public harnesses' reward-hacking reports: a
try/except that falls back to PyTorch, computing with torch ops, reaching the
reference, threads and side streams that escape the timer, patched timers,
tensor subclasses that defer the work, and tampering with global torch state
that the reference also depends on. The runtime guard backs these up; a static
rule gives the LLM a precise message before anything runs.
"""

from __future__ import annotations

import ast
import dataclasses

# Modules a kernel file has no business importing.
FORBIDDEN_MODULES = {
    "threading": "threads run work outside the timed region",
    "_thread": "threads run work outside the timed region",
    "multiprocessing": "other processes run work outside the timed region",
    "concurrent": "thread or process pools run work outside the timed region",
    "asyncio": "asynchronous tasks run work outside the timed region",
    "subprocess": "candidates may not start processes",
    "ctypes": "raw pointers and foreign calls bypass the checks",
    "importlib": "dynamic imports can reach the reference",
    "inspect": "frame inspection can reach the reference",
    "gc": "the garbage collector can reach the reference's objects",
    "builtins": "patching builtins changes the harness",
    "socket": "candidates have no network",
    "signal": "signal handlers change the harness",
    "pickle": "unpickling runs arbitrary code",
    "time": "timer access is reserved to the harness",
    "timeit": "timer access is reserved to the harness",
    "numpy": "host-side numpy computation is not a kernel",
    "torch.overrides": "torch function overrides defer or replace the computation",
    "torch.utils._python_dispatch": "dispatch modes replace the computation",
    "torch._dynamo": "torch.compile is the baseline, not a kernel",
    "torch._inductor": "torch.compile is the baseline, not a kernel",
    # Routes around the sandbox (backends/_sandbox.py): the harness's own
    # switches, and process launches and native calls that raise no audit event.
    "backends": "the harness is not the candidate's to import",
    "evokernel": "the harness is not the candidate's to import",
    "_posixsubprocess": "candidates may not start processes",
    "torch.multiprocessing": "other processes run work outside the timed region",
    "_ctypes": "raw pointers and foreign calls bypass the checks",
    "cffi": "raw pointers and foreign calls bypass the checks",
}

HARNESS_API = "backends.ascendc"  # the one harness package a candidate may import from

FORBIDDEN_CALLS = {
    "eval": "dynamic code",
    "exec": "dynamic code",
    "compile": "dynamic code",
    "__import__": "dynamic imports can reach the reference",
    "globals": "reaching module globals can find the reference",
    "vars": "reaching module globals can find the reference",
    "locals": "frame inspection",
    "breakpoint": "debugger",
    "delattr": "patching objects",
}

# Attribute names whose use is a hack wherever they appear.
FORBIDDEN_ATTRIBUTES = {
    "Stream": "side streams escape the timed region",
    "stream": "side streams escape the timed region",
    "set_stream": "side streams escape the timed region",
    "ExternalStream": "side streams escape the timed region",
    "Event": "timers are reserved to the harness",
    "elapsed_time": "timers are reserved to the harness",
    "_make_subclass": "tensor subclasses defer the computation",
    "_make_wrapper_subclass": "tensor subclasses defer the computation",
    "__torch_function__": "tensor subclasses defer the computation",
    "__torch_dispatch__": "tensor subclasses defer the computation",
    "TorchDispatchMode": "dispatch modes replace the computation",
    "TorchFunctionMode": "function modes replace the computation",
    "modules": "sys.modules can reach the reference",
    "_getframe": "frame inspection can reach the reference",
    "f_back": "frame inspection can reach the reference",
    "f_globals": "frame inspection can reach the reference",
    "compile": "torch.compile is the baseline, not a kernel",
    "jit": None,  # triton.jit is the point; torch.jit is checked below
    "manual_seed": "reseeding changes the inputs the harness draws",
    "set_rng_state": "reseeding changes the inputs the harness draws",
    "__globals__": "reaching a function's globals can find the reference and the harness",
    "__closure__": "reaching a closure's cells can find the harness's state",
    "__subclasses__": "walking the class tree can reach anything",
    "fork": "candidates may not start processes",
    "system": "candidates may not start processes",
    "popen": "candidates may not start processes",
    "environ": None,
    "tolist": "Python-level computation on host copies is not a kernel",
    "numpy": "host-side numpy computation is not a kernel",
}

# torch.* functions a candidate may call outside __init__: allocation and
# metadata. Everything else in torch's namespace computes.
ALLOWED_TORCH_CALLS = {
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like",
    "full", "full_like", "arange", "tensor", "as_tensor", "device", "Size", "finfo", "iinfo",
    "is_tensor", "get_default_dtype", "no_grad", "inference_mode", "promote_types", "result_type",
    "cat", "stack", "broadcast_shapes", "dtype",
}
TORCH_NAMESPACES_ALLOWED = {"cuda", "utils", "nn", "backends", "library", "version", "Tensor"}


@dataclasses.dataclass(frozen=True)
class StaticFinding:
    rule: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message} [{self.rule}]"


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


class _Checker(ast.NodeVisitor):
    def __init__(self) -> None:
        self.findings: list[StaticFinding] = []
        self.module_aliases: dict[str, str] = {}  # local name -> module path
        self.function_stack: list[str] = []
        self.class_stack: list[str] = []

    def flag(self, rule: str, node: ast.AST, message: str) -> None:
        self.findings.append(StaticFinding(rule, getattr(node, "lineno", 0), message))

    # --- imports -----------------------------------------------------------
    def _check_module(self, name: str, node: ast.AST) -> None:
        for forbidden, why in FORBIDDEN_MODULES.items():
            if name == forbidden or name.startswith(forbidden + "."):
                self.flag("forbidden-import", node, f"imports {name}: {why}")
                return

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._check_module(alias.name, node)
            self.module_aliases[alias.asname or alias.name.split(".")[0]] = (
                alias.name if alias.asname else alias.name.split(".")[0]
            )
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level:
            self.flag("relative-import", node, "relative imports can reach the reference's package")
        # Ascend C candidates build with `from backends.ascendc import load_inline`:
        # public names of that one package, and only in this form.
        harness_api = module == HARNESS_API and all(not a.name.startswith("_") and a.name != "*" for a in node.names)
        if not harness_api:
            self._check_module(module, node)
        for alias in node.names:
            full = f"{module}.{alias.name}"
            if not harness_api:
                self._check_module(full, node)
            self.module_aliases[alias.asname or alias.name] = full
            if alias.name == "Model":
                self.flag("reference", node, "imports the reference Model")
        self.generic_visit(node)

    # --- structure ---------------------------------------------------------
    def visit_Try(self, node: ast.AST) -> None:
        self.flag(
            "try-except",
            node,
            "try/except is not allowed: a fallback path can hide a failing kernel; let errors surface",
        )
        self.generic_visit(node)

    visit_TryStar = visit_Try

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            dotted = _dotted(base) or ""
            if dotted.split(".")[-1] == "Model":
                self.flag("reference", node, f"class {node.name} inherits from the reference Model")
            if dotted.split(".")[-1] == "Tensor":
                self.flag("tensor-subclass", node, f"class {node.name} subclasses torch.Tensor: the work could be deferred")
        self.class_stack.append(node.name)
        self.generic_visit(node)
        self.class_stack.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.function_stack.append(node.name)
        self.generic_visit(node)
        self.function_stack.pop()

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Global(self, node: ast.Global) -> None:
        self.flag("global-state", node, "`global` statements keep state between calls (cached results)")

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "Model" and isinstance(node.ctx, ast.Load):
            self.flag("reference", node, "uses the reference Model")
        elif node.id in ("__builtins__", "__loader__", "__spec__"):
            self.flag("introspection", node, f"uses {node.id}")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        why = FORBIDDEN_ATTRIBUTES.get(node.attr)
        dotted = _dotted(node) or ""
        root = dotted.split(".")[0] if dotted else ""
        resolved = self.module_aliases.get(root, root)
        if node.attr == "jit" and resolved == "torch":
            why = "torch.jit is not a kernel"
        if node.attr == "compile" and resolved not in ("torch",):
            why = None  # re.compile and friends are harmless; torch.compile is not
        if node.attr == "modules" and resolved != "sys":
            why = None  # self.modules() on nn.Module is harmless
        if node.attr == "stream" and resolved not in ("torch",) and "cuda" not in dotted:
            why = None
        if node.attr == "Event" and "cuda" not in dotted:
            why = None
        if node.attr in ("fork", "system", "popen") and resolved != "os":
            why = None
        if node.attr in ("manual_seed", "set_rng_state") and resolved not in ("torch", "random", "numpy"):
            why = None
        if why:
            self.flag("forbidden-attribute", node, f"uses {dotted or node.attr}: {why}")
        # torch.set_* changes global state the reference depends on (tf32, dtype, threads)
        if resolved == "torch" and node.attr.startswith("set_") and node.attr != "set_grad_enabled":
            self.flag("global-state", node, f"uses {dotted}: changes torch state the reference depends on")
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
            dotted = _dotted(target) or ""
            root = dotted.split(".")[0]
            if root in self.module_aliases:
                self.flag("monkey-patch", target, f"assigns to {dotted}: patching a library changes the harness")

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name):
            if func.id in FORBIDDEN_CALLS:
                self.flag("forbidden-call", node, f"calls {func.id}(): {FORBIDDEN_CALLS[func.id]}")
            if func.id == "setattr" and node.args and not (
                isinstance(node.args[0], ast.Name) and node.args[0].id == "self"
            ):
                self.flag("monkey-patch", node, "setattr on anything but self patches shared objects")
            if func.id == "getattr" and len(node.args) >= 2 and not isinstance(node.args[1], ast.Constant):
                self.flag("introspection", node, "getattr with a computed name can reach anything")
        dotted = _dotted(func) or ""
        parts = dotted.split(".")
        if parts and parts[0]:
            resolved = self.module_aliases.get(parts[0], parts[0]).split(".") + parts[1:]
            in_init = bool(self.function_stack) and self.function_stack[-1] == "__init__"
            if not in_init:
                self._check_torch_compute(node, resolved)
        self.generic_visit(node)

    def _check_torch_compute(self, node: ast.Call, resolved: list[str]) -> None:
        if resolved[0] != "torch" or len(resolved) < 2:
            return
        if resolved[1] == "nn" and len(resolved) >= 3 and resolved[2] == "functional":
            self.flag("torch-compute", node, f"calls {'.'.join(resolved)}: compute must happen in the candidate's own kernels")
            return
        if resolved[1] == "ops":
            self.flag("torch-compute", node, f"calls {'.'.join(resolved)}: compute must happen in the candidate's own kernels")
            return
        if len(resolved) == 2 and resolved[1] not in ALLOWED_TORCH_CALLS and resolved[1] not in TORCH_NAMESPACES_ALLOWED:
            if resolved[1][:1].islower():
                self.flag("torch-compute", node, f"calls torch.{resolved[1]}: compute must happen in the candidate's own kernels")
        if len(resolved) >= 3 and resolved[1] in ("linalg", "fft", "special", "sparse", "_C", "_refs", "_prims", "_decomp"):
            self.flag("torch-compute", node, f"calls {'.'.join(resolved)}: compute must happen in the candidate's own kernels")


def static_findings(source: str) -> list[StaticFinding]:
    """Every rule the candidate breaks; empty when it looks honest.

    A syntax error is not a finding: the caller reports it as a compile error.
    """
    tree = ast.parse(source)
    checker = _Checker()
    checker.visit(tree)
    has_model_new = any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body)
    if not has_model_new:
        checker.flag("no-modelnew", tree, "the candidate must define class ModelNew at module level")
    # Report each rule once per line, in source order.
    seen: set[tuple[str, int, str]] = set()
    unique = []
    for f in sorted(checker.findings, key=lambda f: f.line):
        k = (f.rule, f.line, f.message)
        if k not in seen:
            seen.add(k)
            unique.append(f)
    return unique
