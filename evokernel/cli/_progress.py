"""The live view of a run on stderr, fed by the loop's events.

On a terminal: a table of the tasks (stage, attempts, last verdict, best
latency) under a line with what is in flight (steps proposing, i.e. LLM calls
waiting; evaluations running and queued for a worker), tokens and cost. When
stderr is not a terminal (a log file, CI), one plain line per finished step
instead, and a line naming the steps still running when nothing has been said
for a while (`heartbeat_s`), so a long run is never silent.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from evokernel.loop import (RunEvent, RunStarted, RunStats, SkillLearned, StepDone, StepStarted, TaskStopped,
                            TimeLimitReached)

_TABLE_ROWS = 24  # beyond this many tasks, the terminal view shows the active ones
HEARTBEAT_S = 60.0  # off a terminal: after this long without a line, say what is still running


def _ms(v: float | None) -> str:
    return f"{v:.4g}" if v else "-"


class RunProgress:
    def __init__(self, console: Any, budget: int, *, preamble: list[str] | None = None,
                 heartbeat_s: float = HEARTBEAT_S):
        self.console = console
        self.preamble = list(preamble or [])  # said once the run has started (a run that fails to start says only why)
        self.budget = budget
        self.total = 0  # steps planned, counted from each run's start (an ablation has several)
        self.done = 0
        self.rows: dict[tuple[str, str], dict[str, Any]] = {}
        self.stats = RunStats()
        self.live = None
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self.heartbeat_s = heartbeat_s
        self.running: dict[tuple[str, str], float] = {}  # steps started and not done: since when
        self._last_line = self.started
        self._quiet = threading.Event()  # set on exit: the heartbeat thread ends
        self._heart: threading.Thread | None = None

    def __enter__(self) -> "RunProgress":
        if self.console.is_terminal:
            from rich.live import Live

            self.live = Live(self._render(), console=self.console, refresh_per_second=4, transient=False)
            self.live.__enter__()
        else:
            self._heart = threading.Thread(target=self._heartbeat, name="evokernel-progress", daemon=True)
            self._heart.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._quiet.set()
        if self.live is not None:
            self.live.__exit__(*exc)

    def _heartbeat(self) -> None:
        """Off a terminal, a step that runs for minutes (a long compile, a slow candidate) is named."""
        while not self._quiet.wait(min(self.heartbeat_s, 5.0)):
            with self._lock:
                now = time.monotonic()
                if not self.running or now - self._last_line < self.heartbeat_s:
                    continue
                oldest = sorted(self.running.items(), key=lambda kv: kv[1])[:3]
                named = ", ".join(f"{(f'[{arm}] ' if arm else '')}{task} for {now - since:.0f} s"
                                  for (arm, task), since in oldest)
                more = f" and {len(self.running) - len(oldest)} more" if len(self.running) > len(oldest) else ""
                self._line(f"still running: {named}{more}")

    def __call__(self, event: RunEvent) -> None:
        with self._lock:
            self._update(event)

    def _row(self, arm: str, task: str) -> dict[str, Any]:
        return self.rows.setdefault((arm, task), {"stage": "draft", "attempts": 0, "status": "", "best": None,
                                                  "speedup": None})

    def _update(self, event: RunEvent) -> None:
        self.stats = event.stats
        prefix = f"[{event.arm}] " if event.arm else ""
        if isinstance(event, (StepDone, TaskStopped)):
            self.running.pop((event.arm, event.task), None)
        if isinstance(event, StepStarted):
            self._row(event.arm, event.task).update(stage=event.stage, status="running")
            self.running[(event.arm, event.task)] = time.monotonic()
        elif isinstance(event, StepDone):
            self.done += 1
            self._row(event.arm, event.task).update(attempts=event.step, status=event.status.value,
                                                    best=event.best_latency_ms, speedup=event.speedup_over_first)
            if self.live is None:
                self._line(f"{prefix}{event.task} step {event.step}/{self.budget} ({event.stage}): "
                           f"{event.status}, {_ms(event.latency_ms)} ms, best {_ms(event.best_latency_ms)} ms")
        elif isinstance(event, TaskStopped):
            row = self._row(event.arm, event.task)
            self.done += self.budget - row["attempts"]
            row.update(status="stopped: " + event.reason[:60])
            if self.live is None:
                self._line(f"{prefix}{event.task}: stopped: {event.reason}")
        elif isinstance(event, SkillLearned):  # rare and worth seeing: a skill admitted, merged or rejected by re-timing
            verified = event.verified_speedup
            self._line(f"{prefix}{event.task}: skill {event.action}: {event.title}"
                       + (f" (re-timed {verified:.2f}x)" if verified else ""))
        elif isinstance(event, TimeLimitReached):
            self._line(f"{prefix}time limit of {event.seconds:g} s reached: no new steps started; "
                       "the run stays unfinished, and the same command resumes it")
        elif isinstance(event, RunStarted):
            self.total += len(event.tasks) * self.budget
            for task, done in zip(event.tasks, event.done):  # steps a resumed run had committed
                self.done += done
                if done:
                    self._row(event.arm, task).update(attempts=done)
            for line in self.preamble:
                self.console.print(line, style="dim", markup=False)
            self.preamble = []
            if self.live is None:
                self._line(f"{prefix}run {event.run_id}{' (resumed)' if event.resumed else ''}: "
                           f"{len(event.tasks)} task(s), {event.jobs} at once")
        if self.live is not None:
            self.live.update(self._render())

    def _summary(self) -> str:
        s = self.stats
        text = (f"{self.done}/{self.total} steps, {time.monotonic() - self.started:.0f} s; "
                f"proposing {s.proposing}, evaluating {s.evaluating}, queued {s.queued}")
        if s.tokens_in or s.tokens_out:
            text += f"; tokens {s.tokens_in}/{s.tokens_out}"
        if s.cost_usd:
            text += f", ${s.cost_usd:.4f}"
        return text

    def _line(self, text: str) -> None:
        self._last_line = time.monotonic()
        self.console.print(f"{text} | {self._summary()}", markup=False)

    def _render(self):
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        table = Table("task", "stage", "attempts", "last verdict", "best ms", "x first")
        rows = list(self.rows.items())
        if len(rows) > _TABLE_ROWS:
            rows = [r for r in rows if r[1]["status"] == "running"][:_TABLE_ROWS]
        for (arm, name), r in rows:
            table.add_row(f"[{arm}] {name}" if arm else name, r["stage"], f"{r['attempts']}/{self.budget}", r["status"],
                          _ms(r["best"]), f"{r['speedup']:.2f}" if r["speedup"] else "-")
        return Group(table, Text(self._summary(), style="dim"))
