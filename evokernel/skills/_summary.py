"""Skill summary: turn one improving step into a proposed skill.

With an LLM driving the run, the model reads the kernels before and after
(and their latencies) and writes the skill: its own call, logged and costed
like every other. Without one, the skill is assembled from the builtin
policy's change: which launch configuration or structure parameter differed
between the start point and the faster kernel, what that parameter does, and
the diff of the two sources as its sketch.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
from typing import Any

from backends import LatencySource

from ._types import Evidence, Scope, SkillDraft, Usage

_MAX_SKETCH_LINES = 24
_MAX_CODE_CHARS = 6000

# What each configuration parameter of the builtin generators controls, in words.
_MEANING = {
    "block_n": ("elements (or row chunk) each program handles", "fewer programs, each with longer contiguous accesses",
                "more programs, each with a smaller tile: more parallelism, less register pressure"),
    "block_m": ("rows each program handles", "fewer programs, each reducing several rows at once",
                "more programs over fewer rows each: more parallelism"),
    "block_k": ("depth of each matmul tile step", "fewer loop iterations over K with larger tiles",
                "smaller K steps: less shared memory per stage"),
    "num_warps": ("warps per program", "more threads per program to cover its tile",
                  "fewer threads per program: less synchronisation on a small tile"),
    "num_stages": ("software-pipelining depth of the K loop", "more loads in flight while computing",
                   "fewer stages: less shared memory, more programs resident"),
    "group_m": ("tile swizzle (row blocks grouped for L2 reuse)", "wider groups: more reuse of B tiles in L2",
                "narrower groups"),
    "split_k": ("K slices reduced in parallel", "more programs when M x N alone gives too few",
                "fewer K slices: less partial-sum traffic"),
    "one_pass": ("whole row kept in registers (one pass) or streamed in chunks (multi-pass)", "", ""),
    "precision": ("product precision of the dot", "", ""),
    "tile_bytes": ("bytes each core moves per tile", "fewer, longer transfers per core",
                   "smaller tiles: more pipelining steps within the buffer"),
    "block_dim": ("cores the kernel is launched on", "more cores in parallel", "fewer cores: less per-core overhead"),
    "buffer_num": ("buffers per queue (double buffering)", "copy-in overlapped with compute", "single buffering"),
}


@dataclasses.dataclass(frozen=True)
class Improvement:
    """One step that made a task's kernel at least `min_speedup` times faster than its start point."""

    task_key: str
    task_name: str
    task_source: str
    category: str
    backend: str
    stage: str
    before_item_id: int
    before_code: str
    before_extra: dict[str, Any]
    before_ms: float
    after_code: str
    after_extra: dict[str, Any]
    after_key_text: str
    after_ms: float
    latency_source: LatencySource

    @property
    def speedup(self) -> float:
        return self.before_ms / self.after_ms

    def evidence(self, *, after_item_id: int | None = None, verification: dict[str, Any] | None = None) -> Evidence:
        return Evidence(self.task_key, self.task_name, self.before_item_id, after_item_id, self.before_ms, self.after_ms,
                        self.latency_source, dict(verification or {}))

    def diff(self, limit: int = _MAX_SKETCH_LINES) -> str:
        """The changed lines of the two kernels (a unified diff without its long context)."""
        lines = list(difflib.unified_diff(self.before_code.splitlines(), self.after_code.splitlines(),
                                          "before.py", "after.py", n=0, lineterm=""))
        if len(lines) > limit:
            lines = lines[:limit] + [f"... ({len(lines) - limit} more diff lines)"]
        return "\n".join(lines)


def _described(key_text: str, label: str) -> str:
    """A `label: ...` line of the builtin policy's plan description (in the trace's key text)."""
    for line in key_text.splitlines():
        for part in line.split(";"):
            part = part.strip()
            if part.startswith(f"{label}:"):
                return part[len(label) + 1:].strip()
    return ""


def scope_of(imp: Improvement) -> Scope:
    ops = [o.strip() for o in _described(imp.after_key_text, "ops").split(",") if o.strip()]
    pattern = _described(imp.after_key_text, "pattern")
    operators = tuple(dict.fromkeys([*( [pattern] if pattern else []), *ops] or [imp.category or imp.task_name]))
    shapes = "; ".join(f"{label} {text}" for label in ("operands", "output")
                       if (text := _described(imp.after_key_text, label)))
    return Scope(operators, shapes, imp.backend, str(imp.after_extra.get("family") or ""))


def config_change(before: dict[str, Any], after: dict[str, Any]) -> tuple[str, str, dict, dict] | None:
    """(config key, family, changed values after, their values before) of the first configuration
    record both kernels carry (the builtin policies keep theirs in the trace's `extra`)."""
    for key, value in after.items():
        old = before.get(key)
        if not (isinstance(value, dict) and isinstance(old, dict)) or value.get("family") != old.get("family"):
            continue
        changed = {k: v for k, v in value.items() if k != "family" and old.get(k) != v}
        if changed:
            return key, str(value.get("family") or ""), changed, {k: old.get(k) for k in changed}
    return None


