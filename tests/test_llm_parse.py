"""parse_candidate: blocks in, one candidate file (or a precise ParseError) out."""

from __future__ import annotations

import pytest

from evokernel.llm import ParseError, extract_blocks, parse_candidate, split_files

MODEL = "import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n"


def fenced(code: str, lang: str = "python", ticks: str = "```") -> str:
    return f"{ticks}{lang}\n{code}{ticks}\n"


def test_single_block():
    cand = parse_candidate("Here it is:\n" + fenced(MODEL) + "\nDone.")
    assert cand.code == MODEL and cand.files == {}


def test_picks_the_block_that_defines_model_new():
    text = fenced("pip install triton", "bash") + fenced("x = 1\nimport os\n") + fenced(MODEL)
    cand = parse_candidate(text)
    assert cand.code == MODEL and "picked" in cand.notes[0]


def test_last_model_new_wins():
    revised = MODEL.replace("return x", "return x * 1")
    assert parse_candidate(fenced(MODEL) + "Better:\n" + fenced(revised)).code == revised


def test_joins_python_blocks_when_model_new_lacks_imports():
    kernel = "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x_ptr):\n    pass\n"
    model = "class ModelNew(nn.Module):\n    pass\n"
    cand = parse_candidate(fenced(kernel) + "and\n" + fenced(model))
    assert cand.code.startswith("import triton") and "class ModelNew" in cand.code
    assert "joined 2 Python blocks" in cand.notes


def test_file_headers_single_and_multi_file():
    cu = "// file: kernel.cu\n__global__ void k() {}\n"
    py = "# file: model_new.py\n" + MODEL
    text = fenced(cu, "cuda") + fenced(py)
    single = parse_candidate(text)
    assert single.code == MODEL
    assert set(single.files) == {"kernel.cu", "model_new.py"}
    bundle = parse_candidate(text, multi_file=True)
    assert "# file: kernel.cu" in bundle.code and "# file: model_new.py" in bundle.code
    files = split_files(bundle.code)
    assert files["model_new.py"] == MODEL and "__global__" in files["kernel.cu"]


def test_untagged_python_block_and_longer_fences():
    nested = MODEL + 'DOC = """\n```python\nnot the answer\n```\n"""\n'
    cand = parse_candidate(fenced(nested, "", ticks="````"))
    assert cand.code == nested


def test_bare_code_without_fences_is_taken():
    cand = parse_candidate(MODEL)
    assert "class ModelNew" in cand.code and cand.notes


def test_no_code():
    with pytest.raises(ParseError) as info:
        parse_candidate("I think tiling would help.")
    assert info.value.kind == "no_code"
    assert "```python" in info.value.feedback


def test_unterminated_fence_is_truncation():
    with pytest.raises(ParseError) as info:
        parse_candidate("Plan.\n```python\nimport torch\nclass ModelNew(torch.nn.Module):\n    def f")
    assert info.value.kind == "truncated"
    assert "cut off" in info.value.feedback


@pytest.mark.parametrize("reason", ["length", "max_tokens"])
def test_finish_reason_length_without_code_is_truncation(reason):
    with pytest.raises(ParseError) as info:
        parse_candidate("Let me think about the tiling step by step", finish_reason=reason)
    assert info.value.kind == "truncated"


def test_truncated_after_a_complete_block_keeps_it():
    text = fenced(MODEL) + "Now a faster variant:\n```python\nimport torch\nclass Mo"
    cand = parse_candidate(text, truncated=True)
    assert cand.code == MODEL
    assert any("token limit" in note for note in cand.notes)


def test_wrong_language():
    with pytest.raises(ParseError) as info:
        parse_candidate(fenced('#include <cuda.h>\n__global__ void k() {}\n', "cpp"))
    err = info.value
    assert err.kind == "wrong_language"
    assert "```cpp" in err.feedback and "Python" in err.feedback


def test_python_without_model_new():
    with pytest.raises(ParseError) as info:
        parse_candidate(fenced("import torch\nclass Model(torch.nn.Module):\n    pass\n"))
    assert info.value.kind == "no_model_new"
    assert "ModelNew" in info.value.feedback


def test_extract_blocks_reports_tags_and_closure():
    blocks = extract_blocks("```Python title\na\n```\n~~~cpp\nb\n~~~\n```py\nc")
    assert [(b.language, b.code, b.closed) for b in blocks] == [
        ("python", "a", True), ("cpp", "b", True), ("py", "c", False),
    ]
