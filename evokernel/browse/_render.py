"""Server-side HTML: Jinja2 templates with autoescaping, Pygments for code and diffs.

Everything from the bank (kernel sources, feedback, prompts, answers, task
names) is untrusted text. Templates escape it by default; the only markup
let through unescaped is what Pygments and this module build, and Pygments
escapes the text it wraps. The pages carry no inline script, and the
server's Content-Security-Policy forbids any, so even a slip here could not
run code.
"""

from __future__ import annotations

import datetime
import difflib
import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Any

from markupsafe import Markup

_HERE = Path(__file__).parent
STATIC_DIR = _HERE / "static"
_CODE_CLASS = "hl"


@lru_cache(maxsize=1)
def _formatter():
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(cssclass=_CODE_CLASS, wrapcode=True)


@lru_cache(maxsize=1)
def code_css() -> str:
    """The highlighting colours, served as a local stylesheet."""
    return _formatter().get_style_defs(f".{_CODE_CLASS}")


def highlight_code(source: str, language: str = "python") -> Markup:
    from pygments import highlight
    from pygments.lexers import get_lexer_by_name

    return Markup(highlight(source or "", get_lexer_by_name(language), _formatter()))


def unified_diff(before: str, after: str, *, before_name: str, after_name: str) -> str:
    return "".join(difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), fromfile=before_name, tofile=after_name, n=3))


def diff_stat(before: str, after: str) -> str:
    """'+3 -1 lines': how much a kernel changed against its parent."""
    lines = unified_diff(before, after, before_name="a", after_name="b").splitlines()[2:]
    added = sum(1 for line in lines if line.startswith("+"))
    removed = sum(1 for line in lines if line.startswith("-"))
    return f"+{added} -{removed} lines"


def highlight_diff(before: str, after: str, *, before_name: str, after_name: str) -> Markup:
    text = unified_diff(before, after, before_name=before_name, after_name=after_name)
    if not text:
        return Markup('<p class="quiet">identical to its parent</p>')
    return highlight_code(text if text.endswith("\n") else text + "\n", "diff")


def fmt_ms(value: Any) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return f"{value:.4g} ms"


def fmt_num(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def fmt_cost(value: Any) -> str:
    return "-" if value is None else f"${value:.4f}"


def fmt_utc(value: Any) -> str:
    """'2026-12-04T04:47:07.25+00:00' -> '2026-12-04 04:47:07'."""
    if not value:
        return "-"
    try:
        return datetime.datetime.fromisoformat(str(value)).strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        return str(value)


def fmt_json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, default=str, ensure_ascii=False)


def message_text(content: Any) -> str:
    """A chat message's content as text: a string as it is, a list of parts by their text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") if isinstance(p, dict) and "text" in p else fmt_json(p) for p in content)
    return fmt_json(content)


@lru_cache(maxsize=1)
def environment():
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    env = Environment(
        loader=FileSystemLoader(str(_HERE / "templates")),
        autoescape=True,  # every template, whatever its name
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(ms=fmt_ms, num=fmt_num, cost=fmt_cost, utc=fmt_utc, pretty_json=fmt_json,
                       code=highlight_code, message_text=message_text)
    env.globals.update(diff=highlight_diff, diff_stat=diff_stat)
    return env


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)
