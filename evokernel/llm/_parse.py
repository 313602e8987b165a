"""Response parsing: from the model's answer to a candidate source file.

Real answers are not one clean block. Reasoning models write drafts and
pseudo-code inside `<think>` sections (or in a separate field); models label
fences with the language they think in (```` ```triton ````), split the file
across blocks, quote one-line snippets while explaining, add a test block
that runs the model, and get cut by the token limit. The parser:

1. sets the reasoning apart and looks only at the answer outside it, unless
   that holds no code at all (and then says so);
2. treats every block that parses as Python as Python, whatever its label;
3. takes the last block that is a whole module (ModelNew with forward, a
   kernel of the backend's kind, every name it uses bound); failing that,
   joins blocks that complement each other (imports and kernels in one,
   ModelNew in another), never test or demo blocks, never two versions of
   one definition; kernel source in a ```` ```cuda ```` block that the Python
   refers to by name goes into the file as a string;
4. reports a cut answer (finish reason "length" or an unterminated last
   fence) with the line it stopped at, and never runs an earlier block in
   its place.

Every decision lands in a `ParseReport`, recorded with the call and the step.
A failure is data, not a crash: `ParseError.feedback` is written for the
model and goes into the next prompt.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field, replace
from typing import Sequence

from ._pysource import PySummary, bare_code, summarize
from ._reasoning import split_reasoning

# Fence labels that mean "this is Python"; any block that parses as Python counts too.
PYTHON_LABELS = frozenset({"python", "py", "python3", "py3", "triton", "ipython", "ipython3", "pycon",
                           "pytorch", "torch"})
# Labels of kernel source that a Python file may carry as a string (load_inline's sources).
SOURCE_LABELS = frozenset({"cuda", "cu", "cpp", "c++", "cxx", "cc", "c", "h", "hpp", "cuh", "ascendc"})
_CUDA_LABELS = frozenset({"cuda", "cu", "cuh"})
_CPP_LABELS = frozenset({"cpp", "c++", "cxx", "cc", "c", "h", "hpp"})
TRUNCATED_REASONS = frozenset({"length", "max_tokens", "max_output_tokens"})

_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)$")
_FILE_HEADER = re.compile(r"^\s*(?:#|//)\s*file:\s*(?P<name>\S+)\s*$", re.IGNORECASE)
_MODEL_NEW = re.compile(r"^class\s+ModelNew\b", re.MULTILINE)
_IMPORT = re.compile(r"^(?:import|from)\s", re.MULTILINE)

_FORMAT_HINT = (
    "Answer with exactly one fenced ```python block holding the whole file, "
    "imports and `class ModelNew(nn.Module)` included."
)


class ParseErrorKind(str, enum.Enum):
    NO_CODE = "no_code"
    TRUNCATED = "truncated"
    WRONG_LANGUAGE = "wrong_language"
    NO_MODEL_NEW = "no_model_new"
    INCOMPLETE = "incomplete"
    BAD_EDIT = "bad_edit"  # an answer of edits (evokernel/llm/_edits.py) that does not apply to its start point


class BlockRole(str, enum.Enum):
    """What a block is to the candidate file."""

    MODULE = "whole module"
    PIECE = "part of the file"
    STUB = "ModelNew without forward"
    USAGE = "runs the model (test or demo)"
    FRAGMENT = "Python that does not parse"
    KERNEL_SOURCE = "kernel source in another language"
    OTHER = "not part of the file"
    UNTERMINATED = "cut off (no closing fence)"


@dataclass(frozen=True)
class CodeBlock:
    language: str  # the fence's label, lower-cased; "" when unlabelled
    code: str
    closed: bool
    filename: str | None = None
    start_line: int = 0  # 1-based line of the opening fence
    end_line: int = 0  # 1-based line of the closing fence (the last line when unterminated)


@dataclass(frozen=True)
class BlockNote:
    """One block as the parser read it."""

    index: int  # 1-based, in the order of the text searched
    language: str
    start_line: int
    end_line: int
    role: BlockRole
    detail: str = ""

    def as_dict(self) -> dict:
        return {"index": self.index, "language": self.language or "unlabelled", "lines": [self.start_line, self.end_line],
                "role": self.role.value, "detail": self.detail}


@dataclass(frozen=True)
class ParseReport:
    """Every decision the parser took on one answer, for the step's record and `evokernel logs`."""

    outcome: str  # "candidate" or a ParseErrorKind value
    source: str  # where the candidate came from: "answer", "reasoning", "bare code" or "none"
    decision: str  # one sentence: what was taken, and why
    blocks: tuple[BlockNote, ...] = ()
    chosen: tuple[int, ...] = ()  # indices of the blocks the candidate is made of
    reasoning_sections: int = 0  # inline <think>/<thinking>/<reasoning> sections
    reasoning_chars: int = 0  # inline sections plus the provider's separate reasoning field
    truncated: bool = False
    cut_line: int | None = None
    notes: tuple[str, ...] = ()

    def summary(self) -> str:
        return f"{self.outcome}: {self.decision}"

    def as_dict(self) -> dict:
        return {
            "outcome": self.outcome,
            "source": self.source,
            "decision": self.decision,
            "chosen": list(self.chosen),
            "blocks": [b.as_dict() for b in self.blocks],
            "reasoning_sections": self.reasoning_sections,
            "reasoning_chars": self.reasoning_chars,
            "truncated": self.truncated,
            "cut_line": self.cut_line,
            "notes": list(self.notes),
        }


