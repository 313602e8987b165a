"""Level-2 style chains as pipelines of kernels: a gemm or convolution, then
norms, pooling, reductions and pointwise ops, under both rule sets (strict: all
ours; kernelbench: the library's conv/matmul, the rest fused into our kernels)."""

import pytest

from builtin_case import Case, Lazy, explain, ok, params, write
from evokernel.builtin import analyze, generate

CASES = [
    Case("conv_groupnorm_swish", "x: x = self.conv(x)\nx = self.gn(x)\nreturn x * torch.sigmoid(x)",
         "[torch.randn(2, 3, 6, 5)]", "self.conv = nn.Conv2d(3, 8, 3)\nself.gn = nn.GroupNorm(4, 8)"),
    Case("gemm_logsumexp_act", "x: x = self.fc(x)\nx = torch.logsumexp(x, dim=1, keepdim=True)\n"
         "return F.gelu(F.leaky_relu(x, 0.01))", "[torch.randn(6, 20)]", "self.fc = nn.Linear(20, 12)"),
    Case("linear_instancenorm_views", "x, y: x = self.fc(x)\n"
         "x = self.inorm(x.unsqueeze(1).unsqueeze(1)).squeeze(1).squeeze(1)\nreturn (x + y) * y",
         "[torch.randn(5, 20), torch.randn(5, 12)]", "self.fc = nn.Linear(20, 12)\nself.inorm = nn.InstanceNorm2d(12)", slow=True),
    Case("convt_maxpool_mean_tanh", "x: x = self.conv(x)\nx = F.max_pool2d(x, 2)\n"
         "return torch.tanh(torch.mean(torch.clamp(x, -1, 1), dim=(2, 3), keepdim=True))",
         "[torch.randn(2, 4, 4, 5)]", "self.conv = nn.ConvTranspose2d(4, 8, 3, stride=2, padding=1)", slow=True),
]
LONE = Case("lone_conv", "x: return self.conv(x)", "[torch.randn(2, 3, 6, 5)]", "self.conv = nn.Conv2d(3, 8, 3, bias=False)")


@pytest.fixture(scope="module")
def strict(cpu_executor, tmp_path_factory):
    return Lazy(cpu_executor, CASES, tmp_path_factory.mktemp("strict"))


@pytest.fixture(scope="module")
def kernelbench(cpu_executor, tmp_path_factory):
    return Lazy(cpu_executor, CASES + [LONE], tmp_path_factory.mktemp("kernelbench"), rules="kernelbench")


@pytest.mark.parametrize("name", params(CASES))
def test_strict_pipeline_is_correct(strict, name):
    assert ok(strict[name]), explain(strict[name])


@pytest.mark.parametrize("name", params(CASES + [LONE]))
def test_kernelbench_pipeline_is_correct(kernelbench, name):
    assert ok(kernelbench[name]), explain(kernelbench[name])


def test_kernelbench_rules_use_the_library_only_beside_our_kernels(tmp_path):
    plan = analyze(write(CASES[0], tmp_path), "kernelbench")
    assert plan.stages[0].family == "host" and "torch.nn.functional.conv2d(" in generate(plan)
    lone = analyze(write(LONE, tmp_path), "kernelbench")
    assert lone.family == "conv"  # nothing after it: the convolution stays our own kernel


def test_kernelbench_rules_keep_a_large_fp32_gemm_ours(tmp_path):
    """Where 3xTF32 beats cuBLAS's fp32 the gemm is our kernel with the pointwise work fused into it;
    a small gemm, or a half-precision one, is still the library's. (Planned at full size on meta
    tensors; the strict pipelines and the matmul cases run the same kernels.)"""
    def gemm(name, inputs, dtype="float32"):
        case = Case(name, "x: x = self.fc(x)\nreturn torch.logsumexp(torch.relu(x), dim=1, keepdim=True)",
                    inputs, f"self.fc = nn.Linear(8192, 1024, dtype=torch.{dtype})")
        return analyze(write(case, tmp_path), "kernelbench")

    big = gemm("big", "[torch.rand(1024, 8192)]")
    assert big.stages[0].family == "matmul" and big.main_stage.family == "matmul"
    assert "torch.nn.functional.linear(" not in generate(big) and "_tf32_split(" in generate(big)
    assert gemm("small", "[torch.rand(16, 8192)]").stages[0].family == "host"
    half = gemm("half", "[torch.rand(1024, 8192, dtype=torch.float16)]", "float16")
    assert half.stages[0].family == "host"


def test_a_library_candidate_is_refused_under_strict_rules(cpu_executor, tmp_path):
    from backends import EvalOptions

    path = write(CASES[1], tmp_path)
    source = generate(analyze(path, "kernelbench"))
    result = cpu_executor.evaluate(path, source, backend="triton",
                                   options=EvalOptions.from_dict({"rules": "strict", "timing": False}))
    assert not ok(result)
