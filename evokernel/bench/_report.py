"""A results file (from `evokernel bench` or `evokernel ablate`) as a markdown
report with plots a person would rather look at than the numbers.

    files = write_report(json.loads(Path("results.json").read_text()), "report/")

The plots live in `_plots`; a plot whose data is missing is skipped, with
the reason in the report.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, Sequence

from . import _plots
from ._metrics import BASELINES, FAST_PS, fast_key
from ._plots import BASELINE_LABEL


class ReportError(ValueError):
    """A file that is not an EvoKernel bench or ablation result."""


@dataclasses.dataclass
class ReportFiles:
    markdown: Path
    images: list[Path]
    skipped: list[str]  # "plot: why" for each plot not drawn


def kind_of(data: dict[str, Any]) -> str:
    kind = data.get("kind")
    if kind in ("evokernel-bench", "evokernel-ablation"):
        return kind
    if "metrics" in data and "tasks" in data:  # a result written before `kind` existed
        return "evokernel-bench"
    raise ReportError("not an EvoKernel result: expected the JSON that `evokernel bench` or `evokernel ablate` writes")


def write_report(data: dict[str, Any], out_dir: str | os.PathLike[str]) -> ReportFiles:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    kind = kind_of(data)
    images: list[Path] = []
    skipped: list[str] = []
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        skipped.append("all plots: matplotlib is not installed (pip install matplotlib)")
        plots = False
    else:
        plots = True
    if kind == "evokernel-bench":
        if plots:
            _draw(images, skipped, out, "speedups.png", _plots.plot_speedups, data)
            curve = [("run", data.get("accuracy_by_iteration") or [])]
            _draw(images, skipped, out, "accuracy.png", _plots.plot_accuracy, curve, data)
            _draw(images, skipped, out, "fast_p.png", _plots.plot_fast_p, data)
        text = _bench_markdown(data, images, skipped)
    else:
        if plots:
            arms = data.get("arms", [])
            _draw(images, skipped, out, "arms.png", _plots.plot_arms, data)
            _draw(images, skipped, out, "accuracy.png", _plots.plot_accuracy,
                  [(a.get("label", a["name"]), a.get("accuracy_by_iteration") or []) for a in arms], data)
        text = _ablation_markdown(data, images, skipped)
    md = out / "report.md"
    md.write_text(text)
    return ReportFiles(md, images, skipped)


def _draw(images: list[Path], skipped: list[str], out: Path, name: str, fn, *args) -> None:
    why = fn(out / name, *args)
    if why:
        skipped.append(f"{name}: {why}")
    else:
        images.append(out / name)


# --- markdown -----------------------------------------------------------------------


def _fmt(v: Any, kind: str = "") -> str:
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if kind == "%":
        return f"{100 * v:.1f}%"
    if kind == "x":
        return f"{v:.2f}×"
    if kind == "ms":
        return f"{v:.4g}"
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _environment_md(env: dict[str, Any]) -> str:
    tol = env.get("tolerance") or {}
    defaults = ", ".join(f"{k} {v[0]:g}/{v[1]:g}" for k, v in (tol.get("default_atol_rtol") or {}).items())
    overrides = ", ".join(f"{k} {v[0]:g}/{v[1]:g}" for k, v in (tol.get("task_overrides") or {}).items()) or "none"
    rows = [
        ("device", f"{env.get('device_name', '')} (`{env.get('device', '')}`)"),
        ("task size", env.get("size", "")),
        ("precision", env.get("precision", "fp32")),  # results made before --precision ran the tasks as written
        ("versions", ", ".join(f"{k} {env.get(k)}" for k in ("torch", "triton", "python", "evokernel"))),
        ("commit", f"`{env.get('git_commit')}`" if env.get("git_commit") else "–"),
        ("tolerance (atol/rtol)", f"defaults {defaults}; task overrides: {overrides}"),
        ("correctness trials", env.get("trials", "")),
        ("timing", env.get("timing_method", "")),
        ("command", f"`{env.get('command', '')}`"),
        ("date (UTC)", env.get("date_utc", "")),
    ]
    return _table(("", ""), rows)


def _images_md(images: list[Path], skipped: list[str]) -> list[str]:
    out = [line for p in images for line in (f"![{p.stem}]({p.name})", "")]
    out += [f"- plot skipped: {s}" for s in skipped]
    return out


def _headline_rows(m: dict[str, Any]) -> list[tuple[str, str]]:
    first = m.get("attempts_to_first_correct") or {}
    rows = [
        ("correct", f"{_fmt(m['correct_rate'], '%')} ({m['correct']}/{m['tasks']})"),
        ("compiled", f"{_fmt(m['compile_rate'], '%')} ({m['compiled']}/{m['tasks']})"),
        ("stopped by the policy", str(m.get("stopped", 0))),
        ("attempts (all tasks)", str(m.get("attempts", 0))),
        ("attempts to first correct, mean / median",
         f"{_fmt(first.get('mean'))} / {_fmt(first.get('median'))} (n={first.get('n', 0)})"),
        ("median speedup best/first", f"{_fmt(m.get('median_speedup_over_first'), 'x')} (n={m.get('n_speedup_over_first', 0)})"),
    ]
    for b in BASELINES:
        rows.append((f"geomean / median speedup vs {BASELINE_LABEL[b]}",
                     f"{_fmt(m.get(f'geomean_speedup_{b}'), 'x')} / {_fmt(m.get(f'median_speedup_{b}'), 'x')} "
                     f"(n={m.get(f'n_speedup_{b}', 0)})"))
    llm = m.get("llm")
    if llm:
        rows.append(("LLM tokens in / out", f"{llm['tokens_in']} / {llm['tokens_out']}"))
        per = llm.get("cost_per_solved_usd")
        rows.append(("LLM cost", f"${llm['cost_usd']:.4f}" + (f" (${per:.4f} per solved task)" if per is not None else "")))
    return rows


def _bench_markdown(data: dict[str, Any], images: list[Path], skipped: list[str]) -> str:
    m = data["metrics"]
    parts = [f"# EvoKernel benchmark: {Path(str(data.get('suite', ''))).name}", "",
             f"{m['tasks']} tasks, policy `{data.get('policy')}`, budget {data.get('options', {}).get('budget')} steps per task, "
             f"memory: {data.get('memory') or 'fresh temporary memory'}.", ""]
    if not m.get("speed_comparable", True):
        parts += [f"> **Speed numbers are not comparable with GPU results.** {m.get('speed_note') or ''}", ""]
    parts += ["## Headline", "", _table(("metric", "value"), _headline_rows(m)), ""]
    fast_rows = [(fast_key(p), *(_fmt((m.get(f"fast_{b}") or {}).get(fast_key(p)), "%") for b in BASELINES)) for p in FAST_PS]
    parts += ["## fast_p (share of all tasks correct and more than p× faster)", "",
              _table(("p", *(f"vs {BASELINE_LABEL[b]}" for b in BASELINES)), fast_rows), ""]
    parts += ["## Plots", "", *_images_md(images, skipped), ""]
    task_rows = [
        (r["name"], _fmt(r["correct"]), str(r["attempts"]), _fmt(r.get("first_correct_attempt")),
         _fmt(r.get("first_latency_ms"), "ms"), _fmt(r.get("best_latency_ms"), "ms"),
         _fmt(r.get("speedup_over_first"), "x"), _fmt(r.get("speedup_eager"), "x"), _fmt(r.get("speedup_compile"), "x"),
         (r.get("stopped") or "")[:90])
        for r in data.get("tasks", [])
    ]
    parts += ["## Tasks", "", _table(("task", "correct", "attempts", "first correct at", "first ms", "best ms",
                                       "best/first", "vs eager", "vs compile", "stopped"), task_rows), ""]
    parts += ["## Environment", "", _environment_md(data.get("environment", {})), ""]
    return "\n".join(parts)


def _ablation_markdown(data: dict[str, Any], images: list[Path], skipped: list[str]) -> str:
    arms = data.get("arms", [])
    n = arms[0]["metrics"]["tasks"] if arms else 0
    parts = [f"# EvoKernel ablation: {Path(str(data.get('suite', ''))).name}", "",
             f"{n} tasks, policy `{data.get('policy')}`, budget {data.get('options', {}).get('budget')} steps per task "
             "in every arm; each arm in its own fresh memory.", ""]
    if arms and not arms[0]["metrics"].get("speed_comparable", True):
        parts += [f"> **Speed numbers are not comparable with GPU results.** {arms[0]['metrics'].get('speed_note') or ''}", ""]
    parts += [f"- note: {note}" for note in data.get("notes", [])] + [""]
    rows = []
    for a in arms:
        m = a["metrics"]
        first = m.get("attempts_to_first_correct") or {}
        rows.append((a.get("label", a["name"]), _fmt(m["correct_rate"], "%"), _fmt(m["compile_rate"], "%"),
                     _fmt((m.get("fast_eager") or {}).get("fast_1"), "%"), _fmt(m.get("median_speedup_over_first"), "x"),
                     f"{_fmt(first.get('mean'))} / {_fmt(first.get('median'))}"))
    parts += ["## Arms", "", _table(("arm", "correct", "compiled", "fast_1 vs eager", "median best/first",
                                      "attempts to first correct (mean / median)"), rows), ""]
    parts += ["## Plots", "", *_images_md(images, skipped), ""]
    parts += ["## Environment", "", _environment_md(data.get("environment", {})), ""]
    return "\n".join(parts)
