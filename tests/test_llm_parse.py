"""parse_candidate: answers in the shapes real models write, one candidate file (or a precise ParseError) out."""

from __future__ import annotations

import ast

import pytest

import llm_answers as A
from evokernel.llm import BlockRole, ParseError, extract_blocks, parse_candidate, split_files, split_reasoning

TRITON = r"@(?:triton\.)?jit\b"
CUDA = r"__global__"
MODEL = "import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n"


def fenced(code: str, lang: str = "python", ticks: str = "```") -> str:
    return f"{ticks}{lang}\n{code.rstrip()}\n{ticks}\n"


def parse(text: str, **kw):
    kw.setdefault("kernel_marker", TRITON)
    return parse_candidate(text, **kw)


# --- reasoning ------------------------------------------------------------------


@pytest.mark.parametrize("text", [A.THINK_THEN_ANSWER, A.CLOSE_TAG_ONLY], ids=["think", "close-tag-only"])
def test_reasoning_drafts_are_never_the_candidate(text):
    cand = parse(text, finish_reason="stop")
    assert cand.code == A.GOOD_FILE.strip() + "\n"
    report = cand.report
    assert report.source == "answer" and report.reasoning_sections == 1
    assert report.reasoning_chars > 300
    # Only the answer's block was read: the draft and the pseudo-code fence inside the reasoning were not.
    assert [b.role for b in report.blocks] == [BlockRole.MODULE]
    assert report.blocks[0].start_line > text[: text.index("</think>")].count("\n")


@pytest.mark.parametrize("tag", ["thinking", "reasoning", "THINK"])
def test_other_reasoning_tags(tag):
    text = A.THINK_THEN_ANSWER.replace("<think>", f"<{tag}>").replace("</think>", f"</{tag}>")
    assert parse(text).code == A.GOOD_FILE.strip() + "\n"


def test_candidate_from_reasoning_only_when_the_answer_holds_no_code():
    text = "<think>\nHere is the file.\n" + fenced(A.GOOD_FILE) + "</think>\nThe kernel above fuses the ops."
    cand = parse(text)
    assert cand.code == A.GOOD_FILE.strip() + "\n"
    assert cand.report.source == "reasoning"
    assert any("held no code" in n for n in cand.report.notes)


def test_provider_reasoning_field_is_counted_but_not_searched():
    cand = parse(fenced(A.GOOD_FILE), reasoning="Draft:\n" + fenced(A.DRAFT_FILE))
    assert cand.code == A.GOOD_FILE.strip() + "\n" and cand.report.reasoning_chars > 100
    from_field = parse("The file is in my reasoning.", reasoning="Draft:\n" + fenced(A.GOOD_FILE))
    assert from_field.code == A.GOOD_FILE.strip() + "\n" and from_field.report.source == "reasoning"


def test_cut_while_reasoning_is_truncation_not_a_draft():
    text = "<think>\nLet me draft it.\n" + fenced(A.DRAFT_FILE) + "Hmm, now the tiling. If BLOCK is"
    with pytest.raises(ParseError) as info:
        parse(text, finish_reason="length", max_tokens=4096)
    err = info.value
    assert err.kind == "truncated" and "while still reasoning" in err.feedback
    assert f"line {len(text.splitlines())}" in err.feedback and "max_tokens=4096" in err.feedback
    assert err.report.cut_line == len(text.splitlines()) and err.report.chosen == ()


def test_split_reasoning_keeps_line_numbers():
    text = "<think>\nplan\nmore\n</think>\nanswer line"
    split = split_reasoning(text)
    assert split.answer.splitlines()[4] == "answer line" and "plan" not in split.answer
    assert split.reasoning.strip() == "plan\nmore" and split.sections == 1 and not split.unclosed
    assert split_reasoning("<think>\nstill going").unclosed


# --- labels, snippets, pieces ----------------------------------------------------


@pytest.mark.parametrize("label", ["triton", "ipython", "python3", "py", "Python", ""])
def test_python_under_any_label(label):
    text = A.TRITON_LABEL.replace("```triton", f"```{label}")
    cand = parse(text)
    assert cand.code == A.GOOD_FILE.strip() + "\n"


def test_whole_file_beats_a_later_snippet_and_test_block():
    cand = parse(A.FILE_SNIPPET_TEST)
    assert cand.code == A.GOOD_FILE.strip() + "\n"
    roles = [b.role for b in cand.report.blocks]
    assert roles == [BlockRole.MODULE, BlockRole.PIECE, BlockRole.USAGE]
    assert cand.report.chosen == (1,)
    assert any("test/demo" in n for n in cand.report.notes)


