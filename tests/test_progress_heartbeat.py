"""Off a terminal, a step that runs long is named in a line, and a quiet run says nothing extra."""

import io
import time

from rich.console import Console

from backends import Verdict
from evokernel.cli._progress import RunProgress
from evokernel.loop import RunStarted, StepDone, StepStarted


def _console() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, force_terminal=False, width=200), buf


def _done(task: str) -> StepDone:
    return StepDone(task=task, stage="draft", step=1, iteration=1, status=Verdict.OK, latency_ms=1.0, reward=1.0,
                    best_latency_ms=1.0, speedup_over_first=None, message="")


def test_a_long_step_is_named_while_it_runs_and_not_after():
    console, buf = _console()
    with RunProgress(console, 2, heartbeat_s=0.2) as progress:
        progress(RunStarted(run_id=1, resumed=False, jobs=2, tasks=("slow_task", "quick_task"), done=(0, 0)))
        progress(StepStarted(task="slow_task", stage="draft", step=1, iteration=1))
        progress(StepStarted(task="quick_task", stage="draft", step=1, iteration=1))
        progress(_done("quick_task"))
        time.sleep(1.0)  # five heartbeat periods
        said = buf.getvalue()
        assert "still running: slow_task for" in said and "quick_task for" not in said
        progress(_done("slow_task"))
        lines = buf.getvalue().count("still running")
        time.sleep(1.0)
        assert buf.getvalue().count("still running") == lines, "nothing running: no heartbeat"
