"""`evokernel bench`, `ablate` and `report` through typer's runner, on the CPU:
stdout carries data only (one JSON line with --json), messages go to stderr,
exit codes say ok (0) and bad usage (2)."""

from __future__ import annotations

import json
import random
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evokernel.bench import compute_metrics, task_row
from evokernel.cli import app
from evokernel.loop import TaskOutcome

from executor_candidates import HONEST
from llm_server import llm_env, openai_reply, server  # noqa: F401  (fixtures)

runner = CliRunner()

RELU_ADD = '''"""relu(x + y) on tiny, awkward shapes."""
import torch
import torch.nn as nn

CATEGORY = "elementwise"


class Model(nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y)


def get_inputs():
    return [torch.randn(7, 33), torch.randn(7, 33)]


def get_init_inputs():
    return []
'''

SOFTMAX = '''"""Row softmax on a tiny, awkward shape."""
import torch
import torch.nn as nn

CATEGORY = "softmax"


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(5, 19)]


def get_init_inputs():
    return []
'''

OUTSIDE = '''"""A QR decomposition: outside the builtin policy's families."""
import torch
import torch.nn as nn

CATEGORY = "linalg"


class Model(nn.Module):
    def forward(self, x):
        return torch.linalg.qr(x)[1]


def get_inputs():
    return [torch.randn(6, 6)]


def get_init_inputs():
    return []
'''


@pytest.fixture(autouse=True)
def _size_unset(monkeypatch):
    """The size is the CLI's choice (small without a GPU), never the environment's."""
    monkeypatch.delenv("EVOKERNEL_SIZE", raising=False)


@pytest.fixture
def tiny_suite(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "a_relu_add.py").write_text(RELU_ADD)
    (suite / "b_softmax.py").write_text(SOFTMAX)
    return suite


def _json_line(res):
    lines = res.stdout.strip().splitlines()
    assert len(lines) == 1, f"nothing but the JSON object on stdout, got {res.stdout!r}"
    return json.loads(lines[0])


@pytest.mark.slow
def test_bench_json_on_cpu(tiny_suite):
    res = runner.invoke(app, ["bench", str(tiny_suite), "--policy", "builtin", "--no-compile-baseline", "--budget", "2",
                              "--json"])
    assert res.exit_code == 0, res.output
    data = _json_line(res)
    m = data["metrics"]
    assert m["tasks"] == 2 and m["correct"] == 2 and m["correct_rate"] == 1.0
    for key in ("compile_rate", "fast_eager", "fast_compile", "geomean_speedup_eager", "median_speedup_compile",
                "median_speedup_over_first", "attempts_to_first_correct"):
        assert key in m
    assert m["speed_comparable"] is False and "not comparable" in m["speed_note"]
    assert [t["name"] for t in data["tasks"]] == ["a_relu_add", "b_softmax"]
    assert all(t["attempts"] == 2 and t["latency_source"] == "interpreted-cpu" for t in data["tasks"])
    assert data["accuracy_by_iteration"] == [1.0, 1.0]
    env = data["environment"]
    assert env["device"] == "cpu" and env["size"] == "small" and env["trials"] == 5
    assert env["torch"] and "interpreter" in env["timing_method"]
    words = shlex.split(env["command"])  # a command that runs: the suite right after `bench`, options by flag
    assert words[words.index("bench") + 1] == str(tiny_suite)
    assert words[words.index("--budget") + 1] == "2" and "--json" in words
    assert "--no-compile-baseline" in words  # a switch turned off is recorded too
    assert env["tolerance"]["default_atol_rtol"]["float32"] == [1e-4, 1e-4]
    assert "no GPU: tasks run at size 'small'" in res.stderr


@pytest.mark.slow
def test_bench_limit_and_out(tiny_suite, tmp_path):
    out_dir = tmp_path / "results"
    out_dir.mkdir()
    res = runner.invoke(app, ["bench", str(tiny_suite), "--budget", "1", "--limit", "1", "--json", "--out", str(out_dir)])
    assert res.exit_code == 0, res.output
    data = _json_line(res)
    assert [t["name"] for t in data["tasks"]] == ["a_relu_add"]
    written = list(out_dir.glob("*.json"))
    assert len(written) == 1 and json.loads(written[0].read_text())["metrics"] == data["metrics"]


def test_bench_reports_tasks_outside_the_builtin_families(tmp_path):
    task = tmp_path / "qr.py"
    task.write_text(OUTSIDE)
    res = runner.invoke(app, ["bench", str(task), "--budget", "2", "--json"])
    assert res.exit_code == 0, res.output
    data = _json_line(res)
    (row,) = data["tasks"]
    assert not row["correct"] and row["attempts"] == 0 and "outside the builtin" in row["stopped"]
    assert data["metrics"]["stopped"] == 1 and data["metrics"]["correct_rate"] == 0.0
    assert "stopped" in res.stderr


