"""What a prompt shows of the memory, the start point and the hardware, said once.

A refine step can retrieve the start point's own trace, two traces of the
same code from two runs, and the experiences written beside them. Shown as
they come, one kernel appears three times and latencies of identical code
20% apart look like a finding. Here each kernel is one entry, keyed by its
normalised source (formatting and comments do not make two kernels
different), carrying every verdict and latency it earned and the verifier's
words on it; the start point absorbs the entries of its own code; the best
kernel, when it is not the start point, is shown as a diff against it.

The hardware section states the device's measured limits and the task's
floor, and the start point's position against both; latencies that come from
an interpreter or a model are labelled as what they are.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from backends import LatencySource, parse_python

from ._views import MemoryView, StartPoint


def fence(text: str, lang: str = "") -> str:
    """Wrap `text` in a code fence longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text.rstrip()}\n{ticks}"


def fmt_ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g} ms"


def fmt_x(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}x"


def _unfence(code: str) -> str:
    lines = code.strip().splitlines()
    if len(lines) >= 2 and lines[0].startswith(("```", "~~~")) and lines[-1].strip() in ("```", "~~~", "````"):
        return "\n".join(lines[1:-1])
    return code


def source_key(code: str) -> str:
    """The identity of a kernel's source: the same code reformatted or recommented has the same key."""
    text = _unfence(code).strip()
    try:
        norm = ast.unparse(parse_python(text))
    except (SyntaxError, ValueError, RecursionError):
        norm = "\n".join(re.sub(r"\s+", " ", line.split("#", 1)[0]).strip() for line in text.splitlines())
        norm = "\n".join(line for line in norm.splitlines() if line)
    return hashlib.sha1(norm.encode()).hexdigest()[:16]


# --- latency labels ------------------------------------------------------------


def measured(source: LatencySource | None) -> bool:
    return source is not None and LatencySource(source).measured


def latency_words(latency_ms: float | None, source: LatencySource | None, iqr_ms: float | None = None,
                  runs: int | None = None) -> str:
    """A latency with what it is: a measurement with its spread, or an interpreter's or model's number."""
    if latency_ms is None:
        return "no latency"
    source = LatencySource(source) if source is not None else None
    if source is not None and source.interpreted:
        return f"{fmt_ms(latency_ms)} in a CPU interpreter ({source}: a correctness run, not speed)"
    if source is not None and source.modelled:
        return f"{fmt_ms(latency_ms)} from a cost model ({source}, not a measurement)"
    spread = []
    if runs:
        spread.append(f"median of {runs} runs")
    if iqr_ms is not None and iqr_ms > 0:
        spread.append(f"IQR {fmt_ms(iqr_ms)}")
    detail = f" ({', '.join(spread)}{'; ' if spread and source else ''}{source or ''})" if spread or source else ""
    return f"{fmt_ms(latency_ms)}{detail}"


@dataclass(frozen=True)
class Outcome:
    """One verdict a kernel earned."""

    status: str | None
    latency_ms: float | None = None
    latency_iqr_ms: float | None = None
    latency_source: LatencySource | None = None

    def words(self) -> str:
        status = self.status or "unknown"
        if self.latency_ms is None:
            return status
        return f"{status} in {latency_words(self.latency_ms, self.latency_source, self.latency_iqr_ms)}"


def spread_note(outcomes: Sequence[Outcome]) -> str:
    """When one piece of code was timed more than once, say how far apart the numbers are, and what that means."""
    times = [o.latency_ms for o in outcomes if o.latency_ms and measured(o.latency_source)]
    if len(times) < 2:
        return ""
    lo, hi = min(times), max(times)
    pct = (hi - lo) / lo * 100
    iqrs = [o.latency_iqr_ms for o in outcomes if o.latency_iqr_ms]
    within = f"; each run's IQR is up to {fmt_ms(max(iqrs))}" if iqrs else ""
    return (f"The same code measured {fmt_ms(lo)} to {fmt_ms(hi)} ({pct:.0f}% apart{within}): a difference this "
            "size between identical code is timing noise, so compare new kernels by more than it.")


# --- grouping the memories ---------------------------------------------------------

_EMPTY_EXPERIENCE = re.compile(r"^[^\n]*:\s*(?:in)?feasible \(verdict: [\w-]+\)\.?\s*$")


def empty_experience(text: str) -> bool:
    """An experience that says only that a step was (in)feasible: nothing to learn from."""
    return bool(_EMPTY_EXPERIENCE.match(text.strip()))


