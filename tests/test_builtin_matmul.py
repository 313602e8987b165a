"""Matmul shapes: split-K, matrix-vector and vector-matrix as reductions,
diagonal scaling, triangular outputs, einsum, transposed and broadcast
operands, attention; with the full-size tasks' configurations (3xTF32 for
large fp32 ones, IEEE fp32 products for the rest)."""

from pathlib import Path

import pytest

from builtin_case import Case, Lazy, check_in_interpreter, explain, ok, params, write
from evokernel.builtin import Config, analyze, check_in_subprocess, default_config, generate, search_space

CASES = [
    Case("split_k", "a, b: return torch.matmul(a, b)", "[torch.randn(20, 300), torch.randn(300, 24)]",
         full="[torch.rand(256, 524288), torch.rand(524288, 256)]"),
    # K at least 16 x max(M, N): 3xTF32 with the operands split in registers, over K slices
    Case("long_k_split_in_registers", "a, b: return torch.matmul(a, b) * 0.5",
         "[torch.randn(20, 900) * torch.logspace(-3, 3, 900), torch.randn(900, 24)]",
         full="[torch.rand(256, 524288), torch.rand(524288, 256)]"),
    # K padded (45 -> 64), rows and columns past the tile re-read, split operands
    Case("square_3xtf32", "a, b: return torch.matmul(a, b)", "[torch.rand(70, 45), torch.rand(45, 33)]",
         full="[torch.rand(4096, 4096), torch.rand(4096, 4096)]"),
    Case("bmm_transposed_3xtf32", "a, b: return torch.relu(torch.bmm(a, b.transpose(1, 2)))",
         "[torch.randn(2, 9, 20), torch.randn(2, 11, 20)]", full="[torch.rand(128, 512, 1024), torch.rand(128, 2048, 1024)]"),
    Case("matvec", "a, b: return torch.matmul(a, b)", "[torch.randn(9, 300), torch.randn(300, 1)]"),
    Case("vecmat_1d", "a, b: return torch.matmul(a, b)", "[torch.randn(30), torch.randn(30, 7)]", slow=True),
    Case("diag", "a, b: return torch.diag(a) @ b", "[torch.randn(9), torch.randn(9, 7)]", slow=True),
    Case("triu_transposed", "a, b: return torch.triu(torch.matmul(a.T, b.T), diagonal=1)",
         "[torch.randn(21, 19), torch.randn(19, 21)]", full="[torch.rand(4096, 4096), torch.rand(4096, 4096)]"),
    Case("einsum", "a, b: return torch.einsum('bijl,lk->bijk', a, b)", "[torch.randn(2, 3, 5, 7), torch.randn(7, 6)]", slow=True),
    Case("bmm_broadcast_tril", "a, b: return torch.tril(a @ b)", "[torch.randn(2, 3, 9, 8), torch.randn(3, 8, 9)]", slow=True),
    Case("causal_attention", "q, k, v: return F.scaled_dot_product_attention(q, k, v, is_causal=True)",
         "[torch.randn(2, 9, 16), torch.randn(2, 9, 16), torch.randn(2, 9, 16)]", slow=True),
]


BY_NAME = {c.name: c for c in CASES}


@pytest.fixture(scope="module")
def results(cpu_executor, tmp_path_factory):
    return Lazy(cpu_executor, CASES, tmp_path_factory.mktemp("matmul"))


@pytest.mark.parametrize("name", params(CASES))
def test_matmul_candidate_is_correct(results, name):
    assert ok(results[name]), explain(results[name])


def test_tile_choice_follows_the_shape(tmp_path):
    big = Case("big", "a, b: return a @ b", "[torch.rand(4096, 4096), torch.rand(4096, 4096)]")
    long_k = Case("long_k", "a, b: return a @ b", "[torch.rand(256, 524288), torch.rand(524288, 256)]")
    assert default_config(analyze(write(big, tmp_path))).block_m == 128
    cfg = default_config(analyze(write(long_k, tmp_path)))
    assert cfg.split_k > 1 and cfg.block_m == 64


