"""`evokernel check`: static rules plus compile checks, nothing run; exit 0
when nothing is found, 1 when rejected, 2 for bad usage; the JSON of eval.

Most cases call the library (`backends.check`) with one shared worker; the
command line is driven for its exit codes and its JSON."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from backends import EvalResult, Executor, Verdict, check
from evokernel.cli import app

from executor_candidates import DISALLOWED, FAILURES, HACKS, HONEST
from test_cuda_backend import ADD, BROKEN

CASES = Path(__file__).parent / "executor_cases"
runner = CliRunner()


@pytest.fixture(scope="module")
def executor():
    # Its workers and the CLI's share the Triton cache of the suite's other workers (the sandbox keeps
    # TRITON_CACHE_DIR at the parent's ~/.triton/cache though it gives each worker its own home), so
    # the catalogue's kernels other modules compiled already are not compiled again for this one.
    with Executor(device="cpu", timeout_s=300) as ex:
        yield ex


def _json(res) -> dict:
    lines = res.stdout.strip().splitlines()
    assert len(lines) == 1, "nothing but the JSON object on stdout"
    return json.loads(lines[0])


def test_cli_compiles_an_honest_kernel_for_sm90_without_running_it(tmp_path):
    task, source = HONEST["kb_style_matmul"]
    cand = tmp_path / "cand.py"
    cand.write_text(source)
    res = runner.invoke(app, ["check", str(CASES / task), str(cand), "--json"])
    assert res.exit_code == 0, res.output
    data = _json(res)
    assert set(data) == set(EvalResult(Verdict.OK).to_dict()) | {"task", "backend"}, "the JSON of eval"
    assert data["status"] == "compiled" and data["rules"] == "strict"
    assert data["kernels"][0]["name"] == "matmul_kernel" and data["kernels"][0]["registers"]
    assert data["trials"] == 0 and data["latency_ms"] is None  # nothing ran
    assert data["launches"] and all(launch.get("mode") == "dry" for launch in data["launches"])


def test_cli_rejects_with_exit_1_without_a_worker(tmp_path):
    task, source, _ = HACKS["thread"]
    cand = tmp_path / "cand.py"
    cand.write_text(source)
    t0 = time.perf_counter()
    res = runner.invoke(app, ["check", str(CASES / task), str(cand), "--json", "--rules", "kernelbench"])
    assert res.exit_code == 1 and _json(res)["status"] == "hack" and "thread" in _json(res)["message"]
    assert _json(res)["rules"] == "kernelbench"
    assert time.perf_counter() - t0 < 5, "a static finding needs no worker"


def test_cli_bad_usage_exit_2(tmp_path):
    task, source = HONEST["add_relu"]
    cand = tmp_path / "cand.py"
    cand.write_text(source)
    res = runner.invoke(app, ["check", str(CASES / task), str(cand), "--rules", "lenient"])
    assert res.exit_code == 2 and "rules must be one of strict, kernelbench" in res.stderr and res.stdout == ""
    res = runner.invoke(app, ["check", str(CASES / task), str(tmp_path / "missing.py")])
    assert res.exit_code == 2 and "cannot read candidate" in res.stderr
    assert runner.invoke(app, ["check", str(CASES / task), str(cand), "--backend", "opencl"]).exit_code == 2
    res = runner.invoke(app, ["check", "no_such_bundled_task", str(cand)])
    assert res.exit_code == 2 and "no bundled task" in res.stderr and "relu_add" in res.stderr


def test_cli_takes_a_bundled_task_name(tmp_path):
    cand = tmp_path / "cand.py"
    cand.write_text("import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x, y):\n"
                    "        return torch.relu(x + y)\n")
    res = runner.invoke(app, ["check", "relu_add", str(cand), "--json"])
    assert res.exit_code == 1, res.stderr  # found and judged: a ModelNew of torch ops launches no kernel of its own
    assert json.loads(res.stdout)["task"] == "relu_add"


def test_rule_set_decides_partial_kernels(executor):
    task, source, _ = DISALLOWED["functional_call"]
    strict = check(CASES / task, source, rules="strict", executor=executor)
    assert strict.status == Verdict.DISALLOWED and "--rules kernelbench allows it" in strict.message
    assert check(CASES / task, source, rules="kernelbench", executor=executor).status == Verdict.COMPILED


def test_torch_compute_in_forward_is_seen_on_meta_tensors(executor):
    # Tensor methods are invisible to the static rules; the guard sees them in the dry forward.
    task, source, _ = DISALLOWED["tensor_methods_compute"]
    strict = check(CASES / task, source, executor=executor)
    assert strict.status == Verdict.DISALLOWED and "aten.add" in strict.message
    assert check(CASES / task, source, rules="kernelbench", executor=executor).status == Verdict.COMPILED


def test_never_launching_a_kernel_is_seen_too(executor):
    task, source, _ = DISALLOWED["kernel_never_launched"]
    result = check(CASES / task, source, rules="kernelbench", executor=executor)
    assert result.status == Verdict.DISALLOWED and "launched none" in result.message


def test_triton_compile_error(executor):
    task, source, _, _ = FAILURES["triton_compile_error"]
    result = check(CASES / task, source, executor=executor)
    assert result.status == Verdict.COMPILE_ERROR and "no_such_function" in result.message


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_cuda_sources_go_through_nvcc(executor):
    ok = check(CASES / "task_add_relu.py", ADD, backend="cuda", executor=executor)
    assert ok.status == Verdict.COMPILED and ok.kernels[0].name == "_Z10add_kernelPKfS0_Pfi"
    bad = check(CASES / "task_add_relu.py", BROKEN, backend="cuda", executor=executor)
    assert bad.status == Verdict.COMPILE_ERROR and "not_declared" in bad.message
