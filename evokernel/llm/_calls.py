"""Reading logged calls back: what was sent, what came back, how the answer was read.

`evokernel logs` renders these; they take the rows `CallLog.llm_calls()`
returns (plain dicts, `prompt` decoded), so they work on any bank, old rows
included (missing fields read as absent).
"""

from __future__ import annotations

from typing import Any


def parse_summary(row: dict) -> str:
    """A few words on how the answer was read, for a table cell."""
    parse = (row.get("prompt") or {}).get("parse")
    if not parse:
        return ""
    outcome = parse.get("outcome", "")
    blocks = parse.get("blocks") or []
    chosen = parse.get("chosen") or []
    where = " (reasoning)" if parse.get("source") == "reasoning" else ""
    if outcome == "candidate":
        if not blocks:
            return f"bare code{where}"
        picked = "+".join(str(i) for i in chosen) or "?"
        return f"block {picked} of {len(blocks)}{where}"
    if outcome == "truncated" and parse.get("cut_line"):
        return f"truncated at line {parse['cut_line']}"
    return outcome


def _tokens(row: dict) -> str:
    prompt = row.get("prompt") or {}
    text = f"in {row.get('tokens_in', 0)}"
    if prompt.get("cached_tokens_in"):
        text += f" (cached {prompt['cached_tokens_in']})"
    if prompt.get("cache_write_tokens"):
        text += f" (cache write {prompt['cache_write_tokens']})"
    text += f", out {row.get('tokens_out', 0)}"
    if prompt.get("reasoning_tokens"):
        text += f" (reasoning {prompt['reasoning_tokens']})"
    return text


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n\n".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


def format_call(row: dict, *, show_prompt: bool = True) -> str:
    """One call in full: the header, the parse decisions, then the prompt and the answer."""
    prompt = row.get("prompt") or {}
    cost = row.get("cost_usd")
    lines = [
        f"call {row.get('id')}  {row.get('provider')}:{row.get('model')}  run {row.get('run_id')}  "
        f"step {row.get('step_id')}  {row.get('created_utc', '')}",
        f"tokens {_tokens(row)}; cost {'n/a' if cost is None else f'${cost:.4f}'}; "
        f"latency {row.get('latency_ms') or 0:.0f} ms; finish {prompt.get('finish_reason')}"
        + ("; answered from the response cache" if prompt.get("cache_hit") else ""),
    ]
    if row.get("error"):
        lines.append(f"error: {row['error']}")
    report = prompt.get("report") or {}
    if report:
        lines.append(f"prompt: {report.get('tokens')} tokens of a budget of {report.get('token_budget')} "
                     f"({report.get('counter')})")
        for dropped in report.get("dropped") or []:
            lines.append(f"  dropped: {dropped}")
        for note in report.get("notes") or []:
            lines.append(f"  note: {note}")
    parse = prompt.get("parse")
    if parse:
        origin = f" from the {parse['source']}" if parse.get("source") not in (None, "none") else ""
        lines.append(f"parse: {parse.get('outcome')}{origin}: {parse.get('decision')}")
        if parse.get("reasoning_chars"):
            lines.append(f"  reasoning set apart: {parse.get('reasoning_sections', 0)} inline section(s), "
                         f"{parse['reasoning_chars']} characters")
        for block in parse.get("blocks") or []:
            first, last = block.get("lines", [0, 0])
            detail = f" ({block['detail']})" if block.get("detail") else ""
            mark = "*" if block.get("index") in (parse.get("chosen") or []) else " "
            lines.append(f" {mark}block {block.get('index')} ```{block.get('language')} lines {first}-{last}: "
                         f"{block.get('role')}{detail}")
        for note in parse.get("notes") or []:
            lines.append(f"  note: {note}")
    if show_prompt:
        if prompt.get("system"):
            lines += ["", "--- system ---", prompt["system"]]
        for message in prompt.get("messages") or []:
            lines += ["", f"--- {message.get('role')} ---", _content_text(message.get("content"))]
        if prompt.get("reasoning"):
            lines += ["", "--- reasoning (provider field) ---", prompt["reasoning"]]
        lines += ["", "--- answer ---", row.get("response_text") or ""]
    return "\n".join(lines)
