"""Reductions beyond the last dim: strided (leading-dim) layouts, argmax/argmin
(one-pass and chunked), split reductions for few long rows, the norms
(batch in eval, instance, group with affine parameters read in place), checked
by the executor on the CPU with the full-size tasks' configurations."""

import pytest

from builtin_case import Case, Lazy, explain, ok, params, write
from evokernel.builtin import analyze

CASES = [
    Case("sum_dim1_strided", "x: return torch.sum(x, dim=1, keepdim=True)", "[torch.randn(3, 37, 5)]",
         full="[torch.rand(128, 4096, 4095)]"),
    Case("max_dim1", "x: return torch.max(x, dim=1)[0]", "[torch.randn(3, 37, 5)]",
         full="[torch.rand(128, 4096, 4095)]", slow=True),
    # inner positions not adjacent (a transposed view): the offsets keep the operand's stride
    Case("sum_dim1_transposed_view", "x: return torch.sum(x.transpose(0, 2), dim=1)", "[torch.randn(5, 37, 3)]",
         full="[torch.rand(64, 512, 256)]"),
    Case("argmax_dim1_chunked", "x: return torch.argmax(x, dim=1)", "[torch.randn(3, 37, 5)]",
         full="[torch.rand(128, 4096, 4095)]"),
    Case("argmin_last", "x: return torch.argmin(x, dim=-1)", "[torch.randn(4, 37)]", slow=True),
    Case("prod", "x: return torch.prod(x, dim=1)", "[torch.rand(3, 40) + 0.5]", slow=True),
    Case("split_mean", "p, t: return torch.mean((p - t) ** 2)", "[torch.randn(2, 16384), torch.randn(2, 16384)]"),
    Case("frobenius", "x: return x / torch.norm(x, p='fro')", "[torch.randn(2, 8, 32, 32)]", slow=True),
    Case("instance_norm_affine", "x: return self.norm(x)", "[torch.randn(2, 4, 6, 7)]",
         "self.norm = nn.InstanceNorm2d(4, affine=True)", slow=True),
    Case("group_norm_affine", "x: return torch.relu(self.norm(x))", "[torch.randn(2, 8, 5, 3)]",
         "self.norm = nn.GroupNorm(2, 8)\nnn.init.uniform_(self.norm.weight)\nnn.init.uniform_(self.norm.bias)"),
    Case("batch_norm_eval", "x: return self.bn(x)", "[torch.randn(2, 4, 5, 3)]",
         "self.bn = nn.BatchNorm2d(4)\nself.bn.running_mean.uniform_()\nself.bn.running_var.uniform_(0.5, 2)", slow=True),
    # few long rows with a per-element result: chunk partials (mean and variance in one pass, far
    # from zero so a sum of squares would cancel), their merge, then the per-element pass
    Case("layer_norm_few_long_rows", "x: return self.ln(x)", "[torch.randn(2, 4, 64, 64) * 3 + 100]",
         "self.ln = nn.LayerNorm((4, 64, 64))\nnn.init.uniform_(self.ln.weight)\nnn.init.uniform_(self.ln.bias)"),
    Case("log_softmax_few_long_rows", "x: return torch.log_softmax(x, dim=1)", "[torch.randn(3, 20000) * 4]"),
]


def _case(name: str) -> Case:
    return next(c for c in CASES if c.name == name)


@pytest.fixture(scope="module")
def results(cpu_executor, tmp_path_factory):
    return Lazy(cpu_executor, CASES, tmp_path_factory.mktemp("reduce"))


@pytest.mark.parametrize("name", params(CASES))
def test_reduction_candidate_is_correct(results, name):
    assert ok(results[name]), explain(results[name])


def test_few_long_rows_reduce_in_chunks(tmp_path):
    from evokernel.builtin import generate

    source = generate(analyze(write(_case("split_mean"), tmp_path)))
    assert "_rows_partial_kernel" in source and "_rows_combine_kernel" in source


def test_few_long_rows_with_a_per_element_result_are_one_rows_plan(tmp_path):
    """A layer norm over a few long rows: the mean and variance of chunks in one pass, their
    merge, then a pass per element (was four kernels: mean, x - mean stored, variance, output)."""
    from evokernel.builtin import generate

    plan = analyze(write(_case("layer_norm_few_long_rows"), tmp_path))
    assert plan.family == "rows"
    source = generate(plan)
    assert "fused_rows(" in source and "_launch(_rows_apply_kernel" in source