@dataclass
class Unit:
    """One entry of the memory section: what trimming keeps or drops as a whole."""

    kind: str  # "trace", "experience", "best_practice", "api_note", "skill", ...
    text: str
    value: float
    members: list[int]  # indices into the memories this entry shows (credited when shown)
    label: str  # how the report names it when dropped
    order: int  # retrieval rank of its first member: among equal values, later ones go first


@dataclass
class Grouped:
    units: list[Unit] = field(default_factory=list)
    start_outcomes: list[Outcome] = field(default_factory=list)
    start_members: list[int] = field(default_factory=list)  # memories merged into the start point
    best_members: list[int] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # not shown, and why
    merged: list[str] = field(default_factory=list)  # shown once as part of another entry
    unshown: list[int] = field(default_factory=list)  # memory indices not shown at all


def _outcome(m: MemoryView) -> Outcome:
    return Outcome(m.status, m.latency_ms, m.latency_iqr_ms, m.latency_source)


def _mem_label(i: int, m: MemoryView) -> str:
    ident = f"#{m.id}" if m.id is not None else f"[{i}]"
    value = "" if m.value is None else f", value {m.value:+.2f}"
    return f"{m.kind} {ident} ({m.title[:60]}{value})"


# A kernel this close to the start point (share of equal lines) is shown as its diff against it.
VARIANT_RATIO = 0.6


def _variant_of(code: str, start_code: str | None) -> bool:
    if not start_code:
        return False
    matcher = difflib.SequenceMatcher(None, _unfence(start_code).strip().splitlines(), _unfence(code).strip().splitlines(),
                                      autojunk=False)
    return matcher.real_quick_ratio() >= VARIANT_RATIO and matcher.ratio() >= VARIANT_RATIO


def group_memories(memories: Sequence[MemoryView], *, start_key: str | None = None, start_id: int | None = None,
                   best_key: str | None = None, seen_keys: frozenset[str] = frozenset(),
                   start_code: str | None = None) -> Grouped:
    """Memories as prompt entries: one per kernel (every outcome and verifier note it earned),
    experiences attached to their kernel, the start point's and best kernel's own entries merged
    into those sections, empty experiences and repeats left out. `seen_keys` are kernels already
    in the conversation (multi-turn): named, not shown again. A kernel close to `start_code`
    (a variant of the start point) is shown as its diff against it."""
    out = Grouped()
    kernels: dict[str, Unit] = {}
    kernel_outcomes: dict[str, list[Outcome]] = {}
    kernel_notes: dict[str, list[str]] = {}
    trace_key: dict[int, str] = {}
    for i, m in enumerate(memories):
        if m.kind != "trace":
            continue
        if not _unfence(m.content).strip():
            out.dropped.append(f"{_mem_label(i, m)}: a step that produced no code")
            out.unshown.append(i)
            continue
        key = source_key(m.content)
        if m.id is not None:
            trace_key[m.id] = key
        if start_id is not None and m.id == start_id:
            out.start_members.append(i)
            out.merged.append(f"{_mem_label(i, m)} is the start point itself")
            continue
        if key == start_key:
            out.start_outcomes.append(_outcome(m))
            out.start_members.append(i)
            out.merged.append(f"{_mem_label(i, m)} is the start point's code: its result is shown there")
            continue
        if key == best_key:
            out.best_members.append(i)
            out.merged.append(f"{_mem_label(i, m)} is the best kernel's code: shown as its diff")
            continue
        if key in seen_keys:
            out.merged.append(f"{_mem_label(i, m)} is code already in this conversation")
            out.unshown.append(i)
            continue
        if key in kernels:
            unit = kernels[key]
            unit.members.append(i)
            unit.value = max(unit.value, m.value or 0.0)
            out.merged.append(f"{_mem_label(i, m)} has the same code as another entry: shown once")
        else:
            kernels[key] = Unit("trace", "", m.value or 0.0, [i], _mem_label(i, m), i)
            kernel_notes[key] = []
        kernel_outcomes.setdefault(key, []).append(_outcome(m))
    seen_text: set[str] = set()
    others: list[Unit] = []
    for i, m in enumerate(memories):
        if m.kind == "trace":
            continue
        text = m.content.strip()
        if m.kind == "experience":
            if empty_experience(text):
                out.dropped.append(f"{_mem_label(i, m)}: says only the verdict")
                out.unshown.append(i)
                continue
            parent = trace_key.get(m.parent_id) if m.parent_id is not None else None
            if parent is not None and parent in kernels:
                if text not in kernel_notes[parent]:
                    kernel_notes[parent].append(text)
                kernels[parent].members.append(i)
                out.merged.append(f"{_mem_label(i, m)} is shown with its kernel")
                continue
            if (parent is not None and parent == start_key) or (start_id is not None and m.parent_id == start_id):
                out.start_members.append(i)
                out.merged.append(f"{_mem_label(i, m)} is about the start point: its facts are shown there")
                continue
        norm = " ".join(text.split())
        if norm in seen_text:
            out.merged.append(f"{_mem_label(i, m)} repeats another entry's text")
            out.unshown.append(i)
            continue
        seen_text.add(norm)
        others.append(Unit(m.kind, format_memory(m), m.value or 0.0, [i], _mem_label(i, m), i))
    for key, unit in kernels.items():
        first = memories[unit.members[0]]
        variant = _variant_of(first.content, start_code)
        unit.text = _kernel_entry(first, kernel_outcomes[key], kernel_notes[key],
                                  against=start_code if variant else None)
    out.units = sorted([*kernels.values(), *others], key=lambda u: u.order)
    return out


