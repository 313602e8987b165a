"""Off a terminal, a step that runs long is named in a line, and a quiet run says nothing extra."""

import io
import time

from rich.console import Console

from evokernel.cli._progress import RunProgress


def _console() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, force_terminal=False, width=200), buf


def test_a_long_step_is_named_while_it_runs_and_not_after():
    console, buf = _console()
    with RunProgress(console, 2, heartbeat_s=0.2) as progress:
        progress({"type": "run_start", "run_id": 1, "tasks": ["slow_task", "quick_task"], "jobs": 2})
        progress({"type": "step_start", "task": "slow_task", "stage": "draft", "step": 1})
        progress({"type": "step_start", "task": "quick_task", "stage": "draft", "step": 1})
        progress({"type": "step_done", "task": "quick_task", "stage": "draft", "step": 1, "status": "ok",
                  "latency_ms": 1.0, "best_latency_ms": 1.0, "speedup_over_first": None})
        time.sleep(1.0)  # five heartbeat periods
        said = buf.getvalue()
        assert "still running: slow_task for" in said and "quick_task for" not in said
        progress({"type": "step_done", "task": "slow_task", "stage": "draft", "step": 1, "status": "ok",
                  "latency_ms": 1.0, "best_latency_ms": 1.0, "speedup_over_first": None})
        lines = buf.getvalue().count("still running")
        time.sleep(1.0)
        assert buf.getvalue().count("still running") == lines, "nothing running: no heartbeat"