def test_precision_follows_the_shape(tmp_path):
    """3xTF32 where each operand element feeds many products; IEEE for a small output whose operands a
    split would not pay for, however long K (a matrix-vector-like product; 256 x 524288 x 256 ran 2.0x
    slower split in registers on the H200), and for half-precision operands."""
    def default(inputs):
        return default_config(analyze(write(Case("mm", "a, b: return a @ b", inputs), tmp_path)))

    assert default("[torch.rand(4096, 4096), torch.rand(4096, 4096)]").precision == "3xtf32"
    assert default("[torch.rand(32768, 32), torch.rand(32, 32768)]").precision == "3xtf32"
    assert default("[torch.rand(256, 524288), torch.rand(524288, 256)]").precision == "auto"
    assert default("[torch.rand(64, 524288), torch.rand(524288, 64)]").precision == "auto"
    assert default("[torch.rand(256, 2048), torch.rand(2048, 256)]").precision == "auto"
    # one tile of rows against a wide, deep weight: split in registers (level2's 128-row Linear layers)
    assert default("[torch.rand(128, 16384), torch.rand(16384, 16384)]").precision == "3xtf32"
    assert default("[torch.rand(10, 25088), torch.rand(25088, 4096)]").precision == "auto"  # VGG's classifier
    assert default("[torch.rand(128, 2048), torch.rand(2048, 16384)]").precision == "auto"  # short K
    assert default("[torch.rand(4096, 4096).half(), torch.rand(4096, 4096).half()]").precision == "auto"
    plan = analyze(write(Case("mm", "a, b: return a @ b", "[torch.rand(4096, 4096), torch.rand(4096, 4096)]"), tmp_path))
    space = search_space(plan)
    # a 3xTF32 draft outside the tolerance is redrafted with IEEE products, at the IEEE default tile
    assert space[0] == default_config(plan) and space[1].precision == "auto" and space[1].block_m == 128
    assert {c.precision for c in space} == {"3xtf32", "auto"}


def test_3xtf32_split_k_and_strided_operands_are_correct():
    """Split-K over the split operands (partials, then the sum kernel with the epilogue), batched and
    with a transposed weight; in the interpreter and on the sm_90 compile."""
    tasks = Path(__file__).parent / "tasks"
    split = dict(family="matmul", block_m=32, block_n=32, block_k=16, num_warps=4, num_stages=2, precision="3xtf32")
    jobs = [{"task": str(tasks / "mm_bmm_relu.py"), "config": {**split, "split_k": 4},
             "input_shapes": [[2, 9, 300], [2, 300, 13]]},
            {"task": str(tasks / "mm_addmm_transposed.py"), "config": {**split, "split_k": 1}},
            {"task": str(tasks / "mm_scale_residual.py"), "config": {**split, "split_k": 4, "block_k": 32},
             "input_shapes": [[19, 700], [700, 17], [19, 17]]}]
    for job, result in zip(jobs, check_in_subprocess(jobs), strict=True):
        assert result.ok, (job, result.message)


_SPLIT_CHECK = """
import torch
torch.manual_seed(0)
x = torch.randn(3, 37, 45) * torch.logspace(-20, 20, 45)
x[0, 0, 0], x[0, 0, 1] = float("inf"), -float("inf")
hi, lo = mod._tf32_split(x, 64)
assert hi.shape == lo.shape == (3, 37, 64) and hi.is_contiguous() and lo.is_contiguous()
assert hi[..., 45:].eq(0).all() and lo[..., 45:].eq(0).all()  # the K padding is zero
assert (hi.view(torch.int32) & 8191).eq(0).all() and (lo.view(torch.int32) & 8191).eq(0).all()  # TF32 values
h, l, xd = hi[..., :45].double(), lo[..., :45].double(), x.double()
finite = torch.isfinite(x)
assert ((h + l - xd).abs()[finite] <= xd.abs()[finite] * 2.0 ** -21).all()  # hi + lo is x to 22 bits
assert torch.equal(h[~finite], xd[~finite]) and l[~finite].eq(0).all()  # inf stays inf, not inf - inf
# a strided view of the same values splits the same
t = mod._tf32_split(x.transpose(1, 2).contiguous().transpose(1, 2), 64)
assert torch.equal(t[0], hi) and torch.equal(t[1], lo)
print("split ok")
"""


