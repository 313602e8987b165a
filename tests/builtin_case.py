"""Small task files for the builtin generator's family tests, and their verdicts.

A case is a model (``__init__`` lines, forward parameters and body) with small
inputs, and optionally full-size inputs: the candidate is generated with the
configuration the full-size task would get (traced on meta tensors, so full
sizes cost nothing) and run by the real executor on the small inputs. On the
CPU that is Triton's interpreter for the values and the sm_90 compile of every
launched kernel, so the configurations the GPU run uses compile.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

HEAD = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"


@dataclass(frozen=True)
class Case:
    name: str
    forward: str  # "x, y: return ..." style: parameters, then the body after a colon
    inputs: str  # Python expression of get_inputs()' list, small sizes
    init: str = ""  # lines of __init__ after super().__init__()
    full: str | None = None  # the same list at full size (configuration source)
    tolerance: tuple[float, float] | None = None
    slow: bool = False  # beyond the family's representative cases: marked slow


def params(cases: list[Case]) -> list:
    """pytest parameters, one per case, slow ones marked."""
    import pytest

    return [pytest.param(c.name, marks=pytest.mark.slow) if c.slow else c.name for c in cases]


class Lazy:
    """Verdicts evaluated on first use, so deselected (slow) cases cost nothing."""

    def __init__(self, executor, cases: list[Case], directory: Path, rules: str = "strict"):
        self.executor, self.directory, self.rules = executor, directory, rules
        self.cases = {c.name: c for c in cases}
        self.done: dict[str, object] = {}

    def __getitem__(self, name: str):
        if name not in self.done:
            self.done.update(run_cases(self.executor, [self.cases[name]], self.directory, self.rules))
        return self.done[name]


def write(case: Case, directory: Path, inputs: str | None = None, suffix: str = "") -> Path:
    params, body = case.forward.split(":", 1)
    init = textwrap.indent(textwrap.dedent(case.init).strip() + "\n", " " * 8) if case.init.strip() else ""
    text = (HEAD + "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n" + init
            + f"\n    def forward(self, {params.strip()}):\n"
            + textwrap.indent(textwrap.dedent(body).strip() + "\n", " " * 8)
            + f"\n\ndef get_inputs():\n    return {inputs or case.inputs}\n\n\ndef get_init_inputs():\n    return []\n")
    if case.tolerance:
        text += f"\n\nTOLERANCE = {case.tolerance!r}\n"
    path = directory / f"{case.name}{suffix}.py"
    path.write_text(text)
    return path


def run_cases(executor, cases: list[Case], directory: Path, rules: str = "strict") -> dict[str, object]:
    """{case name: EvalResult or Unsupported}, the candidate generated with the
    full-size configuration when the case has full-size inputs."""
    from backends import EvalOptions
    from evokernel.builtin import analyze, default_config, generate

    # one seeded trial (and the executor's re-run on poisoned outputs) keeps the interpreter's time down
    options = EvalOptions.from_dict({"rules": rules, "timing": False, "baselines": False, "trials": 1})
    out = {}
    for case in cases:
        path = write(case, directory)
        plan = analyze(path, rules)
        if not plan:
            out[case.name] = plan
            continue
        config = None
        if case.full:
            full = analyze(write(case, directory, case.full, "_full"), rules)
            if full and full.main_stage.family == plan.main_stage.family:
                config = default_config(full)
        out[case.name] = executor.evaluate(path, generate(plan, config), backend="triton", options=options)
    return out


def write_task(directory: Path, name: str, text: str) -> Path:
    """A whole task file (model, get_inputs, get_init_inputs) written as `name`.py."""
    path = directory / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    return path


def evaluate_task(executor, path: Path, rules: str):
    """The builtin's default draft of `path` through the executor: correctness only, one trial."""
    from backends import EvalOptions
    from evokernel.builtin import Unsupported, analyze, generate

    plan = analyze(path, rules)
    assert not isinstance(plan, Unsupported), plan.reason
    options = EvalOptions.from_dict({"rules": rules, "timing": False, "baselines": False, "trials": 1})
    return executor.evaluate(path, generate(plan), backend="triton", options=options)


def explain(result) -> str:
    return getattr(result, "reason", None) or f"{result.status}: {result.message}\n{result.feedback}"


def ok(result) -> bool:
    status = getattr(result, "status", None)
    return status is not None and str(getattr(status, "value", status)) in ("ok", "compiled")