class ParseError(ValueError):
    """The answer holds no usable candidate.

    `kind` is a `ParseErrorKind` (compares equal to its string value);
    `feedback` is meant for the next prompt; `report` holds the decisions.
    """

    def __init__(self, kind: str, message: str, feedback: str, report: ParseReport | None = None) -> None:
        super().__init__(message)
        self.kind = ParseErrorKind(kind)
        self.feedback = feedback
        self.report = report


@dataclass(frozen=True)
class Candidate:
    """The candidate source, plus the files when the answer named several."""

    code: str
    files: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    report: ParseReport | None = None


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
        start = i + 1
        fence_str = match["fence"]
        indent = len(match["indent"].expandtabs())
        tag = (match["info"].strip().split() or [""])[0].lower()
        body: list[str] = []
        i += 1
        closed = False
        while i < len(lines):
            stripped = lines[i].strip()
            if stripped.startswith(fence_str[0] * len(fence_str)) and set(stripped) == {fence_str[0]}:
                closed = True
                break
            body.append(lines[i])
            i += 1
        end = i + 1 if closed else len(lines)
        i += 1
        if indent:  # a fence inside a list item: its body carries the item's indent
            body = [_dedent(line, indent) for line in body]
        filename = None
        if body and (header := _FILE_HEADER.match(body[0])):
            filename = header["name"]
        if tag.startswith("{") or ":" in tag:  # ```python:path or ```{python}
            tag = re.sub(r"[{}]", "", tag).split(":")[0]
        blocks.append(CodeBlock(tag, "\n".join(body), closed, filename, start, end))
    return blocks


def _dedent(line: str, width: int) -> str:
    expanded = line.expandtabs()
    strip = min(width, len(expanded) - len(expanded.lstrip(" ")))
    return expanded[strip:]


# --- reading the blocks ------------------------------------------------------


@dataclass(frozen=True)
class _Read:
    block: CodeBlock
    index: int
    role: BlockRole
    py: PySummary | None
    detail: str = ""

    @property
    def methods(self) -> int:
        return len(re.findall(r"^\s+def \w+\(", _model_new_body(self.block.code), re.MULTILINE))

    def note(self, role: BlockRole | None = None, detail: str | None = None) -> BlockNote:
        b = self.block
        return BlockNote(self.index, b.language, b.start_line, b.end_line, role or self.role,
                         self.detail if detail is None else detail)


def _model_new_body(code: str) -> str:
    match = _MODEL_NEW.search(code)
    if not match:
        return ""
    rest = code[match.end():].splitlines()[1:]
    body = []
    for line in rest:
        if line.strip() and not line[0].isspace():
            break
        body.append(line)
    return "\n".join(body)


