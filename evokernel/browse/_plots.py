"""Plots as SVG, drawn on the server with matplotlib's object API.

No pyplot: its global figure state is not safe across the server's threads;
each call draws on its own `Figure`. Served as `<img>` sources, so an SVG's
text (task names come from the bank) can never run as script in the page.
"""

from __future__ import annotations

import io
import math
import statistics
from collections.abc import Sequence

from ._records import Attempt, ValuePoint

_OK, _FAIL, _BEST = "#2b7a3d", "#b3261e", "#e0a800"
_EAGER, _COMPILE = "#4a5b8c", "#8c4a7d"


def _svg(fig) -> bytes:
    out = io.BytesIO()
    fig.savefig(out, format="svg", bbox_inches="tight", metadata={"Date": None})
    return out.getvalue()


def _figure(width: float, height: float):
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(width, height), dpi=100)
    ax = fig.add_subplot()
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # attempts and updates are counted
    return fig, ax


def attempts_svg(attempts: Sequence[Attempt], *, best_id: int | None, latency_source: str) -> bytes:
    """Each attempt's latency in order (log scale when they span decades), failures, by verdict, on a strip above the
    feasible ones, the best-so-far as a step line, eager and torch.compile as
    horizontal lines where the executor timed them."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    fig, ax = _figure(7.5, 3.2)
    ok = [(a.number, a.item.latency_ms) for a in attempts if a.feasible]
    baselines = {
        name: [v for a in attempts if (v := a.baseline_ms(name)) is not None] for name in ("eager", "compile")
    }
    levels = [ms for _, ms in ok] + [statistics.median(v) for v in baselines.values() if v]
    log_scale = bool(levels) and max(levels) > 20 * min(levels)  # only where latencies span decades
    top = max(levels) * (1.8 if log_scale else 1.12) if levels else 1.0
    if ok:
        ax.scatter([n for n, _ in ok], [ms for _, ms in ok], color=_OK, s=28, zorder=3, label="feasible")
        best_so_far, xs, ys = math.inf, [], []
        for n, ms in ok:
            best_so_far = min(best_so_far, ms)
            xs.append(n)
            ys.append(best_so_far)
        if attempts:
            xs.append(attempts[-1].number)
            ys.append(best_so_far)
        ax.step(xs, ys, where="post", color=_OK, alpha=0.5, linewidth=1.2, label="best so far")
    for status, marker in zip(sorted({a.item.status or "failed" for a in attempts if not a.feasible}), "xXP^v<>"):
        numbers = [a.number for a in attempts if not a.feasible and (a.item.status or "failed") == status]
        ax.scatter(numbers, [top] * len(numbers), color=_FAIL, marker=marker, s=40, zorder=3, label=f"failed: {status}")
    best = next((a for a in attempts if a.item.id == best_id), None)
    if best is not None:
        ax.scatter([best.number], [best.item.latency_ms], color=_BEST, marker="*", s=180, zorder=4,
                   edgecolors="black", linewidths=0.6, label="best")
    for name, color, style, label in (("eager", _EAGER, "--", "eager PyTorch"),
                                      ("compile", _COMPILE, ":", "torch.compile")):
        if baselines[name]:
            ax.axhline(statistics.median(baselines[name]), color=color, linestyle=style, linewidth=1.4, label=label)
    if log_scale:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
    if not ok:
        ax.set_yticks([])
    ax.set_xlabel("attempt")
    ax.set_ylabel(f"latency, ms ({latency_source or 'no timing'})")
    if attempts:
        ax.set_xlim(0.5, attempts[-1].number + 0.5)
    ax.grid(True, which="major", alpha=0.25)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return _svg(fig)


def values_svg(history: Sequence[ValuePoint], *, q_draft_init: float, q_refine_init: float) -> bytes:
    """Q_draft and Q_refine after each step that updated the item, from its start values."""
    fig, ax = _figure(7.5, 2.8)
    xs = list(range(len(history) + 1))
    for label, init, values, color in (
        ("Q_draft", q_draft_init, [p.q_draft for p in history], "#1f5fa8"),
        ("Q_refine", q_refine_init, [p.q_refine for p in history], "#c05a00"),
    ):
        ax.step(xs, [init, *values], where="post", color=color, linewidth=1.6, label=label)
    targets = [(i + 1, p.target) for i, p in enumerate(history)]
    if targets:
        ax.scatter([x for x, _ in targets], [t for _, t in targets], color="#777777", s=12, zorder=3,
                   label="step target")
    ax.axhline(0.0, color="#999999", linewidth=0.8)
    # Rewards live in [-1, 1]; a normalised refine target can leave it.
    seen = [q_draft_init, q_refine_init, *(v for p in history for v in (p.q_draft, p.q_refine, p.target))]
    ax.set_ylim(min(-1.1, min(seen) - 0.1), max(1.1, max(seen) + 0.1))
    ax.set_xlim(-0.2, max(1, len(history)) + 0.2)
    ax.set_xlabel("updates (steps that retrieved it or started from it)")
    ax.set_ylabel("value")
    ax.grid(True, alpha=0.25)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return _svg(fig)