def test_bench_table_without_json(tmp_path):
    task = tmp_path / "qr.py"
    task.write_text(OUTSIDE)
    res = runner.invoke(app, ["bench", str(task), "--budget", "1"])
    assert res.exit_code == 0, res.output
    assert "qr" in res.stdout and "correct" in res.stdout


def test_bench_unknown_suite_exit_2():
    res = runner.invoke(app, ["bench", "level9", "--budget", "1", "--json"])
    assert res.exit_code == 2
    assert "neither a bundled suite" in res.stderr
    assert res.stdout == ""


def test_bench_unknown_backend_and_policy_exit_2(tmp_path):
    task = tmp_path / "qr.py"
    task.write_text(OUTSIDE)
    assert runner.invoke(app, ["bench", str(task), "--backend", "nope"]).exit_code == 2
    res = runner.invoke(app, ["bench", str(task), "--policy", "nope"])
    assert res.exit_code == 2 and "unknown policy" in res.stderr


def test_ablate_arms_json(tmp_path):
    task = tmp_path / "qr.py"
    task.write_text(OUTSIDE)
    res = runner.invoke(app, ["ablate", str(task), "--budget", "3", "--json"])
    assert res.exit_code == 0, res.output
    data = _json_line(res)
    assert data["kind"] == "evokernel-ablation"
    assert [a["name"] for a in data["arms"]] == ["independent", "refine", "similarity", "value", "no-skills"]
    assert [a["memory_mode"] for a in data["arms"]] == ["off", "off", "similarity", "value", "value"]
    assert [a["skills"] for a in data["arms"]] == [True, True, True, True, False]
    assert any("deterministic" in n for n in data["notes"])
    res = runner.invoke(app, ["ablate", str(task), "--budget", "1", "--arm", "value", "--arm", "refine"])
    assert res.exit_code == 0, res.output
    assert "value" in res.stdout and "refine" in res.stdout and "independent" not in res.stdout
    assert runner.invoke(app, ["ablate", str(task), "--arm", "nope"]).exit_code == 2


# --- report ----------------------------------------------------------------------


def _gpu_like_result() -> dict:
    rng = random.Random(0)
    outs = []
    for k in range(12):
        o = TaskOutcome(name=f"t{k:02d}", task_key=f"t{k}", path=f"/t{k}.py")
        if k < 10:
            o.correct, o.attempts, o.first_correct_attempt, o.compile_ok_attempts = True, 5, 1 + k % 3, 5
            o.statuses = ["ok"] * 5
            o.first_latency_ms = rng.uniform(0.1, 1.0)
            o.best_latency_ms = o.first_latency_ms / rng.uniform(1.0, 4.0)
            o.eager_ms = o.best_latency_ms * rng.uniform(0.5, 3.0)
            o.compile_ms = o.eager_ms * rng.uniform(0.5, 1.0)
            o.latency_source = "measured-gpu"
        outs.append(o)
    return {
        "kind": "evokernel-bench", "suite": "level1", "policy": "builtin", "options": {"budget": 5},
        "metrics": compute_metrics(outs, device="cuda:0"), "tasks": [task_row(o) for o in outs],
        "accuracy_by_iteration": [0.5, 0.7, 0.8, 0.8, 0.83],
        "environment": {"device": "cuda:0", "device_name": "NVIDIA H200", "trials": 5},
    }


