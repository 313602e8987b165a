"""Every whole model of the bundled level3 suite (our own models, not KernelBench's) plans at full
size under both rule sets: a front-end change that leaves one of them outside fails here with the
op and the reason. Planning runs the model on meta tensors, so full size costs no compute; the
models' results on the CPU executor and the H200 are benchmarks (benchmarks/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evokernel.builtin import Unsupported, analyze

MODELS = sorted((Path(__file__).resolve().parents[1] / "benchmarks" / "level3").glob("[0-9]*.py"))


def test_the_suite_holds_the_whole_models():
    assert len(MODELS) >= 47


@pytest.mark.parametrize("rules", ["strict", "kernelbench"])
@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_suite_model_plans_at_full_size(path, rules):
    plan = analyze(path, rules)
    assert not isinstance(plan, Unsupported), f"{path.name} under {rules}: {plan.reason}"
    assert plan.stages or plan.family != "pipeline"