def test_a_mean_and_its_variance_or_a_max_and_its_exponentials_are_one_loop(tmp_path):
    """The multi-pass kernel reads a group norm's row twice (statistics, then the output), not
    three times, and a softmax's twice (was max, sum, output); sums accumulate per lane."""
    from evokernel.builtin import generate
    from evokernel.builtin._config import Config

    def loops(case: Case) -> int:
        source = generate(analyze(write(case, tmp_path)), Config("rows", one_pass=False, block_n=16))
        kernel = source.split("def _rows_multipass_kernel(")[1].split("@triton")[0]
        return kernel.count("for start in range(")

    assert loops(_case("group_norm_affine")) == 2
    assert loops(Case("softmax", "x: return torch.softmax(x, dim=1)", "[torch.randn(3, 40)]")) == 2
    assert loops(Case("std", "x: return x.std(1)", "[torch.randn(3, 40)]")) == 1
    # a sum of values that depend on the maximum otherwise than through exp(x - max): a loop each
    assert loops(Case("max_then_sum", "x: return (x - x.max(1, keepdim=True)[0]).abs().sum(1)",
                      "[torch.randn(3, 40)]")) == 2


def test_pairs_are_found_only_where_the_second_reads_the_first_as_a_mean_or_a_maximum(tmp_path):
    from evokernel.builtin._row_passes import fused_pairs

    def kinds(forward: str, inputs: str = "[torch.randn(3, 40)]") -> list[str]:
        plan = analyze(write(Case("pairs", forward, inputs), tmp_path))
        stage = plan.stages[0] if plan.family == "pipeline" else plan
        return [p.kind for p in fused_pairs(stage.nodes)]

    assert kinds("x: return torch.var(x, dim=1)") == ["welford"]
    assert kinds("x: return torch.log_softmax(x, dim=1)") == ["softmax"]
    assert kinds("x: return torch.logsumexp(x, dim=1)") == ["softmax"]
    # a sum of squares about the maximum, or of exp(x - mean): one reads the other, but is no pair
    assert kinds("x: return ((x - x.max(1, keepdim=True)[0]) ** 2).sum(1)") == []
    assert kinds("x: return torch.exp(x - x.mean(1, keepdim=True)).sum(1)") == []


@pytest.mark.parametrize("case", [
    Case("softmax_with_minus_inf", "x: return torch.softmax(x, dim=1)",
         "[torch.randn(5, 300).masked_fill(torch.rand(5, 300) < 0.3, float('-inf'))]"),
    Case("group_norm_chunks_cross_channels", "x: return self.norm(x)", "[torch.randn(2, 8, 5, 3) + 50]",
         "self.norm = nn.GroupNorm(2, 8)\nnn.init.uniform_(self.norm.weight)\nnn.init.uniform_(self.norm.bias)"),
    Case("cross_entropy_chunks", "x, y: return F.cross_entropy(x, y)", "[torch.randn(7, 100), torch.randint(0, 100, (7,))]"),
], ids=lambda c: c.name)
def test_one_loop_pairs_are_correct_over_many_chunks(cpu_executor, tmp_path, case):
    """Chunks of 8 along rows of 300, 15-value channel runs (a chunk crosses a channel's end) and
    100 classes: the online softmax with masked -inf values, Welford's update, the per-channel
    weight addressed without a division, the class index compared per row."""
    from backends import EvalOptions, Verdict
    from evokernel.builtin import generate
    from evokernel.builtin._config import Config

    task = write(case, tmp_path)
    source = generate(analyze(task), Config("rows", one_pass=False, block_m=1, block_n=8, num_warps=4))
    result = cpu_executor.evaluate(task, source, backend="triton", options=EvalOptions(trials=1, timing=False))
    assert result.status == Verdict.OK, result.message


def test_frobenius_norm_is_a_reduction_then_a_pointwise_pass(tmp_path):
    plan = analyze(write(_case("frobenius"), tmp_path))
    assert [s.family for s in plan.stages] == ["rows", "elementwise"]


def test_strided_rows_address_adjacent_inner_positions_without_a_stride(tmp_path):
    """Contiguous inner positions are `i` itself, so Triton lays the tile's threads along them
    (coalesced); a view whose inner positions are apart keeps `i * stride` (checked correct above)."""
    from evokernel.builtin import generate

    source = generate(analyze(write(_case("sum_dim1_strided"), tmp_path)))
    assert "lay_x_icontig=x_lay[7] == 1" in source
    assert "elif lay_x_icontig:\n        x_row = (o % lay_x_olo) * lay_x_solo + (o // lay_x_olo) * lay_x_sohi + i\n" in source


def test_long_rows_take_one_program_each_whatever_the_remembered_block_m(cpu_executor, tmp_path):
    """A configuration remembered from short rows (block_m=64) must not pack long rows 64 to a
    program: on an H200 that left 16 programs for 1024 rows of 258,064 elements."""
    from backends import Verdict
    from evokernel.builtin import generate
    from evokernel.builtin._config import Config

    from backends import EvalOptions

    case = Case("group_norm_long_rows", "x: return self.norm(torch.sigmoid(x))", "[torch.randn(2, 4, 8, 8)]",
                "self.norm = nn.GroupNorm(2, 4)")
    task = write(case, tmp_path)
    plan = analyze(task)
    config = Config(family="rows", block_m=64, block_n=8, one_pass=False)
    source = generate(plan, config)
    assert "block_m = 64 if strided or n_cols <= 64 else 1" in source  # rows of 128 here: one a program
    result = cpu_executor.evaluate(task, source, backend="triton", options=EvalOptions(trials=1, cpu_reps=1))
    assert result.status == Verdict.OK, result.message