def _kernel_entry(first: MemoryView, outcomes: list[Outcome], notes: list[str], against: str | None = None) -> str:
    runs = "; ".join(o.words() for o in outcomes)
    title = first.title.strip() or "(untitled)"
    head = (f"### Kernel (a variant of the start point): {title}" if against else f"### Kernel: {title}")
    lines = [f"{head}\nResults: {runs}."]
    if note := spread_note(outcomes):
        lines.append(note)
    for text in notes:
        lines.append("Verifier: " + " ".join(text.split()))
    if against:
        lines.append("Its differences from the start point:")
        lines.append(fence(diff_text(against, first.content, "start_point.py", "variant.py"), "diff"))
    else:
        lines.append(fence(_unfence(first.content).strip(), "python"))
    return "\n".join(lines)


def format_memory(memory: MemoryView) -> str:
    """One memory as a prompt section; the shape depends on its kind."""
    title = memory.title.strip() or "(untitled)"
    if memory.kind == "experience":
        outcome = memory.status or "unknown outcome"
        return f"### Experience ({outcome}): {title}\n{memory.content.strip()}"
    if memory.kind == "trace":
        return _kernel_entry(memory, [_outcome(memory)], [])
    if memory.kind == "best_practice":
        return f"### Best practice: {title}\n{memory.content.strip()}"
    if memory.kind == "api_note":
        return f"### API note: {title}\n{memory.content.strip()}"
    if memory.kind == "skill":
        return f"### Skill: {title}\n{memory.content.strip()}"
    return f"### Note ({memory.kind}): {title}\n{memory.content.strip()}"


# --- hardware and roofline ------------------------------------------------------------


def _si(n: float, unit: str) -> str:
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= scale:
            return f"{n / scale:.4g} {prefix}{unit}"
    return f"{n:.4g} {unit}"


def hardware_section(hardware: Any, cost: Any, latency_source: LatencySource | None) -> str:
    """The device's measured limits and the task's floor; or, off a GPU, what the latencies here are."""
    lines = ["## Hardware and the task's floor"]
    if hardware is not None and getattr(hardware, "is_gpu", False):
        facts = [f"{hardware.device_name}"]
        if hardware.sm_count:
            facts.append(f"{hardware.sm_count} SMs")
        if hardware.l2_bytes:
            facts.append(f"L2 {hardware.l2_bytes / 2**20:.0f} MiB")
        if hardware.memory_bytes:
            facts.append(f"{hardware.memory_bytes / 1e9:.0f} GB memory")
        peaks = ", ".join(f"{dtype} {tf:.4g}" for dtype, tf in sorted(hardware.peak_tflops.items(),
                                                                       key=lambda kv: -kv[1]))
        lines.append(f"Device: {', '.join(facts)}. Measured here: copy bandwidth {hardware.copy_gbps:.4g} GB/s "
                     f"(bytes read + written); matmul rate in TFLOP/s {peaks}.")
    elif latency_source and not measured(latency_source):
        lines.append(f"No GPU runs these kernels here: latencies are labelled `{latency_source}`. "
                     + ("They come from a CPU interpreter and check correctness only: they are not speed, so do "
                        "not tune for them; write the kernel you would write for the real device."
                        if LatencySource(latency_source).interpreted else
                        "They come from a cost model of the target, not from a measurement."))
    if cost is not None and (cost.min_bytes or cost.flops):
        dtype = f" ({cost.dtype})" if cost.dtype else ""
        work = (f"does {_si(cost.flops, 'FLOP')} of matmul/convolution work{dtype}" if cost.flops
                else f"does no matmul or convolution work{dtype}: it is memory-bound")
        task = (f"This task moves at least {_si(cost.min_bytes or 0, 'B')} (inputs and weights read once, "
                f"outputs written once) and {work}")
        floors = []
        if hardware is not None and getattr(hardware, "is_gpu", False):
            if cost.min_bytes:
                floors.append(f"{fmt_ms(cost.min_bytes / (hardware.copy_gbps * 1e9) * 1e3)} at copy bandwidth")
            peak = hardware.peak_tflops.get(cost.dtype or "")
            if cost.flops and peak:
                floors.append(f"{fmt_ms(cost.flops / (peak * 1e12) * 1e3)} at the {cost.dtype} matmul rate")
        lines.append(task + (": no kernel beats " + " or ".join(floors) + "." if floors else "."))
    return "\n".join(lines) if len(lines) > 1 else ""


