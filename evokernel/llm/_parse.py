"""Response parsing: from the model's answer to a candidate source file.

A failure here is data, not a crash: `ParseError.feedback` is written for the
model and goes into the next prompt, so it says precisely what was wrong and
how to answer instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_PYTHON_TAGS = {"python", "py", "python3", "py3"}
_OPEN = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)$")
_FILE_HEADER = re.compile(r"^\s*(?:#|//)\s*file:\s*(?P<name>\S+)\s*$", re.IGNORECASE)
_MODEL_NEW = re.compile(r"^class\s+ModelNew\b", re.MULTILINE)
_PY_HINT = re.compile(r"^(?:import \w|from [\w.]+ import |class \w+|def \w+\()", re.MULTILINE)

TRUNCATED_REASONS = {"length", "max_tokens", "max_output_tokens"}

_FORMAT_HINT = (
    "Answer with exactly one fenced ```python block holding the whole file, "
    "imports and `class ModelNew(nn.Module)` included."
)


class ParseError(ValueError):
    """The answer holds no usable candidate.

    `kind` is one of "no_code", "truncated", "wrong_language", "no_model_new";
    `feedback` is meant for the next prompt.
    """

    def __init__(self, kind: str, message: str, feedback: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.feedback = feedback


@dataclass(frozen=True)
class CodeBlock:
    language: str  # the fence's tag, lower-cased; "" when untagged
    code: str
    closed: bool
    filename: str | None = None


@dataclass(frozen=True)
class Candidate:
    """The candidate source, plus the files when the answer named several."""

    code: str
    files: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def extract_blocks(text: str) -> list[CodeBlock]:
    """Every fenced block, in order; an unterminated last one has closed=False."""
    blocks: list[CodeBlock] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        match = _OPEN.match(lines[i])
        if not match:
            i += 1
            continue
        fence_str = match["fence"]
        tag = (match["info"].strip().split() or [""])[0].lower()
        body: list[str] = []
        i += 1
        closed = False
        while i < len(lines):
            stripped = lines[i].strip()
            if (
                stripped.startswith(fence_str[0] * len(fence_str))
                and set(stripped) == {fence_str[0]}
            ):
                closed = True
                i += 1
                break
            body.append(lines[i])
            i += 1
        filename = None
        if body and (header := _FILE_HEADER.match(body[0])):
            filename = header["name"]
        if tag.startswith("{") or ":" in tag:  # ```python:path or ```{python}
            tag = re.sub(r"[{}]", "", tag).split(":")[0]
        blocks.append(CodeBlock(language=tag, code="\n".join(body), closed=closed, filename=filename))
    return blocks


def _is_python(block: CodeBlock) -> bool:
    if block.language in _PYTHON_TAGS:
        return True
    if block.filename:
        return block.filename.endswith(".py")
    # Untagged blocks count when they look like Python, not like a shell line.
    return block.language == "" and bool(_PY_HINT.search(block.code))


def _defines_model_new(code: str) -> bool:
    return bool(_MODEL_NEW.search(code))


def _truncated_error(detail: str) -> ParseError:
    return ParseError(
        "truncated",
        f"answer truncated: {detail}",
        "Your previous answer was cut off at the output-token limit before the code "
        "block was complete. Keep the reasoning to a few sentences, drop comments "
        "that are not essential. " + _FORMAT_HINT,
    )


def _bundle(files: dict[str, str]) -> str:
    return "\n\n".join(f"# file: {name}\n{code.rstrip()}" for name, code in files.items())


def parse_candidate(
    text: str,
    *,
    finish_reason: str | None = None,
    truncated: bool = False,
    multi_file: bool = False,
) -> Candidate:
    """Take the candidate file out of `text` or raise `ParseError`.

    Several Python blocks: the last one that defines `ModelNew` wins when it
    is complete by itself (it has imports); otherwise the Python blocks are
    joined in order (models often put kernels and `ModelNew` in separate
    blocks). Blocks starting with a `# file: NAME` line are collected into
    `files`; with `multi_file=True` (a backend that takes several files) the
    code is all of them joined under their headers, else the Python file that
    defines `ModelNew`.
    """
    cut = truncated or (finish_reason or "").lower() in TRUNCATED_REASONS
    blocks = extract_blocks(text)
    complete = [b for b in blocks if b.closed]
    python = [b for b in complete if _is_python(b)]
    with_model = [b for b in python if _defines_model_new(b.code)]
    notes: list[str] = []

    if not blocks:
        if cut:
            raise _truncated_error("the token limit was reached before any code block")
        if _defines_model_new(text) and _PY_HINT.search(text):
            # Some local models answer with bare code; take it rather than lose it.
            return Candidate(code=text.strip() + "\n", notes=("answer had no fences; took it whole",))
        raise ParseError(
            "no_code",
            "answer contains no code block",
            "Your previous answer contained no code. " + _FORMAT_HINT,
        )

    if not with_model:
        unterminated = any(not b.closed for b in blocks)
        if cut or unterminated:
            raise _truncated_error(
                "unterminated code fence" if unterminated else f"finish_reason {finish_reason}"
            )
        if not python:
            langs = sorted({b.language or "untagged" for b in complete})
            raise ParseError(
                "wrong_language",
                f"no Python block; found {', '.join(langs)}",
                f"Your previous answer had only {', '.join('```' + lang for lang in langs)} blocks, but "
                "the candidate must be a Python file: kernel source in other languages goes "
                "into a Python string that the file builds at import. " + _FORMAT_HINT,
            )
        raise ParseError(
            "no_model_new",
            "no block defines class ModelNew",
            "Your previous answer had Python code but no `class ModelNew(nn.Module)`. "
            + _FORMAT_HINT,
        )

    if cut:
        notes.append("answer hit the token limit after a complete ModelNew block")

    files = {b.filename: _strip_header(b.code) for b in complete if b.filename}
    if files:
        if multi_file:
            return Candidate(code=_bundle(files), files=files, notes=tuple(notes))
        main = with_model[-1]
        if len(files) > 1:
            notes.append(f"took {main.filename or 'the ModelNew block'} of {len(files)} files")
        return Candidate(code=_strip_header(main.code), files=files, notes=tuple(notes))

    chosen = with_model[-1]
    if len(python) > 1 and not re.search(r"^(?:import|from)\s", chosen.code, re.MULTILINE):
        # ModelNew leans on kernels and imports from earlier blocks: join them.
        code = "\n\n".join(dict.fromkeys(b.code.rstrip() for b in python))
        notes.append(f"joined {len(python)} Python blocks")
    else:
        code = chosen.code
        if len(blocks) > 1:
            notes.append(f"picked the ModelNew block out of {len(blocks)} blocks")
    return Candidate(code=code.rstrip() + "\n", notes=tuple(notes))


def _strip_header(code: str) -> str:
    lines = code.splitlines()
    if lines and _FILE_HEADER.match(lines[0]):
        lines = lines[1:]
    return "\n".join(lines).strip("\n") + "\n"


def split_files(bundle: str) -> dict[str, str]:
    """Inverse of a multi-file candidate: `# file: NAME` sections -> {name: code}."""
    files: dict[str, str] = {}
    name: str | None = None
    body: list[str] = []
    for line in bundle.splitlines():
        header = _FILE_HEADER.match(line)
        if header:
            if name is not None:
                files[name] = "\n".join(body).strip("\n") + "\n"
            name, body = header["name"], []
        elif name is not None:
            body.append(line)
    if name is not None:
        files[name] = "\n".join(body).strip("\n") + "\n"
    return files
