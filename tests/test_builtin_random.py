"""Random draws in forward (torch.randn/rand, e.g. an LSTM's h0/c0 when none is given): the
reference library call under the kernelbench rules, our own Philox kernel under strict, a fresh
draw on every call either way; checked by the executor and, for the distribution, in the
interpreter."""

import pytest

from builtin_case import Case, Lazy, check_in_interpreter, explain, ok, write

# the draws do not reach the output (the executor checks only deterministic references), but
# they are made, and under strict rules without torch's random kernels
CASES = [
    Case("draws_beside_compute", "x: return x * 2.0 + 0.0 * torch.randn(3, 70, device=x.device)"
         " + 0.0 * torch.rand(3, 70, device=x.device)", "[torch.randn(3, 70)]"),
    # 35_LSTM's forward: the state is drawn when the caller gives none; 40 steps forget it
    Case("lstm_draws_its_state", "x, h0=None, c0=None: batch = x.size(0)\n"
         "if h0 is None:\n    h0 = torch.randn(2, batch, 16, device=x.device)\n"
         "if c0 is None:\n    c0 = torch.randn(2, batch, 16, device=x.device)\n"
         "out, _ = self.lstm(x, (h0, c0))\nreturn self.fc(out[:, -1, :])", "[torch.rand(2, 40, 8)]",
         init="self.lstm = nn.LSTM(8, 16, 2, batch_first=True)\nself.fc = nn.Linear(16, 4)"),
]


@pytest.fixture(scope="module", params=["strict", "kernelbench"])
def results(request, cpu_executor, tmp_path_factory):
    return Lazy(cpu_executor, CASES, tmp_path_factory.mktemp(f"random_{request.param}"), rules=request.param)


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_random_draw_candidate_is_correct(results, name):
    assert ok(results[name]), explain(results[name])


_DISTRIBUTION = """
import torch
x = torch.zeros(1)
normal = [getattr(mod, NORMAL)(x) for _ in range(2)]
uniform = getattr(mod, UNIFORM)(x)
assert normal[0].shape == (3, 70000) and normal[0].dtype == torch.float32
assert abs(normal[0].mean().item()) < 0.02 and abs(normal[0].std().item() - 1.0) < 0.02, normal[0]
assert not torch.equal(normal[0], normal[1])  # each call draws anew
assert 0.0 <= uniform.min().item() and uniform.max().item() < 1.0 and abs(uniform.mean().item() - 0.5) < 0.01
print('distribution ok')
"""


def test_strict_draws_are_fresh_and_distributed_as_torchs(tmp_path):
    from evokernel.builtin import analyze, generate

    task = write(Case("big_draws", "x: return x + torch.randn(3, 70000, device=x.device)"
                      " * torch.rand(3, 70000, device=x.device)", "[torch.randn(3, 70000)]"), tmp_path)
    plan = analyze(task, "strict")
    assert plan, explain(plan)
    draws = [f"fused_random_s{k}" for k, s in enumerate(plan.stages) if s.family == "host"]
    assert len(draws) == 2, [s.family for s in plan.stages]
    candidate = generate(plan)
    assert "torch.randn" not in candidate.split("class ModelNew")[0] and "torch.rand(" not in candidate
    check = f"NORMAL, UNIFORM = {draws[0]!r}, {draws[1]!r}\n" + _DISTRIBUTION
    check_in_interpreter(tmp_path, check, candidate, "distribution ok")


def test_kernelbench_draws_call_the_references_function(tmp_path):
    from evokernel.builtin import analyze, generate

    task = write(CASES[0], tmp_path)
    candidate = generate(analyze(task, "kernelbench"))
    assert "torch.randn((3, 70), dtype=torch.float32, device=x.device)" in candidate
    assert "torch.rand((3, 70), dtype=torch.float32, device=x.device)" in candidate