def test_report_writes_markdown_and_pngs(tmp_path):
    results = tmp_path / "run.json"
    results.write_text(json.dumps(_gpu_like_result()))
    out = tmp_path / "report"
    res = runner.invoke(app, ["report", str(results), "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    files = _json_line(res)
    assert files["skipped"] == []
    assert sorted(Path(p).name for p in files["images"]) == ["accuracy.png", "fast_p.png", "speedups.png"]
    for p in files["images"]:
        assert Path(p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (out / "report.md").read_text()
    assert "fast_1" in md and "![speedups](speedups.png)" in md and "NVIDIA H200" in md


def test_report_on_a_cpu_result_skips_the_baseline_plot(tmp_path):
    data = _gpu_like_result()
    for row in data["tasks"]:
        row.update(eager_ms=None, compile_ms=None, speedup_eager=None, speedup_compile=None, latency_source="interpreted-cpu")
    data["metrics"].update(speed_comparable=False, speed_note="run on cpu: not comparable")
    data["environment"]["device"] = "cpu"
    results = tmp_path / "cpu.json"
    results.write_text(json.dumps(data))
    res = runner.invoke(app, ["report", str(results)])
    assert res.exit_code == 0, res.output
    out = tmp_path / "cpu"  # default: RESULTS without .json
    assert (out / "report.md").is_file() and (out / "speedups.png").is_file() and not (out / "fast_p.png").exists()
    assert "fast_p.png" in res.stderr
    assert "not comparable" in (out / "report.md").read_text()


def test_report_rejects_other_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}')
    res = runner.invoke(app, ["report", str(bad)])
    assert res.exit_code == 2 and "not an EvoKernel result" in res.stderr
    assert runner.invoke(app, ["report", str(tmp_path / "missing.json")]).exit_code == 2


@pytest.mark.parametrize("command", ["bench", "ablate", "report"])
def test_commands_have_help(command):
    res = runner.invoke(app, [command, "--help"])
    assert res.exit_code == 0 and len(res.stdout) > 200


# --- with an LLM (a local fake server) --------------------------------------------------


@pytest.mark.slow
def test_bench_with_an_llm_counts_tokens(tmp_path, server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-000000")
    server.default = openai_reply("```python\n" + HONEST["add_relu"][1].strip() + "\n```\n", tokens_in=120, tokens_out=30)
    task = Path(__file__).parent / "executor_cases" / "task_add_relu.py"
    res = runner.invoke(app, ["bench", str(task), "--model", "openai:test-model", "--llm-only", "--budget", "1", "--trials", "2", "--json"])
    assert res.exit_code == 0, res.output
    data = _json_line(res)
    assert data["policy_is_llm"] and data["policy"] == "openai:test-model"
    assert data["metrics"]["correct"] == 1
    llm = data["metrics"]["llm"]
    assert (llm["tokens_in"], llm["tokens_out"]) == (120, 30) and llm["tokens_per_solved"] == 150


def test_commit_of_a_git_archive_copy(tmp_path):
    """Results name the commit also when the code runs from `git archive` (no .git, as on the
    device machines): git writes HEAD into evokernel/_archive_commit.txt (export-subst)."""
    import subprocess
    import tarfile

    from evokernel.bench._runner import ARCHIVE_COMMIT, _git_commit

    written = tmp_path / "_archive_commit.txt"
    written.write_text("0123456789abcdef0123456789abcdef01234567\n")
    assert _git_commit(tmp_path, written) == "0123456789abcdef0123456789abcdef01234567"
    written.write_text("$Format:%H$\n")  # a copy not made by git archive: no commit to name
    assert _git_commit(tmp_path, written) is None
    assert _git_commit(tmp_path, tmp_path / "missing.txt") is None
    (tmp_path / ".git").mkdir()  # a copy whose git metadata is not its own: the written commit wins
    written.write_text("0123456789abcdef0123456789abcdef01234567\n")
    assert _git_commit(tmp_path, written) == "0123456789abcdef0123456789abcdef01234567"
    root = ARCHIVE_COMMIT.parent.parent
    if not (root / ".git").exists():
        pytest.skip("not a git checkout")
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    archive = tmp_path / "head.tar"
    subprocess.run(["git", "-C", str(root), "archive", "-o", str(archive), "HEAD", "evokernel/_archive_commit.txt",
                    ".gitattributes"], check=True, capture_output=True)
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path / "copy", filter="data")
    assert _git_commit(tmp_path / "copy", tmp_path / "copy" / "evokernel" / "_archive_commit.txt") == head


def test_the_report_names_each_task_below_half_of_torch_compile_with_its_reason(capsys):
    from evokernel.bench import compute_metrics
    from evokernel.cli._common import out_console
    from evokernel.cli.bench_cmd import _render_metrics
    from evokernel.loop import TaskOutcome

    def slow(name, limits):
        o = TaskOutcome(name=name, task_key=name, path=f"{name}.py", correct=True, attempts=1, best_latency_ms=4.0,
                        eager_ms=4.0, compile_ms=1.0, latency_source="measured-gpu", statuses=["ok"])
        o.slowest_kernel, o.slowest_kernel_share, o.speed_limits = "_conv_gemm_kernel", 1.0, limits
        return o

    _render_metrics(out_console(),
                    compute_metrics([slow("50_conv", ("IEEE fp32 products on the FMA units",)), slow("other", ())],
                                    device="cuda:0"))
    out = capsys.readouterr().out
    assert ("below half of torch.compile: 50_conv 0.25x; slowest kernel _conv_gemm_kernel (100.0% of the time); "
            "reason: IEEE fp32 products on the FMA units") in " ".join(out.split())
    assert "other 0.25x; slowest kernel _conv_gemm_kernel (100.0% of the time); reason: none recorded" in " ".join(out.split())