# The interpreter children's parent: imports torch, Triton (with TRITON_INTERPRET=1) and the task loader
# once, then forks a child for each check, which runs the check as `python check.py cand.py` would (a
# fresh copy of a process that has run nothing: Triton's state as in a new one, seeds drawn afresh).
_FORK_SERVER = r"""
import json, os, random, runpy, sys, traceback
import torch, triton, triton.language
from backends._task import import_file

for line in sys.stdin:
    req = json.loads(line)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.dup2(os.open(req["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)
            os.dup2(os.open(req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
            sys.argv = [req["script"], *req["args"]]
            sys.path[0] = os.path.dirname(req["script"])
            torch.seed()  # a new process's seeds, not the ones each fork would share
            random.seed()
            runpy.run_path(req["script"], run_name="__main__")
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    print(json.dumps({"rc": os.waitstatus_to_exitcode(status)}), flush=True)
"""
_fork_server = None


def _run_in_interpreter(script: Path, args: list[str], timeout: float) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `python script *args` with TRITON_INTERPRET=1, forked from this
    test process's interpreter server (started on first use; killed, with the check, past `timeout`)."""
    import atexit
    import json
    import os
    import selectors
    import signal
    import subprocess
    import sys

    global _fork_server
    if _fork_server is None or _fork_server.poll() is not None:
        _fork_server = subprocess.Popen([sys.executable, "-c", _FORK_SERVER], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, start_new_session=True,
                                        env=dict(os.environ, TRITON_INTERPRET="1"))
        atexit.register(_fork_server.kill)
    server = _fork_server
    out, err = script.with_suffix(".stdout"), script.with_suffix(".stderr")
    server.stdin.write(json.dumps({"script": str(script), "args": args, "stdout": str(out), "stderr": str(err)}) + "\n")
    server.stdin.flush()
    with selectors.DefaultSelector() as sel:
        sel.register(server.stdout, selectors.EVENT_READ)
        line = server.stdout.readline() if sel.select(timeout) else ""
    if not line:  # past the timeout, or the server died: the check failed
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
        _fork_server = None
        return -9, "", f"no answer from the interpreter child within {timeout} s"
    read = lambda p: p.read_text(errors="replace") if p.exists() else ""  # noqa: E731
    return json.loads(line)["rc"], read(out), read(err)


def check_in_interpreter(tmp_path, check: str, candidate: str, says: str) -> None:
    """Run `check` on the candidate (imported as `mod`) in a child with TRITON_INTERPRET=1 (it must
    be set before triton is imported, which this process has done); the child prints `says` when
    all held."""
    (tmp_path / "cand.py").write_text(candidate)
    (tmp_path / "check.py").write_text("import sys\nfrom pathlib import Path\nfrom backends._task import import_file\n"
                                       "mod = import_file(Path(sys.argv[1]), 'cand')\n" + check)
    rc, stdout, stderr = _run_in_interpreter(tmp_path / "check.py", [str(tmp_path / "cand.py")], timeout=300)
    assert rc == 0 and says in stdout, stderr[-2000:]


def correctness_checks(cases: list[Case], stem: str, kernelbench: tuple[str, ...] = ()):
    """A family test module's verdict fixtures and correctness tests: every case under strict rules,
    the named ones also under kernelbench rules. Bound at module level by the names pytest collects:

        results, kernelbench_results, test_x_is_correct, test_x_is_correct_under_kernelbench_rules = \\
            correctness_checks(CASES, "x", KERNELBENCH)
    """
    import pytest

    @pytest.fixture(scope="module")
    def results(cpu_executor, tmp_path_factory):
        return Lazy(cpu_executor, cases, tmp_path_factory.mktemp(stem))

    @pytest.fixture(scope="module")
    def kernelbench_results(cpu_executor, tmp_path_factory):
        return Lazy(cpu_executor, [c for c in cases if c.name in kernelbench], tmp_path_factory.mktemp(f"{stem}_kb"),
                    rules="kernelbench")

    @pytest.mark.parametrize("name", params(cases))
    def test_is_correct(results, name):
        assert ok(results[name]), explain(results[name])

    @pytest.mark.parametrize("name", kernelbench)
    def test_is_correct_under_kernelbench_rules(kernelbench_results, name):
        assert ok(kernelbench_results[name]), explain(kernelbench_results[name])

    return results, kernelbench_results, test_is_correct, test_is_correct_under_kernelbench_rules
