"""A launcher's own variables never shadow its operands: a task's tensors (forward's inputs,
parameters) are passed to launchers by their names, so a launcher that assigns a local of
the same name would read the wrong tensor after it (a convolution whose epilogue adds the
model's input ``x`` once read its own input there). Leaf names avoid the launchers' locals
(`_build._RESERVED`) and the launchers name their input and weight with a leading
underscore, which no leaf name has. The launchers checked are those of the test tasks and of the
bundled level3 suite's whole models, each of which must plan."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from builtin_case import Case, correctness_checks
from evokernel.builtin import analyze, generate
from evokernel.builtin._build import _RESERVED

ROOT = Path(__file__).resolve().parents[1]
# the recurrent launcher rebinds its sequence and states in one assignment that reads them first
REBOUND_ON_PURPOSE = {"fused_rnn": {"x", "h0", "c0"}}
DERIVED = re.compile(r"^(part|stat)\d+$")

CASES = [
    # a convolution on a computed buffer whose epilogue adds forward's input x (MobileNet's residual)
    Case("conv_epilogue_reads_x", "x: y = torch.relu(self.c1(x))\nreturn self.bn(self.c2(y)) + x",
         "[torch.randn(2, 4, 5, 5)]",
         init="self.c1 = nn.Conv2d(4, 6, 1)\nself.c2 = nn.Conv2d(6, 4, 3, padding=1)\n"
              "self.bn = nn.BatchNorm2d(4)\nself.eval()"),
    # forward's inputs named like the pool and convolution launchers' locals
    Case("inputs_named_like_locals", "src, width, p: y = self.c(torch.tanh(src))\n"
         "return F.max_pool2d(y, 2) * width + p",
         "[torch.randn(2, 3, 6, 6), torch.randn(2, 5, 3, 3), torch.randn(2, 5, 3, 3)]",
         init="self.c = nn.Conv2d(3, 5, 3, padding=1)", slow=True),
]

results, kernelbench_results, test_named_like_locals_is_correct, test_named_like_locals_is_correct_under_kernelbench_rules = correctness_checks(
    CASES, "names", ("conv_epilogue_reads_x",))


def _launcher_locals(source: str):
    for fn in ast.parse(source).body:
        if isinstance(fn, ast.FunctionDef) and not fn.decorator_list and fn.name.startswith("fused"):
            params = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
            stored = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            yield fn.name, params, stored


def _plan_and_default_candidate(path: Path, rules: str):
    """The plan and its default candidate (the one analyze() wrote, kept by the plan)."""
    plan = analyze(path, rules)
    return plan, generate(plan) if plan else None


SUITE_MODELS = sorted((ROOT / "benchmarks" / "level3").glob("[0-9]*.py"))
TASK_FILES = sorted((ROOT / "tests" / "tasks").glob("*.py")) + SUITE_MODELS


def test_the_suite_holds_the_whole_models():
    assert len(SUITE_MODELS) >= 47


@pytest.mark.parametrize("rules", ["strict", "kernelbench"])
@pytest.mark.parametrize("path", TASK_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_launchers_assign_only_reserved_or_underscored_names(path, rules):
    """Also: every whole model of the bundled level3 suite (our own models) plans at full size
    under both rule sets; a front-end change that leaves one outside fails here with the reason."""
    plan, source = _plan_and_default_candidate(path, rules)
    if path in SUITE_MODELS:
        assert plan, f"{path.name} under {rules}: {plan.reason}"
    if not plan:
        return
    launchers = list(_launcher_locals(source))
    assert launchers or path not in SUITE_MODELS, f"{path.name}: no launcher to check"
    for name, params, stored in launchers:
        rebound = params & stored - {"out"} - REBOUND_ON_PURPOSE.get(re.sub(r"_s\d+$", "", name), set())
        assert not rebound, f"{path.name}: {name} assigns its operands {sorted(rebound)}"
        # a leaf is lower case, never starts with "_", and takes none of these forms
        unreserved = {n for n in stored - params if n == n.lower() and not n.startswith("_")
                      and n not in _RESERVED and not DERIVED.match(n)
                      and n.rsplit("_", 1)[0] not in _RESERVED | params | stored  # x_s from x, out_3d from out
                      and not n.startswith(("v_", "l_", "stride_", "buf", "acc", "size_", "idx_"))}
        unreserved -= REBOUND_ON_PURPOSE.get(re.sub(r"_s\d+$", "", name), set())
        assert not unreserved, f"{path.name}: {name} assigns {sorted(unreserved)}, names a leaf may take"