def _read(block: CodeBlock, index: int, kernel: re.Pattern | None) -> _Read:
    code = block.code
    label = block.language
    if not block.closed:
        return _Read(block, index, BlockRole.UNTERMINATED, None)
    py = summarize(code) if code.strip() else None
    python_label = label in PYTHON_LABELS or (block.filename or "").endswith(".py")
    is_python = py is not None and py.parses and (
        python_label or bool(py.imports) or py.functions_or_classes or (label == "" and py.usage_only)
    )
    if not is_python:
        if python_label and py is not None and not py.parses:
            return _Read(block, index, BlockRole.FRAGMENT, py, py.syntax_error or "")
        if label in SOURCE_LABELS or (kernel is not None and kernel.search(code) and label != ""):
            return _Read(block, index, BlockRole.KERNEL_SOURCE, py)
        if label == "" and py is not None and not py.parses and _MODEL_NEW.search(code) and _IMPORT.search(code):
            return _Read(block, index, BlockRole.FRAGMENT, py, py.syntax_error or "")
        return _Read(block, index, BlockRole.OTHER, py)
    assert py is not None
    detail = "" if python_label or label == "" else f"Python under the label ```{label}"
    if py.usage_only:
        return _Read(block, index, BlockRole.USAGE, py, detail)
    if py.model_new and not py.model_new_forward:
        return _Read(block, index, BlockRole.STUB, py, detail)
    has_kernel = kernel is None or bool(kernel.search(code))
    if py.model_new_forward and has_kernel and not py.needs:
        return _Read(block, index, BlockRole.MODULE, py, detail)
    missing = [*(["no kernel"] if not has_kernel else []), *([f"uses {_names(py.needs)}"] if py.needs else [])]
    if py.model_new_forward:
        detail = "; ".join([d for d in (detail, "ModelNew, but " + ", ".join(missing)) if d])
    return _Read(block, index, BlockRole.PIECE, py, detail)


def _names(names) -> str:
    shown = sorted(names)
    text = ", ".join(f"`{n}`" for n in shown[:6])
    return text + (f" and {len(shown) - 6} more" if len(shown) > 6 else "")


def _where(read: _Read) -> str:
    b = read.block
    return f"block {read.index} (```{b.language or 'unlabelled'}, lines {b.start_line}-{b.end_line})"


# --- assembling the file -----------------------------------------------------


@dataclass
class _Assembly:
    parts: list[_Read]
    defines: set[str]
    needs: set[str]

    @classmethod
    def start(cls, anchor: _Read) -> "_Assembly":
        assert anchor.py is not None
        return cls([anchor], set(anchor.py.defines), set(anchor.py.needs) - set(anchor.py.defines))

    def try_add(self, piece: _Read) -> bool:
        py = piece.py
        assert py is not None
        if py.def_names & {n for p in self.parts for n in p.py.def_names}:
            return False  # another version of a function or class already in: not complementary
        if not (py.defines & self.needs):
            return False
        self.parts.append(piece)
        self.defines |= py.defines
        self.needs = (self.needs | py.needs) - self.defines
        return True

    def code(self) -> str:
        ordered = sorted(self.parts, key=lambda p: p.index)
        return "\n\n".join(_strip_header(p.block.code).strip("\n") for p in ordered)


def _assemble(anchor: _Read, pieces: Sequence[_Read]) -> _Assembly:
    asm = _Assembly.start(anchor)
    before = [p for p in reversed(pieces) if p.index < anchor.index]  # nearest first
    after = [p for p in pieces if p.index > anchor.index]
    progress = True
    while progress and asm.needs:
        progress = False
        for piece in [*before, *after]:
            if piece not in asm.parts and asm.try_add(piece):
                progress = True
    return asm


def _bind_sources(
    code: str, needs: set[str], reads: Sequence[_Read], sources: list[_Read]
) -> tuple[str, list[tuple[str, _Read]], set[str]]:
    """Kernel source in other-language blocks that the Python names but never defines
    goes into the file as a string assigned to that name, after the imports."""
    wanted: list[tuple[str, str]] = []
    for read in reads:
        for keyword, name in read.py.source_args:
            if name in needs and name not in (n for _, n in wanted):
                wanted.append((keyword, name))
    unused = list(sources)
    bindings: list[tuple[str, _Read]] = []
    for keyword, name in wanted:
        prefer = _CUDA_LABELS if keyword == "cuda_sources" else _CPP_LABELS if keyword == "cpp_sources" else None
        pick = next((s for s in unused if prefer is None or s.block.language in prefer), None)
        if pick is None and prefer is not None and len(wanted) == 1:
            pick = unused[0] if unused else None
        if pick is not None:
            unused.remove(pick)
            bindings.append((name, pick))
    if not bindings:
        return code, [], needs
    lines = code.splitlines()
    at = summarize(code).last_import_line
    inserted = [f"{name} = {_string_literal(src.block.code)}" for name, src in bindings]
    code = "\n".join([*lines[:at], "", *inserted, "", *lines[at:]]).strip("\n")
    return code, bindings, needs - {name for name, _ in bindings}


