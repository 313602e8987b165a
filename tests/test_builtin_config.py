"""Config: serialisation, search spaces, neighbours; sampled configs compile and pass."""

import json
import random
from pathlib import Path

import pytest

from evokernel.builtin import Config, analyze, check_in_subprocess, default_config, neighbours, search_space

TASKS = Path(__file__).parent / "tasks"
ONE_PER_FAMILY = {"elementwise": "ew_broadcast_scalar", "rows": "rows_layernorm", "matmul": "mm_linear_gelu"}


@pytest.mark.parametrize("family", sorted(ONE_PER_FAMILY))
def test_space_default_and_neighbours(family):
    plan = analyze(TASKS / f"{ONE_PER_FAMILY[family]}.py")
    space = search_space(plan)
    assert len(space) == len(set(space)) > 4
    assert all(c.family == family for c in space)
    default = default_config(plan)
    assert default in space
    near = neighbours(default, plan)
    assert near == neighbours(default, plan)  # deterministic
    assert near and default not in near and all(c in space for c in near)


def test_config_round_trips_through_json():
    config = Config("matmul", block_m=64, block_n=128, block_k=32, group_m=8, num_warps=4, num_stages=4)
    assert Config.from_dict(json.loads(json.dumps(config.to_dict()))) == config
    assert Config.from_dict({**config.to_dict(), "unknown_key": 1}) == config


@pytest.mark.parametrize("bad", [{"family": "lstm"}, {"family": "rows", "block_m": 3},
                                 {"family": "conv", "precision": "fp16"}, {"family": "matmul", "split_k": 3},
                                 {"family": "matmul", "num_warps": 0}])
def test_invalid_config_is_refused(bad):
    with pytest.raises(ValueError):
        Config.from_dict(bad)


def test_neighbours_refuse_a_config_of_another_family():
    plan = analyze(TASKS / "rows_softmax.py")
    with pytest.raises(ValueError):
        neighbours(Config("matmul"), plan)


def _sample_jobs(per_task: int, tasks: list[str]) -> list[dict]:
    rng = random.Random(0)
    jobs = []
    for name in tasks:
        plan = analyze(TASKS / f"{name}.py")
        for config in rng.sample(search_space(plan), per_task):
            jobs.append({"task": str(TASKS / f"{name}.py"), "config": config.to_dict()})
    return jobs


MANY_TASKS = ["ew_unary_chain", "ew_fp16", "rows_softmax", "rows_stats", "rows_fp16_softmax",
              "mm_bmm_relu", "mm_fp16_linear", "mm_addmm_transposed"]


@pytest.fixture(scope="module")
def checked():
    """Both samples' (jobs, results), checked in one interpreter process (each would start its own)."""
    sampled, many = _sample_jobs(3, list(ONE_PER_FAMILY.values())), _sample_jobs(6, MANY_TASKS)
    results = check_in_subprocess(sampled + many)
    assert len(results) == len(sampled) + len(many)
    return (sampled, results[:len(sampled)]), (many, results[len(sampled):])


def test_sampled_configs_compile_and_pass(checked):
    for job, result in zip(*checked[0], strict=True):
        assert result.ok, (job["config"], result.message)


@pytest.mark.slow
def test_many_sampled_configs_compile_and_pass(checked):
    for job, result in zip(*checked[1], strict=True):
        assert result.ok, (job["task"], job["config"], result.message)


def test_every_field_a_search_varies_is_one_its_family_names(tmp_path):
    """A field the search space varies but the family's `tunable` leaves out would be searched without
    counting as a step, printed in no configuration text and refused by the probes' --set (tile2d was)."""
    import dataclasses
    from pathlib import Path

    from evokernel.builtin import analyze, family, search_space

    from builtin_case import Case, write

    depthwise = Case("dw", "x: return self.conv(x)", "[torch.randn(2, 8, 9, 7)]",
                     "self.conv = nn.Conv2d(8, 8, 3, padding=1, groups=8)")  # the direct kernel's space
    tasks = sorted((Path(__file__).parent / "tasks").glob("*.py")) + [write(depthwise, tmp_path)]
    seen = set()
    for path in tasks:
        if path.stem.startswith("unsupported"):
            continue
        plan = analyze(str(path))
        if not plan:
            continue
        space = search_space(plan)
        if not space:
            continue
        fields = [f.name for f in dataclasses.fields(space[0]) if f.name != "family"]
        varied = {name for name in fields if len({getattr(c, name) for c in space}) > 1}
        assert varied <= set(family(space[0].family).tunable), (path.stem, varied - set(family(space[0].family).tunable))
        seen.add(space[0].family)
    assert {"conv", "elementwise", "rows", "matmul"} <= seen


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_a_long_k_half_gemm_keeps_each_accumulator_slice_shallow(tmp_path, precision):
    """fp16/bf16 products reach the fp32 accumulator truncated, so a deep slice of K piles up a biased error
    (KernelBench's 6_Matmul in fp16 failed with 32768-deep slices): each slice is at most HALF_SLICE_DEPTH
    deep where _split's choices allow; fp32 operands, on IEEE or 3xTF32 products, keep the split for speed."""
    from builtin_case import Case, write
    from evokernel.builtin._config import HALF_SLICE_DEPTH

    def split(k: int, precision: str) -> int:
        case = Case(f"mm{k}", "a, b: return torch.matmul(a, b)", f"[torch.rand(256, {k}), torch.rand({k}, 256)]")
        return default_config(analyze(str(write(case, tmp_path)), precision=precision)).split_k

    assert split(131072 * 4, precision) == 64  # KernelBench's 6_Matmul: 8192-deep slices
    assert 131072 // split(131072, precision) <= HALF_SLICE_DEPTH
    assert split(131072 * 4, "fp32") == 16  # as before: parallelism alone decides
    assert split(4096, precision) == 1  # one slice of K = 4096 was already shallow enough
