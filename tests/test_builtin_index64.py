"""64-bit offsets: every family's kernels, with the launcher's 2**31 check forced on,
still compute the right values in the interpreter and compile for sm_90 (the
KernelBench inputs past 2**31 elements take this path on the GPU)."""

import pytest

from builtin_case import Case, explain, ok, params, write
from evokernel.builtin import analyze, generate

CASES = [
    Case("elementwise", "x, y: return torch.relu(x) * y", "[torch.randn(3, 40), torch.randn(40)]"),
    Case("rows_strided", "x: return torch.softmax(x, dim=1)", "[torch.randn(3, 17, 5)]", slow=True),
    Case("rows_split", "p, t: return F.mse_loss(p, t)", "[torch.randn(2, 16384), torch.randn(2, 16384)]"),
    Case("matmul_split_k", "a, b: return torch.triu(a @ b)", "[torch.randn(20, 600), torch.randn(600, 24)]",
         full="[torch.rand(256, 524288), torch.rand(524288, 256)]"),
    Case("matmul_3xtf32_transposed", "a, b: return a.T @ b", "[torch.randn(45, 70), torch.randn(45, 33)]",
         full="[torch.rand(4096, 4096), torch.rand(4096, 4096)]"),
    Case("conv_gemm_and_direct", "x: return self.dw(torch.relu(self.conv(x)))", "[torch.randn(2, 3, 7, 6)]",
         "self.conv = nn.ConvTranspose2d(3, 8, 3, stride=2)\nself.dw = nn.Conv2d(8, 8, 3, groups=8)"),
    Case("pool_scan", "x: return torch.cumsum(F.max_pool2d(x, 2), dim=-1)", "[torch.randn(2, 3, 8, 9)]", slow=True),
]


@pytest.fixture(scope="module")
def results(cpu_executor, tmp_path_factory):
    from backends import EvalOptions
    from evokernel.builtin import default_config

    directory = tmp_path_factory.mktemp("idx64")
    options = EvalOptions.from_dict({"timing": False, "baselines": False, "trials": 1})
    done = {}

    def run(name):
        if name not in done:
            case = next(c for c in CASES if c.name == name)
            path = write(case, directory)
            plan = analyze(path)
            config = default_config(analyze(write(case, directory, case.full, "_full"))) if case.full else None
            source = generate(plan, config)
            head = "def _needs_i64(*tensors):\n"
            assert head in source
            source = source.replace(head, head + "    return True  # forced: the 64-bit variants under test\n")
            done[name] = cpu_executor.evaluate(path, source, backend="triton", options=options)
        return done[name]

    return run


@pytest.mark.parametrize("name", params(CASES))
def test_64_bit_offsets(results, name):
    assert ok(results(name)), explain(results(name))
