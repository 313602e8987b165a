"""Answers as edits to the start point, for start points an answer cannot hold whole.

The builtin policy's kernels carry their launch-plan runtime (about 600 lines: a
ReLU is about 6,900 tokens, a softmax 13,500, a whole KernelBench level3 model up
to about 346,000; benchmarks/probes/builtin_sizes.py), and an answer is capped by
the model's `max_tokens` (8,192 by default). An LLM refining such a kernel (the hybrid policy hands it the builtin's
best) cannot reply with the whole file; it replies with edits instead:

    <<<<<<< SEARCH
    lines copied exactly from start_point.py
    =======
    the lines that replace them
    >>>>>>> REPLACE

applied in order, each SEARCH text found exactly once in the file as it stands
after the edits before it. A block that matches nowhere or in several places is
the step's error, fed back with the block's number.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from ._parse import Candidate, ParseError, ParseErrorKind, ParseReport, answer_cut, parse_candidate
from ._reasoning import split_reasoning

__all__ = ["Edit", "EditError", "apply_edits", "edit_instructions", "find_edits", "parse_edited", "wants_edits"]

_BLOCK = re.compile(r"^<{7} SEARCH[ \t]*\n(.*?)^={7}[ \t]*\n(.*?)^>{7} REPLACE[ \t]*$", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Edit:
    search: str
    replace: str


class EditError(ValueError):
    """An edit that cannot be applied: the message says which block and why (it is the step's feedback)."""


def find_edits(text: str) -> list[Edit]:
    """The SEARCH/REPLACE blocks of an answer, in order (none: the answer is not edits)."""
    return [Edit(m.group(1), m.group(2)) for m in _BLOCK.finditer(text)]


def apply_edits(source: str, edits: list[Edit]) -> str:
    """`source` with each edit applied in turn; `EditError` naming the first block that does not apply."""
    out = source if source.endswith("\n") else source + "\n"  # a SEARCH text ends with its line's newline
    for n, edit in enumerate(edits, 1):
        if not edit.search.strip():
            raise EditError(f"edit block {n} has an empty SEARCH part: copy the lines to replace from start_point.py")
        found = out.count(edit.search)
        if found != 1:
            first = edit.search.strip().splitlines()[0].strip()
            where = ("matches nothing in start_point.py (after the blocks before it)" if found == 0
                     else f"matches {found} places in start_point.py; include more lines so it matches one")
            raise EditError(f"edit block {n}'s SEARCH text (starting {first[:80]!r}) {where}; "
                            "copy the lines exactly, with their indentation")
        out = out.replace(edit.search, edit.replace, 1)
    return out


def wants_edits(start_tokens: int, answer_tokens: int | None) -> bool:
    """Whether a refinement should answer in edits: the start point alone would take more than half the
    answer's tokens (the rest is for the model's changes and any reasoning it writes in the answer)."""
    return answer_tokens is not None and start_tokens > answer_tokens // 2


def edit_instructions(start_tokens: int, answer_tokens: int) -> str:
    return (
        f"start_point.py is about {start_tokens:,} tokens; your answer holds at most {answer_tokens:,}, so do not "
        "reply with the whole file. Reply with edits to start_point.py, one block per change:\n"
        "<<<<<<< SEARCH\n(lines copied exactly from start_point.py, with their indentation, enough to occur once)\n"
        "=======\n(the lines to put in their place)\n>>>>>>> REPLACE\n"
        "The blocks are applied in order; the file that results is your candidate.")


def parse_edited(text: str, start_code: str, *, kernel_marker: str | None = None, truncated: bool = False,
                 finish_reason: str | None = None) -> Candidate | None:
    """The candidate an answer's edits make of `start_code` (checked as a whole answer would be), None
    when the answer (outside its reasoning) holds no edit block; `ParseError` when an edit does not apply,
    or when the answer was cut (`truncated`, or its `finish_reason`: a block after the last whole one may
    have been cut, and the edits before it are not the change the model meant)."""
    edits = find_edits(split_reasoning(text).answer)
    if not edits:
        return None
    if answer_cut(truncated, finish_reason):
        message = f"answer of edits cut by the token limit after {len(edits)} whole block(s)"
        report = ParseReport(outcome=ParseErrorKind.TRUNCATED.value, source="edits", decision=message, truncated=True)
        raise ParseError(ParseErrorKind.TRUNCATED, message, f"Your edits were cut off by the output-token limit "
                         f"after {len(edits)} whole block(s); nothing was applied. Make fewer, shorter edits.", report)
    try:
        code = apply_edits(start_code, edits)
    except EditError as exc:
        report = ParseReport(outcome=ParseErrorKind.BAD_EDIT.value, source="edits", decision=str(exc))
        raise ParseError(ParseErrorKind.BAD_EDIT, str(exc), f"Your edits were not applied: {exc}.", report) from None
    candidate = parse_candidate(f"```python\n{code}```\n", kernel_marker=kernel_marker)
    decision = f"{len(edits)} edit block(s) applied to the start point"
    report = dataclasses.replace(candidate.report, source="edits", decision=decision) if candidate.report else None
    return dataclasses.replace(candidate, notes=(*candidate.notes, decision), report=report)
