"""One kernel for each kernel text a candidate repeats under other names.

A deep model's stages emit the same kernel many times over: Swin's 24 blocks
each have their layer norms, MLP epilogues and window shuffles, written with
the names of that block's buffers (`layers_0_blocks_1_norm1_weight_ptr`). Each
name is a separate Triton function, so the first call compiled (and autotuned)
305 kernels for 29_SwinMLP and 564 for 30_SwinTransformerV2, past the 120 s an
evaluation is given on the H200. Kernels equal up to the names of their
parameters and locals are one kernel: the first keeps its text, the others'
definitions go and their launches launch the first (keyword arguments renamed
to its parameters, position by position). 29_SwinMLP then compiles 32 kernels,
ResNet101 11 instead of 109.

A kernel reached other than as ``_launch(kernel, ...)``'s first argument (a
launcher's local alias, ``main_kernel = _matmul_kernel_s7``) is replaced only
where none of its renamed parameters is passed by keyword to a launch through
an alias, since such a launch's keywords cannot be renamed for it. Names a
decorator mentions (an autotune key, a reset_to_zero list) count as
part of the text, so what the decorators do is unchanged.
"""

from __future__ import annotations

import ast
import re

from backends import parse_python

__all__ = ["share_identical_kernels"]


def _is_kernel(node: ast.stmt) -> bool:
    return isinstance(node, ast.FunctionDef) and any(
        "jit" in ast.unparse(d) for d in node.decorator_list)


def _first_line(fn: ast.FunctionDef) -> int:
    """The line a kernel's text starts on: its first decorator's."""
    return min([fn.lineno] + [d.lineno for d in fn.decorator_list])


