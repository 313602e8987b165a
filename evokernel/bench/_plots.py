"""The report's plots, drawn with matplotlib's object API: no pyplot, so no
global state and no GUI backend. Each `plot_*` writes one PNG and returns None,
or returns why it drew nothing (a CPU run has no baselines, so no speedups over
eager or torch.compile)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

from ._metrics import BASELINES, FAST_PS, median

BLUE, ORANGE, GREEN, GREY, RED = "#3b6fb6", "#e08a2c", "#4c9a5b", "#8a8a8a", "#c44e52"
BASELINE_LABEL = {"eager": "PyTorch eager", "compile": "torch.compile"}
SPEEDUP_SERIES = (
    ("speedup_eager", "best vs PyTorch eager", BLUE),
    ("speedup_compile", "best vs torch.compile", ORANGE),
    ("speedup_over_first", "best vs first correct", GREEN),
)
ARM_COLOURS = (GREY, ORANGE, BLUE, GREEN, RED, "#8172b2")
MARKERS = ("o", "s", "^", "D", "v", "P")
LINESTYLES = ("-", "--", "-.", ":")




def _figure(width: float = 7.5, height: float = 4.5):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=130, layout="constrained")
    return fig, fig.add_subplot()


def _style(ax) -> None:
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.grid(True, axis="y", color="#e4e4e4", linewidth=0.8)
    ax.set_axisbelow(True)


def _header(fig, ax, title: str, data: dict[str, Any], *, speed: bool = False) -> None:
    """Title, a grey line saying what was run where and, on speed plots whose
    timings are not GPU measurements, a red line saying so on the figure itself."""
    caveat = None
    if speed and _speed_comparable(data) is False:
        device = str(data.get("environment", {}).get("device", "cpu"))
        caveat = f"{'CPU' if device == 'cpu' else device} timings: not GPU numbers, not comparable with published results"
    fig.suptitle(title, x=0.01, ha="left", fontsize=12, fontweight="bold")
    ax.set_title(_subtitle(data), loc="left", fontsize=8, color=GREY, pad=14 if caveat else 6)
    if caveat:
        ax.annotate(caveat, (0, 1), xycoords="axes fraction", xytext=(0, 3), textcoords="offset points",
                    fontsize=8, color=RED, va="bottom")


def _speed_comparable(data: dict[str, Any]) -> bool | None:
    if "metrics" in data:
        return data["metrics"].get("speed_comparable")
    arms = data.get("arms") or []
    return arms[0]["metrics"].get("speed_comparable") if arms else None


def _subtitle(data: dict[str, Any]) -> str:
    env = data.get("environment", {})
    metrics = data.get("metrics") or ((data.get("arms") or [{}])[0]).get("metrics") or {}
    n = metrics.get("tasks", len(data.get("tasks") or []))
    budget = data.get("options", {}).get("budget")
    device = env.get("device_name", env.get("device", ""))
    return f"{Path(str(data.get('suite', ''))).name} · {n} tasks · {data.get('policy', '')} policy · budget {budget} · {device}"


def plot_speedups(path: Path, data: dict[str, Any]) -> str | None:
    rows = [r for r in data.get("tasks", []) if r.get("correct")]
    series = [(label, colour, [r[key] for r in rows if r.get(key)]) for key, label, colour in SPEEDUP_SERIES]
    series = [s for s in series if s[2]]
    if not series:
        return "no correct task has a latency to compare"
    fig, ax = _figure(max(6.5, 2.4 * len(series) + 1.5), 4.8)
    _style(ax)
    positions = list(range(1, len(series) + 1))
    logs = [[math.log10(v) for v in vals] for _, _, vals in series]
    # Violins need spread; a series of equal values is drawn as points only.
    spread = [i for i, lv in enumerate(logs) if len(lv) > 1 and max(lv) - min(lv) > 1e-9]
    if spread:
        parts = ax.violinplot([logs[i] for i in spread], positions=[positions[i] for i in spread],
                              showextrema=False, widths=0.75)
        for body, i in zip(parts["bodies"], spread):
            body.set_facecolor(series[i][1])
            body.set_alpha(0.25)
            body.set_edgecolor(series[i][1])
    for pos, (label, colour, vals), lv in zip(positions, series, logs):
        jitter = [((k * 0.618) % 1 - 0.5) * 0.25 for k in range(len(lv))]
        ax.scatter([pos + j for j in jitter], lv, s=18, color=colour, alpha=0.85, edgecolor="white", linewidth=0.5, zorder=5)
        med = median(vals)
        ax.hlines(math.log10(med), pos - 0.3, pos + 0.3, color="black", linewidth=2, zorder=4)
        ax.annotate(f"median {med:.2f}×", (pos + 0.32, math.log10(med)), va="center", fontsize=9, fontweight="bold",
                    bbox=dict(boxstyle="round,pad=0.2", facecolor="white", edgecolor="none", alpha=0.85), zorder=5)
    ax.axhline(0.0, color=RED, linestyle="--", linewidth=1, zorder=1)
    lo = min(min(lv) for lv in logs)
    hi = max(max(lv) for lv in logs)
    pad = max(0.15, (hi - lo) * 0.15)
    ax.set_ylim(min(lo, 0.0) - pad, max(hi, 0.0) + pad)
    ticks = _log_ticks(ax.get_ylim())
    ax.set_yticks([math.log10(t) for t in ticks], [f"{t:g}×" + (" = as fast" if t == 1 else "") for t in ticks])
    ax.set_xticks(positions, [f"{label}\n(n={len(vals)})" for label, _, vals in series])
    ax.set_xlim(0.4, len(series) + 0.9)
    ax.set_ylabel("speedup (latency ratio, log scale)")
    _header(fig, ax, "Speedup of the best kernel per task", data, speed=True)
    fig.savefig(path)
    return None


def _log_ticks(lim: tuple[float, float]) -> list[float]:
    lo, hi = 10 ** lim[0], 10 ** lim[1]
    candidates = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 0.8, 1, 1.25, 1.5, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000]
    inside = [t for t in candidates if lo <= t <= hi]
    while len(inside) > 9:  # keep 1x and thin the rest
        inside = [t for k, t in enumerate(inside) if t == 1 or k % 2 == 0]
    return inside or [1]


def plot_accuracy(path: Path, lines: Sequence[tuple[str, list[float]]], data: dict[str, Any]) -> str | None:
    lines = [(name, ys) for name, ys in lines if ys]
    if not lines:
        return "the result has no per-iteration accuracy"
    fig, ax = _figure(7.5, 4.5)
    _style(ax)
    longest = max(len(ys) for _, ys in lines)
    n = len(lines)
    labelled: set[tuple[int, float]] = set()
    for k, (name, ys) in enumerate(lines):
        colour = BLUE if n == 1 else ARM_COLOURS[k % len(ARM_COLOURS)]
        xs = list(range(1, len(ys) + 1))
        # Arms often tie. The last arm (the method itself) is drawn thickest, solid and lowest;
        # earlier arms thinner, dashed and on top, so a tie shows as one line inside another.
        ax.plot(xs, [100 * y for y in ys], color=colour, label=name, linewidth=2.2 if n == 1 else 1.6 + 0.9 * k,
                linestyle=LINESTYLES[(n - 1 - k) % len(LINESTYLES)], marker=MARKERS[k % len(MARKERS)],
                markersize=3.5 + 1.5 * k, zorder=2 + n - k)
        end = (len(ys), round(100 * ys[-1], 1))
        if end not in labelled:  # one label per distinct end point
            labelled.add(end)
            ax.annotate(f"{100 * ys[-1]:.0f}%", (xs[-1], 100 * ys[-1]), xytext=(8, 0), textcoords="offset points",
                        va="center", fontsize=9, color=colour if n == 1 else "black", fontweight="bold")
    ax.set_xlim(0.5, longest + 0.9)
    ax.set_ylim(-3, 103)
    ax.set_xticks(_int_ticks(longest))
    ax.set_xlabel("outer iteration (one step per task)")
    ax.set_ylabel("tasks with a correct kernel (%)")
    _header(fig, ax, "Correctness over the run", data)
    if len(lines) > 1:
        ax.legend(frameon=False, loc="lower right", fontsize=9)
    fig.savefig(path)
    return None


def _int_ticks(n: int) -> list[int]:
    step = max(1, math.ceil(n / 10))
    return list(range(1, n + 1, step))


def fast_p_curve(rows: Sequence[dict[str, Any]], key: str, ps: Sequence[float]) -> list[float]:
    """Share of ALL tasks that are correct with rows[key] > p, for each p."""
    n = len(rows)
    vals = [r[key] for r in rows if r.get("correct") and r.get(key) is not None]
    return [sum(v > p for v in vals) / n if n else 0.0 for p in ps]


def plot_fast_p(path: Path, data: dict[str, Any]) -> str | None:
    rows = data.get("tasks", [])
    keys = [b for b in BASELINES if any(r.get(f"speedup_{b}") is not None for r in rows)]
    if not keys:
        return "no task has a baseline latency (eager and torch.compile are timed on a GPU only)"
    top = max([r[f"speedup_{b}"] for b in keys for r in rows if r.get(f"speedup_{b}")] + [2.5])
    top = min(top * 1.1, 20.0)
    ps = [top * k / 400 for k in range(401)]
    fig, ax = _figure(7.5, 4.5)
    _style(ax)
    for b, colour in zip(BASELINES, (BLUE, ORANGE)):
        if b not in keys:
            continue
        ys = [100 * y for y in fast_p_curve(rows, f"speedup_{b}", ps)]
        ax.step(ps, ys, where="post", color=colour, linewidth=2, label=f"vs {BASELINE_LABEL[b]}")
        marks = [p for p in FAST_PS if p <= top]
        my = [100 * y for y in fast_p_curve(rows, f"speedup_{b}", marks)]
        ax.scatter(marks, my, color=colour, s=22, zorder=3)
        if 1.0 in marks:
            y1 = my[marks.index(1.0)]
            right = b == "eager"
            ax.annotate(f"fast₁ {y1:.0f}%", (1.0, y1), xytext=(8, 6) if right else (-8, -6),
                        textcoords="offset points", fontsize=9, color=colour, fontweight="bold",
                        ha="left" if right else "right", va="bottom" if right else "top",
                        bbox=dict(boxstyle="round,pad=0.15", facecolor="white", edgecolor="none", alpha=0.85))
    ax.axvline(1.0, color=GREY, linestyle=":", linewidth=1)
    correct = 100 * sum(bool(r.get("correct")) for r in rows) / len(rows)
    ax.axhline(correct, color=GREY, linestyle="--", linewidth=1)
    ax.annotate(f"correct {correct:.0f}% (the ceiling)", (top, correct), xytext=(-2, 3), textcoords="offset points",
                ha="right", va="bottom", fontsize=8, color=GREY)
    ax.set_xlim(0, top)
    ax.set_ylim(-3, 103)
    ax.set_xlabel("speedup threshold p (×, baseline latency / kernel latency)")
    ax.set_ylabel("fast_p: tasks correct and > p× faster (%)")
    _header(fig, ax, "fast_p over the threshold p (denominator: all tasks)", data, speed=True)
    ax.legend(frameon=False, fontsize=9, loc="center right")
    fig.savefig(path)
    return None


def plot_arms(path: Path, data: dict[str, Any]) -> str | None:
    arms = data.get("arms") or []
    if not arms:
        return "the result has no arms"
    fig, ax = _figure(max(5.5, 1.7 * len(arms) + 2), 4.5)
    _style(ax)
    xs = list(range(len(arms)))
    vals = [100 * a["metrics"]["correct_rate"] for a in arms]
    bars = ax.bar(xs, vals, color=[ARM_COLOURS[k % len(ARM_COLOURS)] for k in xs], width=0.6)
    for bar, a, v in zip(bars, arms, vals):
        m = a["metrics"]
        extra = m.get("median_speedup_over_first")
        note = f"{v:.0f}%" + (f"\nmedian best/first {extra:.2f}×" if extra else "")
        ax.annotate(note, (bar.get_x() + bar.get_width() / 2, v), xytext=(0, 4), textcoords="offset points",
                    ha="center", va="bottom", fontsize=9, fontweight="bold")
    ax.set_xticks(xs, [a.get("label", a["name"]).replace(", ", ",\n").replace(" (", "\n(") for a in arms], fontsize=9)
    ax.set_ylim(0, 118)
    ax.set_ylabel("tasks with a correct kernel (%)")
    _header(fig, ax, "Correctness at equal budget, by arm", data, speed=True)
    fig.savefig(path)
    return None