def test_complementary_pieces_are_joined_without_tests_or_stubs():
    cand = parse(A.PIECES)
    assert cand.report.chosen == (1, 2)
    assert cand.code.count("class ModelNew") == 1 and "print(" not in cand.code and "..." not in cand.code
    ast.parse(cand.code)
    assert cand.code.startswith("import torch") and "add_relu_kernel[" in cand.code
    assert [b.role for b in cand.report.blocks] == [BlockRole.PIECE, BlockRole.PIECE, BlockRole.USAGE, BlockRole.STUB]


def test_later_whole_module_wins_and_two_kernel_versions_are_not_joined():
    revised = A.GOOD_FILE.replace("BLOCK=1024", "BLOCK=2048")
    assert parse(fenced(A.GOOD_FILE) + "Better:\n" + fenced(revised)).code == revised.strip() + "\n"
    # Two versions of the kernel, then ModelNew: the nearer version joins, the older one does not.
    v1, v2 = A.HEADER + A.DRAFT_KERNEL, A.HEADER + A.KERNEL
    cand = parse(fenced(v1) + "Fixed:\n" + fenced(v2) + "Module:\n" + fenced(A.MODEL_NEW))
    assert cand.report.chosen == (2, 3) and "* 2.0" in cand.code
    assert cand.code.count("def add_relu_kernel") == 1


def test_snippet_class_is_not_preferred_over_the_full_class():
    snippet = "class ModelNew(nn.Module):\n    def forward(self, x, y):\n        return launch(x, y)\n"
    cand = parse(fenced(A.HEADER + A.KERNEL) + fenced(A.MODEL_NEW) + "In short:\n" + fenced(snippet))
    assert cand.report.chosen == (1, 2) and "launch(" not in cand.code


def test_pieces_without_any_imports_are_incomplete():
    with pytest.raises(ParseError) as info:
        parse(fenced(A.KERNEL) + fenced(A.MODEL_NEW))
    err = info.value
    assert err.kind == "incomplete" and "`torch`" in err.feedback and "`triton`" in err.feedback


def test_stub_only_is_incomplete():
    with pytest.raises(ParseError) as info:
        parse(fenced("import torch.nn as nn\nclass ModelNew(nn.Module):\n    ..."))
    assert info.value.kind == "incomplete" and "forward" in info.value.feedback


def test_final_file_with_a_syntax_error_goes_to_the_verifier():
    broken = A.GOOD_FILE.replace("def forward(self, x, y):", "def forward(self, x, y)")
    cand = parse(fenced(A.DRAFT_FILE) + "Final:\n" + fenced(broken))
    assert cand.code == broken.strip() + "\n" and "does not parse" in cand.report.decision


# --- truncation --------------------------------------------------------------------


@pytest.mark.parametrize("finish_reason", ["length", None])
def test_cut_final_block_is_reported_and_no_earlier_block_runs(finish_reason):
    with pytest.raises(ParseError) as info:
        parse(A.CUT_SECOND_VERSION, finish_reason=finish_reason)
    err = info.value
    last_line = len(A.CUT_SECOND_VERSION.splitlines())
    opens = A.CUT_SECOND_VERSION.splitlines().index("```python", 10) + 1
    assert err.kind == "truncated"
    assert f"at line {last_line}" in err.feedback and f"opens at line {opens}" in err.feedback
    assert "shorter answer" in err.feedback
    assert "was not run in its place" in str(err) and err.report.chosen == ()


def test_forgotten_closing_fence_with_a_normal_stop_is_not_a_cut():
    text = "Here:\n```python\n" + A.GOOD_FILE
    cand = parse(text, finish_reason="stop")
    assert cand.code == A.GOOD_FILE.strip() + "\n" and any("never closed" in n for n in cand.report.notes)


def test_limit_reached_after_the_last_block_is_noted():
    cand = parse(fenced(A.GOOD_FILE) + "This works because each program", finish_reason="length")
    assert cand.code == A.GOOD_FILE.strip() + "\n"
    assert cand.report.truncated and any("token limit" in n for n in cand.report.notes)


@pytest.mark.parametrize("reason", ["length", "max_tokens"])
def test_finish_reason_length_without_code_is_truncation(reason):
    with pytest.raises(ParseError) as info:
        parse("Let me think about the tiling step by step", finish_reason=reason)
    assert info.value.kind == "truncated"