def _canonical(fn: ast.FunctionDef, text: str) -> str:
    """The kernel's text (`text`) with its name, parameters and locals renamed by order of
    appearance; names its decorators mention (in strings) are kept."""
    named = {n.value for d in fn.decorator_list for n in ast.walk(d)
             if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    return _renamed(fn.name, [a.arg for a in fn.args.args], named, text)


def _renamed(name: str, params: list[str], named: set[str], text: str) -> str:
    local = set(params)
    for line in text.splitlines():  # assignment targets: `x = ...`, `a, b = ...`, `acc += ...`
        found = _ASSIGNED.match(line)
        if found:
            local.update((found.group(1) or found.group(2)).replace(" ", "").split(","))
    local -= named
    local.add(name)
    renamed: dict[str, str] = {}

    def rename(match: re.Match) -> str:
        word = match.group(0)
        return renamed.setdefault(word, f"_{len(renamed)}") if word in local else word

    return _logical_lines(_NAME.sub(rename, text))


_NAME = re.compile(r"(?<![.\w])[A-Za-z_]\w*")
_JIT_DEF = re.compile(r"^@triton\.jit[^\n]*\ndef (\w+)\(", re.M)
_TOP_LEVEL = re.compile(r"\n(?=[^\s)])")  # the next line that starts at column 0 (a signature's "):" does not end it)


def _may_repeat(source: str) -> bool:
    """Whether two kernels' bodies (decorators aside) read the same once renamed: a cheap
    text-only look that lets most candidates skip the parse."""
    seen = set()
    for match in _JIT_DEF.finditer(source):
        end = _TOP_LEVEL.search(source, match.end())
        text = source[match.start():end.start() if end else len(source)]
        signature = text[text.index("(") + 1:text.index(":\n") if ":\n" in text else len(text)]
        params = [p.split(":")[0].split("=")[0].strip() for p in signature.rsplit(")", 1)[0].split(",")]
        key = _renamed(match.group(1), [p for p in params if p.isidentifier()], set(), text)
        if key in seen:
            return True
        seen.add(key)
    return False


def _logical_lines(text: str) -> str:
    """One line per logical line, spaces collapsed: the same code wrapped at other places
    (its names are of other lengths) reads the same."""
    out: list[str] = []
    depth = 0
    for line in text.splitlines():
        body = " ".join(line.split())
        if depth > 0 and out:
            out[-1] += " " + body
        else:
            out.append(line[:len(line) - len(line.lstrip())] + body)
        depth += sum(body.count(c) for c in "([{") - sum(body.count(c) for c in ")]}")
    return _BRACKET_SPACE.sub(lambda m: m.group(1) or m.group(2), "\n".join(out))


_BRACKET_SPACE = re.compile(r"([(\[{]) | ([)\]}])")


_ASSIGNED = re.compile(r"^\s*([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*(?:[-+*/%&|^]|//|<<|>>)?=(?!=)|"
                       r"^\s*for\s+([A-Za-z_]\w*)\s+in\b")


def share_identical_kernels(source: str) -> str:
    """`source` with each repeated kernel defined once (see the module's docstring)."""
    if not _may_repeat(source):
        return source  # the common case, without parsing the whole candidate
    tree = parse_python(source)
    kernels = {node.name: node for node in tree.body if _is_kernel(node)}
    if len(kernels) < 2:
        return source
    lines = source.splitlines(keepends=True)
    texts = {name: "".join(lines[_first_line(fn) - 1:fn.end_lineno]) for name, fn in kernels.items()}
    # where each kernel is reached: a launch's first argument, or anywhere else; a kernel another
    # kernel calls is kept as it is (only host code is rewritten)
    pinned = {word for name, text in texts.items() for word in set(_NAME.findall(text)) & kernels.keys()
              if word != name}
    launches: dict[str, list[ast.Call]] = {name: [] for name in kernels}
    references: dict[str, list[ast.Name]] = {name: [] for name in kernels}
    through_alias: set[str] = set()  # keywords of launches whose kernel is a local name
    host = [node for node in tree.body if not (isinstance(node, ast.FunctionDef) and node.name in kernels)]
    nodes = [node for top in host for node in ast.walk(top)]
    launched: set[int] = set()
    for node in nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_launch" and node.args:
            target = node.args[0]
            if isinstance(target, ast.Name) and target.id in kernels:
                launches[target.id].append(node)
                launched.add(id(target))
            else:
                through_alias.update(kw.arg for kw in node.keywords if kw.arg is not None)
    for node in nodes:
        if isinstance(node, ast.Name) and node.id in kernels and id(node) not in launched:
            references[node.id].append(node)
    first: dict[str, str] = {}  # canonical text -> the kernel that keeps it
    replaced: dict[str, str] = {}  # kernel -> the kernel it launches instead
    for name, fn in kernels.items():
        key = _canonical(fn, texts[name])
        kept = first.setdefault(key, name)
        if kept == name or name in pinned:
            continue
        renamed = {a.arg for a, b in zip(fn.args.args, kernels[kept].args.args) if a.arg != b.arg}
        if not references[name] or not renamed & through_alias:
            replaced[name] = kept
    if not replaced:
        return source
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line.encode()))
    data = source.encode()
    edits: list[tuple[int, int, bytes]] = []  # (start, end, replacement) in bytes

    def at(line: int, col: int) -> int:
        return starts[line - 1] + col

    for name, kept in replaced.items():
        fn = kernels[name]
        top = _first_line(fn)
        end = fn.end_lineno
        while end < len(lines) and not lines[end].strip():  # the blank lines after it go too
            end += 1
        edits.append((starts[top - 1], starts[end], b""))
        params = dict(zip((a.arg for a in fn.args.args), (a.arg for a in kernels[kept].args.args)))
        for ref in [call.args[0] for call in launches[name]] + references[name]:
            edits.append((at(ref.lineno, ref.col_offset), at(ref.end_lineno, ref.end_col_offset), kept.encode()))
        for call in launches[name]:
            for kw in call.keywords:
                if kw.arg is not None and params.get(kw.arg, kw.arg) != kw.arg:
                    begin = at(kw.lineno, kw.col_offset)
                    edits.append((begin, begin + len(kw.arg.encode()), params[kw.arg].encode()))
    pieces, pos = [], 0
    for begin, end, text in sorted(edits):
        pieces += [data[pos:begin], text]
        pos = end
    pieces.append(data[pos:])
    return b"".join(pieces).decode()
