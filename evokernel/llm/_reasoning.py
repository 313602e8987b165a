"""Setting a model's reasoning apart from its answer.

Local servers (vLLM, Ollama, llama.cpp) return the reasoning of R1-style and
Qwen3 models inline, as `<think>...</think>` before the answer; some chat
templates open the section in the prompt, so the answer holds only the
closing tag; an answer cut by the token limit may hold an opening tag that
never closes. Drafts and pseudo-code written while reasoning are not the
answer, so the parser looks at the text outside these sections and keeps
the sections themselves for the record.

Spans are blanked rather than cut, keeping every newline, so line numbers in
the answer (and in parse reports) are line numbers of the text the model sent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

REASONING_TAGS = ("think", "thinking", "reasoning")
_TAG = re.compile(r"<(?P<close>/?)(?P<name>think|thinking|reasoning)\s*>", re.IGNORECASE)


@dataclass(frozen=True)
class ReasoningSplit:
    """The answer and the inline reasoning of one text, line numbers kept."""

    answer: str  # the text with every reasoning section blanked
    reasoning: str  # the text with everything but the reasoning blanked
    sections: int
    unclosed: bool  # the last section never closed: the text ended while reasoning
    tags: tuple[str, ...] = ()  # which tags were seen, e.g. ("think",)

    @property
    def reasoning_chars(self) -> int:
        return len(self.reasoning) - self.reasoning.count("\n")


def _blank(text: str) -> str:
    return "\n" * text.count("\n")


def split_reasoning(text: str) -> ReasoningSplit:
    spans: list[tuple[int, int]] = []
    tags: dict[str, None] = {}
    open_at: int | None = None
    open_name = ""
    for match in _TAG.finditer(text):
        name = match["name"].lower()
        if not match["close"]:
            if open_at is None:
                open_at, open_name = match.start(), name
                tags.setdefault(name, None)
            continue
        if open_at is not None and name == open_name:
            spans.append((open_at, match.end()))
            open_at = None
        elif open_at is None and not spans:
            # A closing tag with no opener: the chat template opened the section
            # in the prompt, so everything before it was reasoning.
            spans.append((0, match.end()))
            tags.setdefault(name, None)
    unclosed = open_at is not None
    if unclosed:
        spans.append((open_at, len(text)))
    if not spans:
        return ReasoningSplit(answer=text, reasoning="", sections=0, unclosed=False)
    answer, reasoning, pos = [], [], 0
    for start, end in spans:
        answer += [text[pos:start], _blank(text[start:end])]
        reasoning += [_blank(text[pos:start]), _strip_tags(text[start:end])]
        pos = end
    answer.append(text[pos:])
    reasoning.append(_blank(text[pos:]))
    return ReasoningSplit(
        answer="".join(answer),
        reasoning="".join(reasoning),
        sections=len(spans),
        unclosed=unclosed,
        tags=tuple(tags),
    )


def _strip_tags(section: str) -> str:
    return _TAG.sub("", section)
