"""The library reads no environment (issue 32, part 3; STYLE.md habit 11).

Settings reach the library as values: the CLI (evokernel/cli) reads the
environment once and passes keys, endpoints, retries, prices, the memory's path
and the build cache down. This test scans the source of `evokernel`,
`memory_store` and `backends` for every use of `os.environ`, `os.environb`
and `os.getenv` and fails on any outside the allow-list below, each entry
with the reason it must stay. Most are writes: the environment of a child
process we start (a worker, a compiler), or a protocol a third-party tool or
a task file reads. An entry that no longer matches any code fails too, so the
list cannot outlive what it excuses.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("evokernel", "memory_store", "backends")
# The edge, where the environment is read on purpose; and the bundled task files, which are
# task files (user code the loader runs), not the library: they hear their size as every task does.
EDGES = ("evokernel/cli/", "evokernel/tasks/")

# (file, enclosing function) -> why it touches the environment.
ALLOWED: dict[tuple[str, str], str] = {
    # -- the environment of a child process we start (writing, not reading configuration) --
    ("backends/_executor.py", "Worker.__init__"):
        "the worker's environment starts from the caller's (or the one passed in) and is then "
        "narrowed by the sandbox's allow-list; CUDA_VISIBLE_DEVICES and TRITON_INTERPRET are set for it",
    ("backends/_executor.py", "Executor._get_worker"):
        "the environment a new worker starts from: this process's, unless the caller passed one",
    ("backends/_hardware.py", "_measure_in_child"):
        "the measuring child's environment: this process's with the project on PYTHONPATH",
    ("backends/triton_backend.py", "_start_compile_server"):
        "the compile server's environment: the worker's without TRITON_INTERPRET (it must compile for sm_90)",
    ("backends/_triton_compile.py", "main"):
        "the compile server drops TRITON_INTERPRET from its own environment before importing Triton",
    ("backends/ascendc/_build.py", "build"):
        "g++ runs with LC_ALL=C so that its messages (parsed for unknown APIs) are plain ASCII",
    ("evokernel/builtin/_selfcheck.py", "check_in_subprocess"):
        "the self-check's child runs its kernels on Triton's interpreter: TRITON_INTERPRET=1 in its environment",
    ("backends/_ray.py", "_EvaluatorActor.__init__"):
        "a Ray actor's executor starts its workers from the node's environment plus the driver's overrides",
    # -- the task-file protocol: a task file hears its size in EVOKERNEL_SIZE while it runs --
    ("backends/_task.py", "task_size"):
        "sets EVOKERNEL_SIZE while a task file executes and restores what was there before",
    # -- handoffs and safeguards, not settings --
    ("backends/_sandbox.py", "WorkerSandbox.from_env"):
        "the sandbox's limits ride in the worker's environment so that every process the worker "
        "starts (the Triton compile server) inherits them",
    ("backends/_sandbox.py", "mask_secrets"):
        "masking: values of key-like variables in this process are scrubbed from whatever is written",
    ("backends/_executor.py", "Executor.retime"):
        "masking the worker's reply with the values of key-like variables (as mask_secrets)",
    ("backends/_executor.py", "Executor._masked"):
        "masking a verdict with the values of key-like variables (as mask_secrets)",
    ("backends/_audit.py", "_Policy.__init__"):
        "the audit hook allows the compilers and tools this worker's own environment names (CC, CXX, "
        "*_PATH) and refuses a candidate's exec that changes dangerous variables",
    # -- variables other programs define, read where we must agree with them --
    ("evokernel/llm/_tokens.py", "tiktoken_cache_dir"):
        "tiktoken reads TIKTOKEN_CACHE_DIR itself; the bundled vocabulary is seeded where it will look",
    ("backends/cuda_backend.py", "toolchain"):
        "torch's extension build reads TORCH_CUDA_ARCH_LIST itself, so it is part of a build's identity",
    ("backends/ascendc/_build.py", "compiler"):
        "CXX names the C++ compiler, as for any build",
    ("backends/ascendc/_cann.py", "build_plan"):
        "ASCEND_HOME_PATH is where CANN is installed (CANN's own convention, which its setenv script sets)",
    ("backends/ascendc/_detect.py", "detect_mode"):
        "CANN's ASCEND_HOME_PATH/ASCEND_TOOLKIT_HOME and CXX find the toolchain; EVOKERNEL_ASCENDC_MODE "
        "still forces a mode here (moving it into the backend's options is the settings tree's work)",
}


def _environment_uses(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, enclosing function) of every os.environ / os.environb / os.getenv / bare getenv or environ
    imported from os."""
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "os":
            imported |= {a.asname or a.name for a in node.names if a.name in ("environ", "environb", "getenv")}
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, scope: list[str]) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            scope = [*scope, node.name]
        hit = (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os"
               and node.attr in ("environ", "environb", "getenv", "putenv", "unsetenv"))
        hit = hit or (isinstance(node, ast.Name) and node.id in imported)
        if hit:
            found.append((node.lineno, ".".join(scope) or "<module>"))
        for child in ast.iter_child_nodes(node):
            visit(child, scope)

    visit(tree, [])
    return found


def _uses() -> dict[tuple[str, str], list[int]]:
    uses: dict[tuple[str, str], list[int]] = {}
    for package in SCANNED:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith(EDGES):
                continue
            text = path.read_text()
            if "environ" not in text and "getenv" not in text:  # no way to name it, so nothing to parse
                continue
            for line, scope in _environment_uses(ast.parse(text, filename=rel)):
                uses.setdefault((rel, scope), []).append(line)
    return uses


def test_the_library_reads_no_environment_outside_the_allow_list():
    uses = _uses()
    unexplained = [f"{file}:{lines[0]} in {scope}" for (file, scope), lines in sorted(uses.items())
                   if (file, scope) not in ALLOWED]
    assert not unexplained, ("the library reads the environment here; resolve the setting at the edge "
                             "(evokernel/cli) and pass it down, or allow-list a write with its reason:\n  "
                             + "\n  ".join(unexplained))
    stale = [f"{file} {scope}" for file, scope in ALLOWED if (file, scope) not in uses]
    assert not stale, "allow-list entries that excuse nothing any more:\n  " + "\n  ".join(stale)


def test_the_scan_sees_every_way_of_reading():
    source = ("import os\nfrom os import getenv as ge\n"
              "def a():\n    return os.environ.get('X')\n"
              "class B:\n    def c(self):\n        return ge('Y')\n"
              "def d():\n    return os.getenv('Z')\n"
              "def e(environ):\n    return environ.get('W')\n")  # a mapping passed in is not the environment
    assert _environment_uses(ast.parse(source)) == [(4, "a"), (7, "B.c"), (9, "d")]
