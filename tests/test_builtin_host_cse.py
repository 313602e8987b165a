"""A host copy forward evaluates in several places is made once (evokernel/builtin/_emit.py,
share_host_copies): a permuted tensor reshaped for two matmuls is one copy, held in a local
until its last reader and then deleted, as buffers are; the candidate stays correct as written
and when its launch plan replays it."""

from __future__ import annotations

import re

import pytest

from builtin_case import Case, check_in_interpreter, explain, ok, run_cases, write
from evokernel.builtin import analyze, default_config, generate
from evokernel.builtin import _emit

# a chunked scan's shape of forward: one permuted reshape of the input (a copy) feeds two matmuls
TWICE = Case(
    "permuted_twice",
    "x: xp = x.permute(0, 2, 1, 3).reshape(6, 4, 5)\n"
    "a = torch.matmul(xp, self.w1)\nb = torch.relu(torch.matmul(xp, self.w2))\n"
    "return torch.matmul(a.transpose(1, 2), b)",
    "[torch.randn(2, 4, 3, 5)]",
    init="self.w1 = nn.Parameter(torch.randn(5, 4))\nself.w2 = nn.Parameter(torch.randn(5, 6))",
)
COPY = "_reshape(x.permute(0, 2, 1, 3), 6, 4, 5)"
CASES = [TWICE]


def _forward(case: Case, tmp_path, rules: str) -> str:
    source = generate(analyze(str(write(case, tmp_path)), rules))
    return source[source.index("    def _launches"):]


@pytest.fixture(scope="module")
def results(cpu_executor, tmp_path_factory):
    return run_cases(cpu_executor, CASES, tmp_path_factory.mktemp("host_cse"), rules="kernelbench")


@pytest.mark.parametrize("rules", ["kernelbench", "strict"])
def test_a_copy_two_matmuls_read_is_made_once_and_deleted_after_its_last_reader(tmp_path, rules):
    forward = _forward(TWICE, tmp_path, rules)
    assert forward.count(COPY) == 1, forward
    local = re.search(rf"(\w+) = {re.escape(COPY)}\n", forward).group(1)
    lines = forward.splitlines()
    readers = [i for i, line in enumerate(lines) if re.search(rf"\b{local}\b", line)
               and " = _reshape(" not in line and not line.strip().startswith("del ")]
    assert len(readers) == 2, forward
    assert re.fullmatch(rf"\s*del (\w+, )*{local}(, \w+)*", lines[readers[-1] + 1]), forward


def test_the_candidate_is_correct(results):
    assert ok(results[TWICE.name]), explain(results[TWICE.name])


def test_later_calls_replay_the_shared_copy(tmp_path):
    """A launch plan records the copy once (one host step, its result read by two launches) and
    replays it on new inputs."""
    task = write(TWICE, tmp_path)
    plan = analyze(str(task), "kernelbench")
    check = f"""
import torch
ref_module = import_file(Path({str(task)!r}), "ref")
torch.manual_seed(0)
ref = ref_module.Model().eval()
torch.manual_seed(0)
new = mod.ModelNew().eval()
torch.set_grad_enabled(False)
for _ in range(5):
    x = {TWICE.inputs}
    assert torch.allclose(new(*x), ref(*x), atol=1e-4, rtol=1e-4)
plans = new._evokernel_launch_plans
assert plans.replays == 3, plans.why
print('checked')
"""
    check_in_interpreter(tmp_path, check, generate(plan, default_config(plan)), "checked")


def test_the_outermost_repeat_is_shared_first_then_a_part_repeated_elsewhere():
    lines = ["buf0 = f_a(_reshape(_reshape(x, [2, 3]).permute(1, 0), 6), _reshape(x, [2, 3]))",
             "buf1 = f_b(_reshape(_reshape(x, [2, 3]).permute(1, 0), 6), buf0)",
             "del buf0",
             "return f_c(buf1, _contiguous(y.t()), _contiguous(y.t()))"]
    assert _emit.share_host_copies(lines) == [
        "_host0 = _reshape(x, [2, 3])",
        "_host1 = _reshape(_host0.permute(1, 0), 6)",
        "buf0 = f_a(_host1, _host0)",
        "del _host0",
        "buf1 = f_b(_host1, buf0)",
        "del buf0, _host1",
        "_host2 = _contiguous(y.t())",
        "return f_c(buf1, _host2, _host2)"]


def test_what_may_differ_between_its_evaluations_stays_as_written():
    lines = [
        # a launcher or a factory inside: each evaluation runs it (a random draw would draw again)
        "buf0 = f_a(_reshape(f_x(x), 6), _reshape(f_x(x), 6), _contiguous(_ones((2,), None, None).t()))",
        "buf1 = f_b(_contiguous(_ones((2,), None, None).t()))",
        # a tensor written in place between two evaluations (a cat's slots)
        "buf2 = f_c(_reshape(buf1, 6))",
        "buf3, _slots3 = _cat_slots(0, [_tensor_out(x), _tensor_out(x)])",
        "_copy_(_slots3[0], _reshape(buf3, 6))",
        "return f_d(_reshape(buf3, 6), _reshape(buf1, 6))"]
    shared = _emit.share_host_copies(lines)
    assert [line for line in shared if line.startswith("_host")] == ["_host0 = _reshape(buf1, 6)"]
    assert shared[-1] == "return f_d(_reshape(buf3, 6), _host0)"