def _string_literal(text: str) -> str:
    """A literal for kernel source: raw triple quotes keep C escapes such as `\\n` as written."""
    body = _strip_header(text)
    for quote in ('"""', "'''"):
        if quote not in body:
            return f"r{quote}\n{body}{quote}"
    return repr(body)


# --- the parser --------------------------------------------------------------


def _has_code(text: str) -> bool:
    return any(b.code.strip() for b in extract_blocks(text)) or bare_code(text) is not None


def answer_cut(truncated: bool, finish_reason: str | None) -> bool:
    """Whether the provider cut the answer at its output-token limit (its flag, or its finish reason)."""
    return truncated or (finish_reason or "").lower() in TRUNCATED_REASONS


def parse_candidate(
    text: str,
    *,
    reasoning: str | None = None,
    finish_reason: str | None = None,
    truncated: bool = False,
    multi_file: bool = False,
    kernel_marker: str | None = None,
    max_tokens: int | None = None,
) -> Candidate:
    """Take the candidate file out of an answer or raise `ParseError`.

    `reasoning` is the provider's separate reasoning field (recorded, searched
    only when the answer holds no code); `kernel_marker` is the backend's
    pattern for a kernel of its kind (`Backend.kernel_marker`), used to tell a
    whole module from a piece; `max_tokens` only makes a truncation message
    precise. Blocks starting with a `# file: NAME` line are collected into
    `files`; with `multi_file=True` the code is all of them under their headers.
    """
    cut = answer_cut(truncated, finish_reason)
    kernel = re.compile(kernel_marker, re.MULTILINE) if kernel_marker else None
    split = split_reasoning(text)
    field_reasoning = reasoning or ""
    base = dict(reasoning_sections=split.sections, reasoning_chars=split.reasoning_chars + len(field_reasoning),
                truncated=cut)
    total_lines = len(text.splitlines())
    limit = f" (max_tokens={max_tokens})" if max_tokens else ""

    def fail(kind: ParseErrorKind, message: str, feedback: str, **report) -> ParseError:
        rep = ParseReport(outcome=kind.value, source=report.pop("source", "none"), decision=message,
                          **(base | report))
        return ParseError(kind, message, feedback, rep)

    source, searched = "answer", split.answer
    notes: list[str] = []
    if not _has_code(split.answer):
        if cut:
            where = ("while still reasoning (the section was never closed)" if split.unclosed
                     else "before the answer held any code")
            raise fail(
                ParseErrorKind.TRUNCATED,
                f"answer cut by the token limit{limit} at line {total_lines}, {where}",
                f"Your previous answer was cut off by the output-token limit{limit} at line {total_lines}, "
                f"{where}; nothing was run. Reason briefly and write the file sooner: a few sentences of plan, "
                "then the code. " + _FORMAT_HINT,
                cut_line=total_lines,
            )
        if _has_code(split.reasoning):
            source, searched = "reasoning", split.reasoning
        elif _has_code(field_reasoning):
            source, searched = "reasoning", field_reasoning
        else:
            said = " outside your reasoning" if split.sections or field_reasoning else ""
            raise fail(
                ParseErrorKind.NO_CODE,
                f"answer contains no code{said}",
                f"Your previous answer contained no code{said}. " + _FORMAT_HINT,
            )
        notes.append("the answer outside the reasoning held no code, so the candidate was looked for in the reasoning")

    blocks = extract_blocks(searched)
    stopped = finish_reason is not None and not cut
    if blocks and not blocks[-1].closed and stopped and summarize(blocks[-1].code).parses:
        # The model ended on its own (finish reason given, not a limit) and the
        # open block parses: a forgotten closing fence, not a cut.
        blocks[-1] = replace(blocks[-1], closed=True)
        notes.append(f"the last fence (line {blocks[-1].start_line}) was never closed, but the model stopped "
                     f"on its own (finish reason {finish_reason!r}) and the block parses")
    reads = [_read(b, i + 1, kernel) for i, b in enumerate(blocks)]
    base["blocks"] = tuple(r.note() for r in reads)

    if not blocks:
        found = bare_code(searched)
        assert found is not None  # _has_code said so
        code, first, last = found
        py = summarize(code)
        if cut:
            raise fail(
                ParseErrorKind.TRUNCATED,
                f"answer (code without fences) cut by the token limit{limit} at line {total_lines}",
                f"Your previous answer was cut off by the output-token limit{limit} at line {total_lines}, in the "
                "middle of its code; nothing was run. Write a shorter answer. " + _FORMAT_HINT,
                source="bare code", cut_line=total_lines,
            )
        if not py.model_new:
            raise fail(
                ParseErrorKind.NO_MODEL_NEW,
                f"code without fences (lines {first}-{last}) defines no class ModelNew",
                "Your previous answer had Python code (without a fence) but no `class ModelNew(nn.Module)`. "
                + _FORMAT_HINT, source="bare code",
            )
        decision = f"took the code written without fences, lines {first}-{last}"
        report = ParseReport("candidate", "bare code" if source == "answer" else source, decision,
                             notes=tuple(notes), **base)
        return Candidate(code=code, notes=(decision, *notes), report=report)

    last = reads[-1]
    if last.role is BlockRole.UNTERMINATED:
        earlier = [r for r in reads[:-1] if r.role in (BlockRole.MODULE, BlockRole.PIECE)]
        skipped = f"; the earlier {_where(earlier[-1])} was not run in its place" if earlier else ""
        at = last.block.start_line
        tail = next((ln.strip() for ln in reversed(last.block.code.splitlines()) if ln.strip()), "")
        reached = f" (its last words: `{tail[-60:]}`)" if tail else ""
        raise fail(
            ParseErrorKind.TRUNCATED,
            f"answer cut at line {total_lines}, inside the ```{last.block.language or 'unlabelled'} block "
            f"that opens at line {at}{skipped}",
            f"Your previous answer was cut off{' by the output-token limit' + limit if cut else ''} at line "
            f"{total_lines}{reached}, inside the code block that opens at line {at}, so the file was incomplete and "
            "nothing was run. Write a shorter answer: a few sentences of plan at most, one version of the file, "
            "only the comments that matter. " + _FORMAT_HINT,
            source=source, cut_line=total_lines,
        )
    if cut:
        notes.append(f"the answer reached the token limit{limit} at line {total_lines}, after its last code block "
                     f"(which ends at line {last.block.end_line})")

    files = {r.block.filename: _strip_header(r.block.code) for r in reads if r.block.filename}
    if files and multi_file:
        decision = f"took the {len(files)} files the answer named with `# file:` headers"
        report = ParseReport("candidate", source, decision, chosen=tuple(r.index for r in reads if r.block.filename),
                             notes=tuple(notes), **base)
        return Candidate(code=_bundle(files), files=files, notes=(decision, *notes), report=report)

    modules = [r for r in reads if r.role is BlockRole.MODULE]
    pieces = [r for r in reads if r.role is BlockRole.PIECE]
    sources = [r for r in reads if r.role is BlockRole.KERNEL_SOURCE]
    anchors = [r for r in pieces if r.py.model_new_forward]
    # A later file attempt that does not parse is the model's final word: the
    # verifier reports its syntax error, an earlier draft is not run instead.
    broken = [r for r in reads if r.role is BlockRole.FRAGMENT and _MODEL_NEW.search(r.block.code)
              and _IMPORT.search(r.block.code) and r.index > max((m.index for m in [*modules, *anchors]), default=0)]
    if broken:
        chosen = broken[-1]
        decision = f"took {_where(chosen)}, which does not parse ({chosen.detail}): the verifier reports where"
        report = ParseReport("candidate", source, decision, chosen=(chosen.index,), notes=tuple(notes), **base)
        return Candidate(code=chosen.block.code.strip("\n") + "\n", files=files, notes=(decision, *notes),
                         report=report)
    if modules:
        chosen = modules[-1]
        parts, code, needs = [chosen], _strip_header(chosen.block.code).strip("\n"), set()
        decision = f"took {_where(chosen)}: the last whole module (ModelNew with forward, its kernels and imports)"
        if len(modules) > 1:
            notes.append(f"{len(modules) - 1} earlier whole module(s) not taken: "
                         + ", ".join(_where(m) for m in modules[:-1]))
    elif anchors:
        # Several ModelNew classes: prefer the one whose pieces resolve, then the fuller class
        # (a snippet quoted while explaining shows one method), then the later one.
        assemblies = [(_assemble(a, pieces), a) for a in anchors]
        asm, anchor = max(assemblies, key=lambda pair: (not pair[0].needs, pair[1].methods, pair[1].index))
        parts, code, needs = sorted(asm.parts, key=lambda p: p.index), asm.code(), set(asm.needs)
        if len(parts) == 1:
            decision = f"took {_where(anchor)}, the ModelNew block (no other block defines what it uses)"
        else:
            decision = (f"joined {', '.join(_where(p) for p in parts)}: complementary pieces "
                        f"(ModelNew is in block {anchor.index}, the others define what it uses)")
        others = [a for _, a in assemblies if a is not anchor]
        if others:
            notes.append("other ModelNew blocks not taken: " + ", ".join(_where(a) for a in others))
    else:
        stubs = [r for r in reads if r.role is BlockRole.STUB]
        python = [r for r in reads if r.py is not None and r.role not in (BlockRole.OTHER, BlockRole.KERNEL_SOURCE)]
        if stubs:
            raise fail(
                ParseErrorKind.INCOMPLETE,
                f"ModelNew in {_where(stubs[-1])} has no forward method",
                "Your previous answer's `class ModelNew` had no `forward` method (it looked like a fragment). "
                + _FORMAT_HINT, source=source,
            )
        if python:
            raise fail(
                ParseErrorKind.NO_MODEL_NEW,
                "no block defines class ModelNew",
                "Your previous answer had Python code but no `class ModelNew(nn.Module)`. " + _FORMAT_HINT,
                source=source,
            )
        langs = sorted({r.block.language or "unlabelled" for r in reads})
        raise fail(
            ParseErrorKind.WRONG_LANGUAGE,
            f"no Python block; found {', '.join(langs)}",
            f"Your previous answer had only {', '.join('```' + lang for lang in langs)} blocks, but the candidate "
            "must be a Python file: kernel source in other languages goes into a Python string that the file "
            "builds at import. " + _FORMAT_HINT,
            source=source,
        )

    code, bindings, needs = _bind_sources(code, needs, parts, sources)
    if bindings:
        decision = decision.removesuffix(" (no other block defines what it uses)") + ", with the kernel source of " + ", ".join(
            f"{_where(src)} as `{name}`" for name, src in bindings)
    bound = [src for _, src in bindings]
    used = set(code.splitlines())
    for src in sources:
        if src not in bound:
            head = src.block.code.strip().splitlines()[:3]
            inside = bool(head) and all(line in used for line in head)
            notes.append(f"{_where(src)} {'repeats source the file already holds' if inside else 'not used'}")
    usage = [r for r in reads if r.role is BlockRole.USAGE]
    if usage:
        notes.append("left out test/demo block(s) " + ", ".join(str(r.index) for r in usage))
    star = any(p.py.star_import for p in parts)
    if needs and not star:
        if not _IMPORT.search(code):
            raise fail(
                ParseErrorKind.INCOMPLETE,
                f"ModelNew's code uses {_names(needs)}, which no block of the answer imports or defines",
                f"Your previous answer's code uses {_names(needs)}, but no block imports or defines them "
                "(the answer held pieces of a file, not the whole file). " + _FORMAT_HINT,
                source=source, chosen=tuple(p.index for p in parts),
            )
        notes.append(f"names no block defines: {_names(needs)} (the verifier reports them if they matter)")
    if kernel is not None and not kernel.search(code):
        notes.append(f"no kernel matching {kernel.pattern!r} in the file")
    report = ParseReport("candidate", source, decision, chosen=tuple(p.index for p in parts), notes=tuple(notes),
                         **base)
    return Candidate(code=code.rstrip() + "\n", files=files, notes=(decision, *notes), report=report)


def _bundle(files: dict[str, str]) -> str:
    return "\n\n".join(f"# file: {name}\n{code.rstrip()}" for name, code in files.items())


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