def test_3xtf32_split_is_exact_to_22_bits(tmp_path):
    """The pass before a 3xTF32 GEMM: high part the TF32 rounding of x, low part the TF32 rounding of
    the rest, both exactly TF32 values, K padded with zeros, infinities kept."""
    plan = analyze(write(BY_NAME['square_3xtf32'], tmp_path))
    config = Config("matmul", block_m=32, block_n=32, block_k=32, precision="3xtf32")
    check_in_interpreter(tmp_path, _SPLIT_CHECK, generate(plan, config), "split ok")


_SMALL_M_CHECK = """
import torch
def no_pass(*args, **kwargs):
    raise AssertionError("a pass before the GEMM split the operands")
mod._tf32_split = no_pass
torch.manual_seed(0)
a = torch.randn(12, 300) * torch.logspace(-3, 3, 300)
b = torch.randn(300, 700)
out = mod.ModelNew()(a, b)
want = (a.double() @ b.double()).float()
err = (out - want).abs().max().item()
assert err <= 1e-4 * want.abs().max().item(), err
print("small m ok")
"""


def test_3xtf32_with_one_tile_of_rows_splits_in_registers(tmp_path):
    """M within one tile (128 x 32768 x 32768, level2's Linear layers): the weight is read by one tile
    row, so a pass before the GEMM would triple its traffic; the operands split as they load, to
    within 1e-4 of the float64 product."""
    case = Case("small_m", "a, b: return a @ b", "[torch.randn(12, 300), torch.randn(300, 700)]")
    config = Config("matmul", block_m=16, block_n=32, block_k=32, num_warps=4, precision="3xtf32")
    check_in_interpreter(tmp_path, _SMALL_M_CHECK, generate(analyze(write(case, tmp_path)), config), "small m ok")


def test_matrix_vector_is_a_row_reduction(tmp_path):
    assert analyze(write(BY_NAME['matvec'], tmp_path)).family == "rows"


def test_a_failed_3xtf32_draft_is_redrafted_with_ieee_products(tmp_path):
    """3xTF32 is closer to the exact product than cuBLAS, but not always within 1e-4 of cuBLAS's own
    rounding (outputs that cancel to near zero): the next draft takes IEEE products, even when the
    memory holds a correct 3xTF32 configuration of another matmul of the same shape class."""
    import json

    from evokernel.loop import MemoryNote, StepContext
    from evokernel.policies._builtin import TritonBuiltinPolicy
    from evokernel.policies._search import PlanCache

    path = write(Case("mm", "a, b: return a @ b", "[torch.randn(4096, 4096), torch.randn(4096, 4096)]"), tmp_path)
    plan = analyze(path)
    default = default_config(plan)
    other = next(c for c in search_space(plan) if c.precision == "3xtf32" and c != default)
    remembered = MemoryNote(id=3, kind="trace", task_key="another-mm", backend="triton", key_text="", content="",
                            status="ok", latency_ms=1.0, value=0.9,
                            extra={"config": other.to_dict(), "family": "matmul", "default_config": default.to_dict()})

    def draft(tried):
        ctx = StepContext(task_name="mm", task_key="mm", task_path=str(path), task_source=path.read_text(),
                          category="", backend="triton", stage="draft", step=1, memories=[remembered],
                          feedback=None, start_point=None, tried=frozenset(tried), run_id=1, size="small")
        return Config.from_dict(policy.propose(ctx).extra["config"])

    policy = TritonBuiltinPolicy(PlanCache())
    first = draft(())
    assert first == other and first.precision == "3xtf32"
    second = draft({"builtin:" + json.dumps(first.to_dict(), sort_keys=True)})
    assert second.precision == "auto" and (second.block_m, second.block_n, second.num_warps) == (128, 128, 8)