def test_a_draft_takes_remembered_configurations_of_its_own_shape_class_only(tmp_path):
    """A group norm over short rows is not drafted with a configuration found on long rows
    (on the H200: 0.27x of eager), even when that one is the memory's most valuable; a
    configuration from a task whose default is the same is still taken."""
    from evokernel.builtin import Config, default_config, search_space
    from evokernel.loop import MemoryNote, StepContext
    from evokernel.policies._builtin import TritonBuiltinPolicy
    from evokernel.policies._search import PlanCache

    path = write(_case("group_norm_affine"), tmp_path)
    plan = analyze(path)
    default = default_config(plan)
    long_rows = Config(family="rows", one_pass=False, block_m=1, block_n=4096, num_warps=8)
    space = search_space(plan)
    same_class = next(c for c in space if c not in (default, long_rows))  # another configuration, found on a like task
    assert long_rows in space and default != long_rows

    def note(i, config, task_default, value):
        return MemoryNote(id=i, kind="trace", task_key=f"other-{i}", backend="triton", key_text="", content="",
                          status="ok", latency_ms=1.0, value=value,
                          extra={"config": config.to_dict(), "family": "rows", "default_config": task_default.to_dict()})

    def draft(memories):
        ctx = StepContext(task_name="group_norm_affine", task_key="gn", task_path=str(path), task_source=path.read_text(),
                          category="", backend="triton", stage="draft", step=1, memories=memories, feedback=None,
                          start_point=None, tried=frozenset(), run_id=1, size="small")
        return Config.from_dict(TritonBuiltinPolicy(PlanCache()).propose(ctx).extra["config"])

    assert draft([note(1, long_rows, long_rows, 0.9)]) == default
    assert draft([note(1, long_rows, long_rows, 0.9), note(2, same_class, default, 0.5)]) == same_class


def _rows_helpers() -> dict:
    import torch

    from evokernel.builtin._gen_rows import LAYOUT_HELPER

    scope = {"torch": torch, "_contiguous": lambda t: t.contiguous()}
    exec(LAYOUT_HELPER, scope)
    return scope


def _addressed(t, layout, full, g0, g1):
    """The values a rows kernel reads from ``t`` through ``layout``, in the (outer, N, inner) order."""
    import math

    import torch

    sizes = (math.prod(full[:g0]), math.prod(full[g0:g1]), math.prod(full[g1:]))
    offsets = torch.zeros(sizes, dtype=torch.int64)
    for region, size in enumerate(sizes):
        lo_size, lo_stride, hi_stride = layout[3 * region:3 * region + 3]
        r = torch.arange(size)
        part = (r // lo_size) * hi_stride + (r % lo_size) * lo_stride
        shape = [1, 1, 1]
        shape[region] = size
        offsets = offsets + part.view(shape)
    flat = torch.as_strided(t, (t.untyped_storage().nbytes() // t.element_size(),), (1,), 0)
    return flat[offsets + t.storage_offset()]


def test_a_per_channel_operand_of_rows_over_the_last_dim_copies_its_channels_not_the_whole_tensor():
    # UNet's softmax over W after conv, bias and batch norm: [C, 1, 1] parameters over (N, C, H) rows
    # have no two-run layout; the copy spans C x H values, not N x C x H x W
    import torch

    helpers = _rows_helpers()
    full, g0, g1 = (3, 4, 5, 6), 3, 4
    bias = torch.randn(4, 1, 1)
    t, layout = helpers["_rows_operand"](bias, full, g0, g1)
    assert t.numel() == 4 * 5
    want = bias.expand(full).reshape(60, 6, 1)
    assert torch.equal(_addressed(t, layout, full, g0, g1), want)
    # an operand that varies along every dim still reads as itself (no copy at all)
    x = torch.randn(full)
    t, layout = helpers["_rows_operand"](x, full, g0, g1)
    assert t is x and torch.equal(_addressed(t, layout, full, g0, g1), x.reshape(60, 6, 1))


def test_rows_operands_read_as_their_broadcast_for_every_split_and_broadcast_pattern():
    import itertools

    import torch

    helpers = _rows_helpers()
    full = (3, 4, 5, 6)
    for g0, g1 in [(a, b) for a in range(4) for b in range(a + 1, 5)]:
        for kept in itertools.product((False, True), repeat=4):
            operand = torch.randn([n if k else 1 for n, k in zip(full, kept)])
            t, layout = helpers["_rows_operand"](operand, full, g0, g1)
            assert layout is not None and t.numel() <= operand.expand(full).numel()
            outer = 1
            for n in full[:g0]:
                outer *= n
            want = operand.expand(full).reshape(outer, -1, max(1, t.new_empty(full[g1:]).numel()))
            assert torch.equal(_addressed(t, layout, full, g0, g1), want), (g0, g1, kept)