def _explain(name: str, before: Any, after: Any) -> str:
    what, up, down = _MEANING.get(name, (name.replace("_", " "), "", ""))
    if isinstance(after, bool) or not isinstance(after, (int, float)) or not isinstance(before, (int, float)):
        return f"{name} {before} -> {after} ({what})"
    effect = up if after > before else down
    return f"{name} {before} -> {after} ({what}{': ' + effect if effect else ''})"


def builtin_draft(imp: Improvement) -> SkillDraft | None:
    """The skill the builtin policy's change makes: None when no configuration differs
    (nothing this summariser can name as the cause)."""
    change = config_change(imp.before_extra, imp.after_extra)
    if change is None:
        return None
    config_key, family, after, before = change
    scope = scope_of(imp)
    settings = ", ".join(f"{k}={v}" for k, v in sorted(after.items()))
    title = f"{family or imp.category} kernels: {settings}"
    technique = (f"On {', '.join(scope.operators[:3])} the change " + "; ".join(
        _explain(k, before[k], after[k]) for k in sorted(after)) + f" made the kernel {imp.speedup:.2f}x faster "
        f"({imp.before_ms:.4g} -> {imp.after_ms:.4g} ms, {imp.latency_source}). Try these settings first on "
        f"kernels of the same family and similar shapes.")
    hint = {"config_key": config_key, "family": family, "set": after, "from": before}
    return SkillDraft(title=title, scope=scope, technique=technique, sketch=imp.diff(), evidence=imp.evidence(),
                      source="builtin", hint=hint)


# --- the LLM's summary --------------------------------------------------------------

SUMMARY_SYSTEM = (
    "You maintain a library of kernel-optimisation skills that an agent reuses on other operators. From one "
    "successful optimisation (the kernel before, the faster kernel after, both measured), distil the reusable "
    "technique. Answer with one JSON object and nothing else:\n"
    '{"title": "<short imperative name of the technique>", '
    '"applies_to": {"operators": ["<operator patterns>"], "shapes": "<shapes or sizes it suits>"}, '
    '"technique": "<2-4 sentences: what changed and why it is faster>", '
    '"sketch": "<a short code sketch of the change, at most 15 lines>"}'
)


def _clip(text: str, limit: int = _MAX_CODE_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit // 2] + "\n# [...]\n" + text[-limit // 2:]


def summary_request(imp: Improvement) -> str:
    src = "" if not imp.latency_source.interpreted else (
        " (a CPU interpreter's wall clock: it follows the number of program instances, not GPU speed)")
    return "\n\n".join([
        f"Task: {imp.task_name} on {imp.backend}.",
        "Reference (`Model`):\n```python\n" + _clip(imp.task_source, 2500) + "\n```",
        f"Before ({imp.before_ms:.4g} ms{src}):\n```python\n" + _clip(imp.before_code) + "\n```",
        f"After ({imp.after_ms:.4g} ms, {imp.speedup:.2f}x faster):\n```python\n" + _clip(imp.after_code) + "\n```",
        "Their differences:\n```diff\n" + imp.diff(60) + "\n```",
    ])


_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def parse_summary(text: str) -> dict[str, Any] | None:
    """The JSON object of a summary answer (fenced or not); None when there is none with a title and a technique."""
    from evokernel.llm import split_reasoning

    answer = split_reasoning(text).answer
    match = _OBJECT.search(answer)
    if match is None:
        return None
    try:
        data = json.loads(match.group(0))
    except ValueError:
        return None
    if not isinstance(data, dict) or not str(data.get("title") or "").strip() or not str(data.get("technique") or "").strip():
        return None
    return data


def llm_draft(imp: Improvement, client: Any, *, run_id: int | None) -> tuple[SkillDraft | None, Usage, str]:
    """Ask the model for the skill. Returns the draft (None when the call failed or the answer
    was unusable), the call's usage, and what happened in words."""
    from evokernel.llm import LLMError

    try:
        completion = client.complete([{"role": "user", "content": summary_request(imp)}], system=SUMMARY_SYSTEM,
                                     max_tokens=1200, temperature=0.0, run_id=run_id,
                                     log_extra={"purpose": "skill-summary", "task": imp.task_name})
    except LLMError as exc:
        return None, Usage(), f"the skill summary call failed: {exc}"
    usage = Usage.of(completion)
    data = parse_summary(completion.text)
    if data is None:
        return None, usage, "the skill summary answer held no JSON object with a title and a technique"
    applies = data.get("applies_to") if isinstance(data.get("applies_to"), dict) else {}
    operators = applies.get("operators") or []
    if isinstance(operators, str):
        operators = [operators]
    base = scope_of(imp)
    scope = Scope(tuple(str(o) for o in operators if str(o).strip()) or base.operators,
                  str(applies.get("shapes") or base.shapes), imp.backend, base.family)
    sketch = str(data.get("sketch") or "").strip() or imp.diff()
    draft = SkillDraft(title=" ".join(str(data["title"]).split())[:120], scope=scope,
                       technique=str(data["technique"]).strip(), sketch="\n".join(sketch.splitlines()[:_MAX_SKETCH_LINES]),
                       evidence=imp.evidence(), source="llm", model=client.spec, call_id=completion.call_id)
    return draft, usage, "summarised by the model"