def roofline_words(latency_ms: float | None, source: LatencySource | None, hardware: Any, cost: Any,
                   min_bytes: int | None = None) -> str:
    """Where a measured latency stands against the copy bandwidth and the matmul rate."""
    if latency_ms is None or not measured(source) or hardware is None or not getattr(hardware, "is_gpu", False):
        return ""
    seconds = latency_ms * 1e-3
    parts = []
    moved = min_bytes or (cost.min_bytes if cost is not None else None)
    if moved:
        gbps = moved / seconds / 1e9
        parts.append(f"{gbps:.4g} GB/s of the minimum traffic, {gbps / hardware.copy_gbps:.0%} of copy bandwidth")
    if cost is not None and cost.flops:
        peak = hardware.peak_tflops.get(cost.dtype or "")
        tflops = cost.flops / seconds / 1e12
        parts.append(f"{tflops:.4g} TFLOP/s" + (f", {tflops / peak:.0%} of the {cost.dtype} matmul rate" if peak else ""))
    return ("Against the roofline: " + "; ".join(parts) + ".") if parts else ""


def diff_text(old: str, new: str, old_name: str = "start_point.py", new_name: str = "best.py") -> str:
    return "\n".join(difflib.unified_diff(_unfence(old).strip().splitlines(), _unfence(new).strip().splitlines(),
                                          old_name, new_name, lineterm="", n=2))


def start_point_section(start: StartPoint, *, outcomes: Sequence[Outcome], hardware: Any, cost: Any,
                        latency_source: LatencySource | None, code_shown_as: str | None = None) -> str:
    """The kernel to improve, its measurements, its roofline position and the other results of its code.
    `code_shown_as` replaces the code with a reference when the conversation already holds it."""
    source = start.latency_source or latency_source
    speed = ""
    if start.speedup_eager is not None or start.speedup_compile is not None:
        speed = (f"; speedup over eager PyTorch {fmt_x(start.speedup_eager)}, over torch.compile "
                 f"{fmt_x(start.speedup_compile)}")
    lines = ["## Start point: the kernel to make faster",
             f"Latency {latency_words(start.latency_ms, source, start.latency_iqr_ms, start.timing_runs)}{speed}."]
    if roof := roofline_words(start.latency_ms, source, hardware, cost, start.min_bytes):
        lines.append(roof)
    if outcomes:
        lines.append("Other results of this same code: " + "; ".join(o.words() for o in outcomes) + ".")
        own = Outcome("ok", start.latency_ms, start.latency_iqr_ms, source)
        if note := spread_note([own, *outcomes]):
            lines.append(note)
    if start.facts:
        lines.append("Bottleneck facts:")
        lines.extend(f"- {fact}" for fact in start.facts)
    lines.append(code_shown_as or fence(_unfence(start.code).strip(), "python"))
    return "\n".join(lines)


def best_section(start: StartPoint, best: StartPoint, latency_source: LatencySource | None) -> str:
    diff = diff_text(start.code, best.code)
    if not diff:
        return ""
    source = best.latency_source or latency_source
    return "\n".join([
        "## The best kernel so far is not the start point",
        f"It runs in {latency_words(best.latency_ms, source, best.latency_iqr_ms)}. Its differences from the "
        "start point:",
        fence(diff, "diff"),
    ])
