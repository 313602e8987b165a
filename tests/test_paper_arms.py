"""benchmarks/paper_arms.py end to end against the local stand-in server (benchmarks/llm_standin.py):
the estimate printed first, the stop at --max-cost, and a second invocation that continues where
the first stopped, with every planned step made once and no call repeated."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

from llm_server import llm_env  # noqa: F401  (fixture)
from memory_store import MemoryStore

ROOT = Path(__file__).resolve().parent.parent


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


paper_arms = _load("paper_arms")
llm_standin = _load("llm_standin")


@pytest.fixture
def standin(llm_env, tmp_path):
    """The stand-in answers every call with a relu_add kernel at 1000 tokens in, 400 out: $1.40 a
    call at the prices given here."""
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"openai:standin": [1000, 1000]}))
    with llm_standin.StandIn(delay_s=0.0) as server:
        for name, value in (("OPENAI_BASE_URL", server.url + "/v1"), ("OPENAI_API_KEY", "sk-standin-not-a-key"),
                            ("EVOKERNEL_PRICES", str(prices)), ("EVOKERNEL_LLM_MAX_ATTEMPTS", "1")):
            llm_env.setenv(name, value)
        yield server


def _args(tmp_path, *extra):
    kb = tmp_path / "kb"
    (kb / "level1").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "evokernel" / "tasks" / "relu_add.py", kb / "level1" / "relu_add.py")
    return ["--model", "openai:standin", "--kernelbench", str(kb), "--suites", "npu", "level1", "--limit", "1",
            "--arms", "passk", "value", "--budget", "2", "--device", "cpu", "--size", "small", "--trials", "2",
            "--jobs", "1", "--state", str(tmp_path / "state"), "--out", str(tmp_path / "arms.json"), *extra]


@pytest.mark.slow
def test_stops_at_the_cost_cap_and_resumes_without_doubling(tmp_path, standin, capsys, cpu_executor):
    # 2 suites x 2 arms x 1 task x 2 steps = 8 calls, $1.40 each. At $3 the third call would pass it:
    # the first arm finishes with two, the second stops before its first.
    assert paper_arms.main(_args(tmp_path, "--max-cost", "3"), executor=cpu_executor) == 0
    out, err = capsys.readouterr()
    assert "plan: 8 LLM steps" in err and "stopped before npu / value" in err
    first = json.loads((tmp_path / "arms.json").read_text())
    assert not first["complete"] and [(r["suite"], r["arm"]) for r in first["rows"]] == [("npu", "passk")]
    assert first["spent"]["llm_calls"] == standin.stats()["requests"] == 2
    assert first["spent"]["cost_usd"] == pytest.approx(2.8)

    assert paper_arms.main(_args(tmp_path, "--max-cost", "100"), executor=cpu_executor) == 0
    out, err = capsys.readouterr()
    assert "already spent: 2 calls" in err
    report = json.loads((tmp_path / "arms.json").read_text())
    assert report["complete"] and standin.stats()["requests"] == 8 == report["spent"]["llm_calls"]
    for suite in ("npu", "level1"):
        for arm in ("passk", "value"):
            with MemoryStore(tmp_path / "state" / f"{suite}-{arm}.db") as store:
                runs, steps = store.runs(), store.steps()
            assert len(runs) == 1 and runs[0]["status"] == "done", (suite, arm)  # resumed, not started again
            assert len(steps) == 2, (suite, arm)
    rows = {(r["suite"], r["arm"]): r for r in report["rows"]}
    # The stand-in's kernel is Triton for relu_add: right on level1, no Ascend C kernel for the npu suite.
    assert rows["level1", "value"]["correct"] == 1 and rows["npu", "value"]["correct"] == 0
    assert "| passk |" in out and "11.0% correct (pass@30)" in out and "| value |" in out

    # A third run has nothing left to do: no call, the same table.
    assert paper_arms.main(_args(tmp_path), executor=cpu_executor) == 0
    assert standin.stats()["requests"] == 8


def test_bad_plans_are_one_line_errors(tmp_path, standin, capsys):
    assert paper_arms.main(["--model", "openai:standin", "--suites", "level1"]) == 2
    assert "needs --kernelbench DIR" in capsys.readouterr().err
    assert paper_arms.main(["--model", "openai:nosuchprice", "--suites", "npu", "--max-cost", "1",
                            "--state", str(tmp_path / "s")]) == 2
    assert "--max-cost needs a price for openai:nosuchprice" in capsys.readouterr().err
    assert paper_arms.main(["--model", "openai:standin", "--suites", "npu", "--arms", "magic"]) == 2
    assert "unknown arm(s) magic" in capsys.readouterr().err


def test_the_estimate_counts_every_planned_step(tmp_path, standin, capsys):
    assert paper_arms.main(_args(tmp_path, "--estimate-only")) == 0
    err = capsys.readouterr().err
    # 8 steps at the assumed 6000 in and 2500 out: $1000/M each way -> $8.50 a call.
    assert "plan: 8 LLM steps" in err and "68,000 tokens" in err and "about $68.00" in err
    assert standin.stats()["requests"] == 0
