"""A backend plugin is one file plus an entry point: a toy backend, registered in the
`evokernel.backends` group, runs the loop with the LLM policy against a local
stand-in server. Nothing outside the backend names it: the prompt takes its
title and rules from it, the worker asks it what runs here, the builtin policy
finds it has no generator."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import evokernel
from evokernel import RunOptions
from evokernel.policies import get_policy
from memory_store import MemoryStore

from llm_server import llm_env, local_llm, openai_reply, server  # noqa: F401  (fixtures)

ADD_RELU = Path(__file__).parent / "executor_cases" / "task_add_relu.py"

TOY_BACKEND = '"""A backend plugin in one file: kernels are Python functions marked @toy_backend.kernel."""\n\nfrom backends import CompileReport\n\n_LOG = None\n_OPS = {"max": lambda a, b: a.clamp(min=b) if isinstance(b, float) else a.maximum(b)}\n\n\ndef kernel(name, expression):\n    """A toy kernel: an elementwise expression over named inputs, launched as kernel(out, *inputs)."""\n    code = compile(expression, f"<toy kernel {name}>", "eval")\n    params = sorted(set(code.co_names) - set(_OPS))\n\n    def launch(out, *inputs):\n        log = _LOG\n        if log is not None:\n            log.record("toy", name)\n            log.paused += 1  # work inside a launch is the kernel\'s own\n        try:\n            out.copy_(eval(code, {**_OPS, **dict(zip(params, inputs))}))\n        finally:\n            if log is not None:\n                log.paused -= 1\n    return launch\n\n\nclass ToyBackend:\n    name = "toy"\n    language = "python-toy"\n    title = "Toy Python"\n    kernel_marker = r"toy_backend\\.kernel\\("\n    prompt_rules = "Toy rules:\\n- TOY-RULE: a kernel is toy_backend.kernel(name, expression), launched as kernel(out, *inputs)."\n    api_notes = None\n\n    def mode(self):\n        return {"mode": "cpu", "can_run": True, "detail": "plain Python kernels"}\n\n    def can_run(self, device):\n        return True\n\n    def static_problems(self, source):\n        return [] if "toy_backend.kernel(" in source else ["no toy_backend.kernel(...): write the kernel as one"]\n\n    def install_hooks(self, log, *, compile_only):\n        global _LOG\n        _LOG = log\n\n    def compile_check(self, module, log):\n        return CompileReport(True, "plain Python, nothing to compile", kernels=[{"name": e["name"]} for e in log.launches])\n\n    def latency_source(self, device):\n        return "interpreted-cpu"  # a LatencySource label: Python on the CPU, not a GPU\'s speed\n\n    def modelled_latency_ms(self, log, device):\n        return None\n'

TOY_CANDIDATE = 'import torch\nimport torch.nn as nn\nimport toy_backend\n\nADD_RELU = toy_backend.kernel("add_relu", "max(x + y, 0.0) * 2.0")\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x, y):\n        out = torch.empty_like(x)\n        ADD_RELU(out, x, y)\n        return out\n'


@pytest.fixture
def toy_plugin(tmp_path, monkeypatch):
    """toy_backend.py and its distribution's entry point, importable here and in the workers."""
    site = tmp_path / "site"
    info = site / "toy_backend-0.1.dist-info"
    info.mkdir(parents=True)
    (site / "toy_backend.py").write_text(TOY_BACKEND)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-backend\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[evokernel.backends]\ntoy = toy_backend:ToyBackend\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", str(site))
    yield site
    sys.modules.pop("toy_backend", None)


@pytest.mark.slow
def test_a_toy_backend_plugin_runs_the_loop_with_the_llm_policy(tmp_path, toy_plugin, server, monkeypatch):  # noqa: F811
    from backends import backend_names

    assert "toy" in backend_names()
    server.default = openai_reply("A toy kernel.\n\n```python\n" + TOY_CANDIDATE + "```\n")
    with MemoryStore(tmp_path / "m.db") as store:
        result = evokernel.run([ADD_RELU], RunOptions.of(backend="toy", budget=2, device="cpu", trials=1, jobs=1),
                               policy=get_policy(llm=local_llm(server, "openai:test-model"), log=store), store=store)
        (task,) = result.tasks
        traces = store.list_items(kinds=["trace"], backends=["toy"], limit=None)
    assert task.statuses == ["ok", "ok"], task.last_message
    assert task.latency_source == "interpreted-cpu" and len(traces) == 2
    first = json.dumps(server.requests[0].body)
    assert "Toy Python" in first and "TOY-RULE" in first, "the prompt carries the plugin's own title and rules"
    assert "Start point" in json.dumps(server.requests[1].body)


def test_the_builtin_policy_stops_honestly_on_a_backend_without_a_generator(tmp_path, toy_plugin):
    from loop_doubles import ScriptedExecutor

    result = evokernel.run([ADD_RELU], RunOptions.of(backend="toy", budget=2, device="cpu"), executor=ScriptedExecutor(),
                           memory=tmp_path / "m.db")
    (task,) = result.tasks
    assert task.attempts == 0 and task.stopped == "the toy backend has no builtin generator; use --model"
