"""An agent's session with `evokernel mcp`, driven over stdio by the official SDK's client.

It is both the README's worked example and the slow test's scenario
(`tests/test_mcp.py`): the bundled `relu_add` task, an honest Triton kernel,
then a hack that draws on the memories the honest one left, then the best
kernel and the memory's statistics. Print the transcript (what the README
shows, abridged) with

    python tests/mcp_example_session.py [--memory PATH] [--all] [-- EXTRA evokernel mcp OPTIONS]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from mcp import Client, Implementation, StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent
TASK = "relu_add"

HONEST = '''\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_add_kernel(x_ptr, bias_ptr, out_ptr, n_elements, n_cols, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    bias = tl.load(bias_ptr + offs % n_cols, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x + bias, 0.0) * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x, bias):
        x, bias = x.contiguous(), bias.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_add_kernel[(triton.cdiv(n, 1024),)](x, bias, out, n, x.shape[-1], self.scale, BLOCK=1024)
        return out
'''

# What a model under pressure sometimes writes: the reference itself, dressed up with a kernel.
HACK = '''\
import triton
import triton.language as tl
from relu_add import Model


@triton.jit
def noop_kernel(x_ptr):
    pass


class ModelNew(Model):
    pass
'''


@dataclasses.dataclass
class Exchange:
    tool: str
    arguments: dict[str, Any]
    result: dict[str, Any] | None
    error: str | None
    progress: list[str]


async def agent_session(server_args: list[str]) -> list[Exchange]:
    """The session, against `python -m evokernel.cli mcp SERVER_ARGS...`."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "evokernel.cli", "mcp", *server_args], cwd=str(ROOT))
    log: list[Exchange] = []
    async with Client(params, read_timeout_seconds=600,
                      client_info=Implementation(name="example-agent", version="1")) as client:

        async def use(tool: str, **arguments: Any) -> dict[str, Any] | None:
            notes: list[str] = []

            async def progress(value: float, total: float | None, message: str | None) -> None:
                notes.append(message or f"{value:g}")

            reply = await client.call_tool(tool, arguments, progress_callback=progress)
            result = None if reply.is_error else reply.structured_content
            log.append(Exchange(tool, arguments, result, reply.content[0].text if reply.is_error else None, notes))
            return result

        await use("list_tasks")
        await use("show_task", task=TASK)
        await use("retrieve_memories", task=TASK)
        await use("submit_candidate", task=TASK, source=HONEST, used_memory_ids=[])
        shown = await use("retrieve_memories", task=TASK)
        start = (shown or {}).get("start_point")
        await use("submit_candidate", task=TASK, source=HACK,
                  used_memory_ids=[m["id"] for m in (shown or {}).get("memories", []) + (shown or {}).get("skills", [])],
                  start_point_id=start["id"] if start else None)
        await use("best_kernel", task=TASK)
        await use("memory_stats")
    return log


def abridged(value: Any, *, text: int = 160, items: int = 3) -> Any:
    """Long strings and lists cut, so a reply fits on a page (the cut says how much)."""
    if isinstance(value, str):
        if len(value) <= text:
            return value
        return value[:text].rstrip() + f" ... ({len(value)} chars)"
    if isinstance(value, list):
        kept = [abridged(v, text=text, items=items) for v in value[:items]]
        return kept + ([f"... ({len(value) - items} more)"] if len(value) > items else [])
    if isinstance(value, dict):
        return {k: abridged(v, text=text, items=items) for k, v in value.items()}
    return value


# What the README shows of each reply (`--all` prints every field).
README_FIELDS = {
    "list_tasks": ["backend", "size", "bundled"],
    "show_task": ["name", "key", "size", "inputs", "outputs", "tolerances", "min_bytes", "latency_source", "next_stage"],
    "retrieve_memories": ["stage", "step", "memories", "start_point", "best_latency_ms"],
    "submit_candidate": ["step", "stage", "item_id", "verdict", "message", "latency_ms", "latency_source", "reward",
                         "credited"],
    "best_kernel": ["found", "item_id", "latency_ms", "latency_source", "policy", "run_id", "stage"],
    "memory_stats": ["counts", "runs_here"],
}
README_NESTED = {"memories": ["id", "kind", "task_name", "status", "latency_ms", "value"],
                 "start_point": ["id", "latency_ms", "latency_source"],
                 "bundled": ["name", "key", "stage"],
                 "counts": ["items", "by_kind", "runs", "steps", "value_updates"]}


def _pick(value: Any, keys: list[str] | None) -> Any:
    if keys is None or not isinstance(value, dict):
        return value
    return {k: _pick(value[k], README_NESTED.get(k)) if isinstance(value[k], dict) else
            [_pick(v, README_NESTED.get(k)) for v in value[k]] if isinstance(value[k], list) else value[k]
            for k in keys if k in value}


def _progress(notes: list[str]) -> list[str]:
    """Progress notifications, one line per phase: how many, and over which seconds."""
    phases: dict[str, list[str]] = {}
    for note in notes:
        phase, _, when = note.rpartition(" (")
        phases.setdefault(phase or note, []).append(when.rstrip(")"))
    return [f"... progress: {phase} ({len(times)} notification(s), {times[0]}" + (f" to {times[-1]})" if len(times) > 1 else ")")
            for phase, times in phases.items()]


def render(log: list[Exchange], *, everything: bool = False) -> str:
    lines = []
    for ex in log:
        lines.append(f">>> {ex.tool} {json.dumps(abridged(ex.arguments, text=50))}")
        lines.extend(_progress(ex.progress))
        if ex.error is not None:
            lines.append(f"error: {ex.error}")
        else:
            shown = ex.result if everything else _pick(ex.result, README_FIELDS.get(ex.tool))
            lines.append(json.dumps(abridged(shown, text=100), indent=1 if everything else None))
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memory", help="memory file (default: a new one in a temporary directory)")
    parser.add_argument("--all", action="store_true", help="every field of every reply, not the README's selection")
    parser.add_argument("server_args", nargs="*", help="more `evokernel mcp` options, after --")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="evokernel-mcp-") as tmp:
        memory = args.memory or str(Path(tmp) / "memory.db")
        print(render(asyncio.run(agent_session(["--memory", memory, *args.server_args])), everything=args.all))
    return 0


if __name__ == "__main__":
    sys.exit(main())