# --- bare code, languages, files ----------------------------------------------------


def test_bare_code_is_taken():
    cand = parse(A.BARE)
    assert cand.code == A.GOOD_FILE.strip() + "\n" and cand.report.source == "bare code"


def test_bare_code_without_model_new_says_so():
    with pytest.raises(ParseError) as info:
        parse(A.BARE_WITHOUT_MODEL_NEW)
    assert info.value.kind == "no_model_new" and "without a fence" in info.value.feedback


def test_no_code():
    with pytest.raises(ParseError) as info:
        parse("I think tiling would help.")
    assert info.value.kind == "no_code" and "```python" in info.value.feedback
    with pytest.raises(ParseError) as info:
        parse("<think>\ntiling?\n</think>\nTiling would help.")
    assert "outside your reasoning" in info.value.feedback


def test_cuda_block_referenced_by_the_python_file_is_embedded():
    cand = parse(A.CUDA_SPLIT, kernel_marker=CUDA)
    assert cand.report.chosen == (2,) and "as `cuda_src`" in cand.report.decision
    tree = ast.parse(cand.code)
    namespace: dict = {}
    assign = next(n for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "cuda_src")
    exec(compile(ast.Module([assign], []), "<cand>", "exec"), namespace)
    # The source arrives byte for byte, C escapes included, before load_inline uses it.
    assert namespace["cuda_src"].strip() == A.CUDA_KERNEL.strip() and "tensors\\n" in namespace["cuda_src"]
    assert assign.lineno < cand.code.splitlines().index("module = load_inline(") + 1


def test_cuda_block_repeating_the_python_string_is_not_added_twice():
    inline = A.CUDA_PYTHON.replace('cpp_src = "', 'cuda_src = r"""' + A.CUDA_KERNEL + '"""\ncpp_src = "')
    cand = parse(fenced(A.CUDA_KERNEL, "cuda") + fenced(inline), kernel_marker=CUDA)
    assert cand.code.count("__global__") == 1
    assert any("repeats source" in n for n in cand.report.notes)


def test_only_another_language_is_wrong_language():
    with pytest.raises(ParseError) as info:
        parse(fenced("#include <cuda.h>\n__global__ void k() {}\n", "cpp"))
    err = info.value
    assert err.kind == "wrong_language" and "```cpp" in err.feedback and "Python" in err.feedback


def test_python_without_model_new():
    with pytest.raises(ParseError) as info:
        parse(fenced("import torch\nclass Model(torch.nn.Module):\n    pass\n"))
    assert info.value.kind == "no_model_new"


def test_file_headers_single_and_multi_file():
    cu = "// file: kernel.cu\n__global__ void k() {}\n"
    py = "# file: model_new.py\n" + MODEL
    text = fenced(cu, "cuda") + fenced(py)
    single = parse_candidate(text)
    assert single.code == MODEL and set(single.files) == {"kernel.cu", "model_new.py"}
    bundle = parse_candidate(text, multi_file=True)
    files = split_files(bundle.code)
    assert files["model_new.py"] == MODEL and "__global__" in files["kernel.cu"]


def test_longer_fences_and_indented_fences():
    nested = MODEL + 'DOC = """\n```python\nnot the answer\n```\n"""\n'
    assert parse_candidate(fenced(nested, "", ticks="````")).code == nested
    indented = "1. The file:\n   ```python\n" + "".join("   " + ln + "\n" for ln in MODEL.splitlines()) + "   ```\n"
    assert parse_candidate(indented).code == MODEL


def test_extract_blocks_reports_tags_lines_and_closure():
    blocks = extract_blocks("```Python title\na\n```\n~~~cpp\nb\n~~~\n```py\nc")
    assert [(b.language, b.code, b.closed, b.start_line, b.end_line) for b in blocks] == [
        ("python", "a", True, 1, 3), ("cpp", "b", True, 4, 6), ("py", "c", False, 7, 8),
    ]


def test_report_is_plain_data():
    import json

    report = parse(A.FILE_SNIPPET_TEST).report
    data = json.loads(json.dumps(report.as_dict()))
    assert data["outcome"] == "candidate" and data["chosen"] == [1]
    assert data["blocks"][2]["role"] == "runs the model (test or demo)"
    assert report.summary().startswith("candidate: took block 1")
