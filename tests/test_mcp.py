"""The MCP server, driven by the official SDK's own client.

In process (fast): the tools and their schemas, a submission committed as the
loop commits a step (same values, same steps table as `evokernel.run` on the
same verdicts), errors as tool errors with the server still answering,
progress notifications during a long evaluation, and the memory commands
seeing the run. Over stdio with the real executor (slow): an honest kernel,
a hack, the best kernel after, and the run in `evokernel memory stats`.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from mcp import Client, Implementation
from typer.testing import CliRunner

import evokernel
from backends import EvalResult, Verdict
from evokernel import RunOptions
from evokernel.cli import app
from evokernel.mcp import TOOL_NAMES, AgentSession, build_server
from memory_store import MemoryStore

from loop_doubles import RecordingPolicy, ScriptedExecutor, ok
from mcp_example_session import agent_session

TASK = Path(__file__).parent / "executor_cases" / "task_add_relu.py"

HONEST = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_relu_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x + y, 0.0) * 2.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x, y):
        x, y = x.contiguous(), y.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        add_relu_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        return out
'''

# Inherits the reference: the static rules call it cheating.
HACK = '''
import torch.nn as nn
import triton
import triton.language as tl
from task_add_relu import Model


@triton.jit
def unused_kernel(x_ptr):
    pass


class ModelNew(Model):
    pass
'''

HACK_RESULT = EvalResult(Verdict.HACK, "static check: line 5: imports the reference Model", feedback="cheating")


def call(server, steps):
    """Run `steps(client)` against `server` with the SDK client, in process."""

    async def main():
        async with Client(server, client_info=Implementation(name="test-agent", version="1")) as client:
            return await steps(client)

    return asyncio.run(main())


def data(result):
    assert not result.is_error, result.content[0].text
    return result.structured_content


def scripted(*results):
    return ScriptedExecutor(lambda source, n: results[min(n, len(results)) - 1])


def test_tools_are_listed_with_their_schemas(tmp_path):
    with AgentSession(RunOptions.of(device="cpu"), memory=tmp_path / "m.db", executor=scripted(ok(1.0))) as session:
        tools = call(build_server(session), lambda c: c.list_tools()).tools
    assert [t.name for t in tools] == list(TOOL_NAMES)
    by_name = {t.name: t for t in tools}
    assert all(t.description and t.output_schema for t in tools)
    assert set(by_name["submit_candidate"].input_schema["required"]) == {"task", "source"}
    assert "used_memory_ids" in by_name["submit_candidate"].input_schema["properties"]
    assert by_name["retrieve_memories"].input_schema["required"] == ["task"]


def test_show_and_list_a_task(tmp_path):
    with AgentSession(RunOptions.of(device="cpu"), memory=tmp_path / "m.db", executor=scripted(ok(1.0))) as session:

        async def steps(c):
            shown = data(await c.call_tool("show_task", {"task": str(TASK)}))
            listed = data(await c.call_tool("list_tasks", {"source": str(TASK.parent)}))
            return shown, listed

        shown, listed = call(build_server(session), steps)
    assert shown["name"] == "task_add_relu" and shown["size"] == "small" and shown["key"].endswith("@small")
    assert shown["inputs"] == [[{"shape": [37, 1000], "dtype": "float32"}, {"shape": [37, 1000], "dtype": "float32"}]]
    assert shown["outputs"] == [{"shape": [37, 1000], "dtype": "float32"}]
    assert shown["tolerances"] == [{"dtype": "float32", "atol": 1e-4, "rtol": 1e-4, "source": "default for float32"}]
    assert "class Model" in shown["reference_source"] and "triton" in shown["backend_rules"].lower()
    assert shown["next_stage"] == "draft" and shown["best"]["found"] is False
    assert [b["name"] for b in listed["bundled"]] == ["linear_gelu", "relu_add", "softmax"]
    assert any(e["ref"] == str(TASK) and e["key"] == shown["key"] for e in listed["listed"])
    assert listed["memory"] == []


def test_mcp_steps_commit_what_the_loop_commits(tmp_path):
    """The same candidates and verdicts through `evokernel.run` and through the tools (the agent
    crediting what it was shown) leave the same steps and the same values."""
    verdicts = (ok(3.0), ok(2.0), HACK_RESULT)
    options = RunOptions.of(device="cpu", n_memories=5, seed=3)
    with MemoryStore(tmp_path / "loop.db") as store:
        evokernel.run([TASK], options.replace(budget=3, jobs=1), policy=RecordingPolicy(HONEST, HONEST, HACK),
                      store=store, executor=scripted(*verdicts))
        loop_steps, loop_items = store.steps(), store.list_items(limit=None)

    async def steps(c):
        out = []
        for source in (HONEST, HONEST, HACK):
            shown = data(await c.call_tool("retrieve_memories", {"task": str(TASK)}))
            start = shown["start_point"]
            out.append((shown, data(await c.call_tool("submit_candidate", {
                "task": str(TASK), "source": source,
                "used_memory_ids": [m["id"] for m in shown["memories"] + shown["skills"]],
                "start_point_id": start["id"] if start else None}))))
        return out

    with MemoryStore(tmp_path / "mcp.db") as store:
        with AgentSession(options, store=store, executor=scripted(*verdicts)) as session:
            rounds = call(build_server(session), steps)
            summary = call(build_server(session), lambda c: c.call_tool("memory_stats", {}))
        mcp_steps, mcp_items, run = store.steps(), store.list_items(limit=None), store.runs()[0]

    assert [s["stage"] for _, s in rounds] == ["draft", "refine", "refine"]
    assert [s["verdict"] for _, s in rounds] == ["ok", "ok", "hack"]
    assert rounds[1][0]["memories"] and rounds[2][0]["start_point"] is not None
    fields = ("stage", "reward", "normalized_reward", "value_target", "start_point_id", "result_item_id")
    assert [[s[f] for f in fields] + [sorted(s["context_item_ids"])] for s in mcp_steps] == \
        [[s[f] for f in fields] + [sorted(s["context_item_ids"])] for s in loop_steps]
    values = ("id", "kind", "stage", "status", "latency_ms", "reward", "parent_id", "q_draft", "q_refine",
              "visits_draft", "visits_refine")
    assert [[getattr(i, f) for f in values] for i in mcp_items] == [[getattr(i, f) for f in values] for i in loop_items]
    # The hack's reward moved every memory it used, and its start point, down.
    hack = rounds[2][1]
    assert hack["reward"] == -1.0 and hack["credited"]
    assert all(c["value_after"] < c["value_before"] for c in hack["credited"])
    assert {c["id"] for c in hack["credited"]} == {m["id"] for m in rounds[2][0]["memories"]} | {rounds[2][0]["start_point"]["id"]}
    assert run["status"] == "done" and run["config"]["policy"] == "mcp:test-agent"
    traces = [i for i in mcp_items if i.kind == "trace"]
    values = data(summary)["values"]["by_kind"]["trace"]
    assert values["items"] == 3 and values["visited_refine"] == sum(i.visits_refine > 0 for i in traces)
    assert values["q_refine"]["min"] == min(i.q_refine for i in traces) < 0
    assert run["config"]["tasks"][0]["key"] == rounds[0][1]["key"]


def test_errors_are_tool_errors_and_the_server_keeps_serving(tmp_path):
    class Broken(ScriptedExecutor):
        def evaluate(self, *args, **kwargs):
            raise RuntimeError("the worker pool fell over")

    def message(result):
        assert result.is_error
        return result.content[0].text

    with AgentSession(RunOptions.of(device="cpu"), memory=tmp_path / "m.db", executor=Broken()) as session:

        async def steps(c):
            task = str(TASK)
            return [
                message(await c.call_tool("show_task", {"task": "no_such_task"})),
                message(await c.call_tool("retrieve_memories", {"task": task, "stage": "polish"})),
                message(await c.call_tool("submit_candidate", {"task": task, "source": "   "})),
                message(await c.call_tool("submit_candidate", {"task": task, "source": HONEST, "used_memory_ids": [999]})),
                message(await c.call_tool("submit_candidate", {"task": task, "source": HONEST, "start_point_id": 5})),
                message(await c.call_tool("submit_candidate", {"task": task, "source": HONEST})),
                data(await c.call_tool("memory_stats", {})),
            ]

        *errors, stats = call(build_server(session), steps)
    assert "no task 'no_such_task'" in errors[0] and "bundled task" in errors[0]
    assert "stage must be draft or refine" in errors[1]
    assert "source is empty" in errors[2]
    assert "unknown item id(s): 999" in errors[3]
    assert "start_point_id 5 is not a feasible triton kernel" in errors[4] and "draft" in errors[4]
    assert "internal error (RuntimeError: the worker pool fell over)" in errors[5] and "still running" in errors[5]
    assert stats["counts"]["steps"] == 0 and stats["counts"]["items"] == 0, "a failed call commits nothing"


def test_a_long_evaluation_reports_progress(tmp_path):
    slow = ScriptedExecutor(lambda source, n: ok(1.0), delay=lambda n: 1.0)
    with AgentSession(RunOptions.of(device="cpu"), memory=tmp_path / "m.db", executor=slow) as session:
        seen = []

        async def steps(c):
            async def progress(value, total, text):
                seen.append((value, text))

            return data(await c.call_tool("submit_candidate", {"task": str(TASK), "source": HONEST},
                                          progress_callback=progress))

        result = call(build_server(session, progress_interval_s=0.2), steps)
    assert result["verdict"] == "ok" and result["reward"] == 1.0 and result["stage"] == "draft"
    evaluating = [v for v, text in seen if text.startswith("evaluating on cpu")]
    assert len(evaluating) >= 3, seen
    assert [v for v, _ in seen] == sorted(v for v, _ in seen)


def test_the_memory_commands_see_an_mcp_run(tmp_path):
    db = tmp_path / "m.db"
    with AgentSession(RunOptions.of(device="cpu"), memory=db, executor=scripted(ok(2.0))) as session:
        submitted = call(build_server(session), lambda c: c.call_tool("submit_candidate", {"task": "relu_add", "source": HONEST}))
        run_id = data(submitted)["run_id"]
    runner = CliRunner()
    stats = json.loads(runner.invoke(app, ["memory", "stats", "--memory", str(db), "--json"]).stdout)
    assert stats["runs"] == 1 and stats["steps"] == 1 and stats["by_kind"] == {"experience": 1, "trace": 1}
    exported = [json.loads(line) for line in runner.invoke(app, ["memory", "export", "--memory", str(db)]).stdout.splitlines()]
    traces = [e for e in exported if e.get("kind") == "trace"]
    assert len(traces) == 1 and "add_relu_kernel" in traces[0]["content"]
    logs = runner.invoke(app, ["logs", "--memory", str(db), "--run", str(run_id), "--json"])
    assert logs.exit_code == 0 and json.loads(logs.stdout) == []  # the agent's model calls are the agent's, as with builtin runs


@pytest.mark.slow
def test_an_agent_session_over_stdio(tmp_path):
    """The README's example session against `evokernel mcp` with the real executor: an honest
    kernel is ok, a hack is rejected and lowers the values it drew on, the best kernel is the
    honest one, and the run is in the memory like any other."""
    db = tmp_path / "m.db"
    log = asyncio.run(agent_session(["--memory", str(db), "--device", "cpu", "--trials", "1", "--timeout", "240"]))
    assert [ex.tool for ex in log] == ["list_tasks", "show_task", "retrieve_memories", "submit_candidate",
                                       "retrieve_memories", "submit_candidate", "best_kernel", "memory_stats"]
    assert all(ex.error is None for ex in log), [ex.error for ex in log]
    _, shown, first, honest, second, hack, best, stats = (ex.result for ex in log)
    assert shown["name"] == "relu_add" and shown["key"] == honest["key"]
    assert first["stage"] == "draft" and first["memories"] == []
    assert honest["verdict"] == "ok" and honest["reward"] == 1.0 and honest["latency_source"] == "interpreted-cpu"
    assert any(note.startswith("evaluating on cpu") for note in log[3].progress)
    assert second["stage"] == "refine" and second["start_point"]["id"] == honest["item_id"]
    assert honest["item_id"] in {m["id"] for m in second["memories"]}
    assert hack["verdict"] == "hack" and hack["reward"] == -1.0 and not hack["feasible"]
    assert hack["credited"] and all(c["value_after"] < c["value_before"] for c in hack["credited"])
    assert best["found"] and best["item_id"] == honest["item_id"] and best["latency_ms"] == honest["latency_ms"]
    assert stats["counts"]["steps"] == 2 and stats["runs_here"] == [honest["run_id"]]
    cli = json.loads(CliRunner().invoke(app, ["memory", "stats", "--memory", str(db), "--json"]).stdout)
    assert cli["runs"] == 1 and cli["steps"] == 2 and cli["value_updates"] == len(hack["credited"])
    with MemoryStore(db) as store:
        (run,) = store.runs()
    assert run["status"] == "done" and run["config"]["policy"] == "mcp:example-agent"


@pytest.mark.parametrize("args, words", [
    (["--backend", "tpu"], "unknown backend 'tpu'"),
    (["--rules", "lax"], "rules must be one of strict, kernelbench"),
    (["--timeout", "0"], "'--timeout': timeout must be a positive number of seconds"),
    (["--precision", "fp8"], "'--precision': precision must be one of fp32, fp16, bf16, got 'fp8'"),
])
def test_a_server_that_cannot_start_says_why_in_one_line(tmp_path, args, words):
    db = tmp_path / "home" / "memory.db"
    res = CliRunner().invoke(app, ["mcp", "--memory", str(db), *args])
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr.startswith("error: ") and res.stderr.count("\n") == 1 and words in res.stderr
    assert not db.parent.exists(), "nothing is created for a server that did not start"


def test_a_damaged_memory_is_named(tmp_path):
    bad = tmp_path / "memory.db"
    bad.write_text("not a database\n" * 100)
    res = CliRunner().invoke(app, ["mcp", "--memory", str(bad)])
    assert res.exit_code == 2 and str(bad) in res.stderr and res.stderr.count("\n") == 1
