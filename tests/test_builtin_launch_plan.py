"""Launch plans (evokernel/builtin/_launch_plan.py): a generated forward recorded once and its
launches replayed on later calls with the same input layout.

On the CPU the replay goes through the interpreter's entry with tensors; on the GPU it calls
each compiled kernel's own launcher with integer addresses, checked here with a stand-in
compiled kernel. Every replayed output is compared with the reference on fresh inputs."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from backends import EvalOptions
from builtin_case import Case, check_in_interpreter, explain, ok, write
from evokernel.builtin import _launch_plan as lp
from evokernel.builtin import analyze, default_config, generate
from evokernel.builtin._emit import route_launches

CONVNET = Case(
    "plan_convnet",
    "x: y = torch.relu(self.bn(self.conv(x)))\n"
    "return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.conv2(y) + y, 1), 1))",
    "[torch.randn(2, 3, 8, 8)]",
    init="self.conv = nn.Conv2d(3, 8, 3, padding=1)\nself.bn = nn.BatchNorm2d(8)\n"
         "self.conv2 = nn.Conv2d(8, 8, 3, padding=1)\nself.fc = nn.Linear(8, 5)",
)
LSTM = Case(
    "plan_lstm", "x, h0, c0: out, (h, c) = self.lstm(x, (h0, c0))\nreturn self.fc(out[:, -1, :]) + c[-1].sum()",
    "[torch.randn(2, 5, 4), torch.randn(2, 2, 6), torch.randn(2, 2, 6)]",
    init="self.lstm = nn.LSTM(4, 6, 2, batch_first=True)\nself.fc = nn.Linear(6, 3)",
)

# 29_SwinMLP's shape of forward: window partitions whose reshape copies, a grouped 1-wide
# convolution, a constant pad (a fill forward makes): all of it between the plan's stages
WINDOWS = Case(
    "plan_windows",
    "x: y = self.norm(x)\nw = y.view(2, 2, 3, 2, 3, 8).permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, 9, 8)\n"
    "z = self.mix(w.transpose(1, 2).reshape(-1, 16, 9))\nreturn torch.relu(F.pad(z, (1, 1), 'constant', 0.5)) * 2.0",
    "[torch.randn(2, 36, 8)]",
    init="self.norm = nn.LayerNorm(8)\nself.mix = nn.Conv1d(16, 16, 1, groups=2)",
)

# Prepended to each check (run by builtin_case.check_in_interpreter, the candidate imported as `mod`):
# ``ref`` and ``new`` built from the same seed, ``close`` and ``inputs`` to compare them.
PRELUDE = """
import torch
import torch.nn as nn

ref_module = import_file(Path(TASK), "ref")
torch.manual_seed(0)
ref = ref_module.Model().eval()
torch.manual_seed(0)
new = mod.ModelNew().eval()


def close(a, b):
    if isinstance(a, torch.Tensor):
        return torch.allclose(a, b, atol=1e-4, rtol=1e-4)
    return all(close(x, y) for x, y in zip(a, b))


def inputs():
    return INPUTS


torch.set_grad_enabled(False)
"""


def _in_interpreter(tmp_path, case: Case, rules: str, check: str) -> None:
    """Run ``check`` on the builtin's candidate for ``case`` in Triton's interpreter."""
    task = write(case, tmp_path)
    plan = analyze(str(task), rules)
    prelude = PRELUDE.replace("TASK", repr(str(task))).replace("INPUTS", case.inputs)
    check_in_interpreter(tmp_path, prelude + check + "\nprint('checked')\n", generate(plan, default_config(plan)), "checked")


REPLAYS = """
for _ in range(5):
    x = inputs()
    assert close(new(*x), ref(*x))
plans = new._evokernel_launch_plans
# call 1 runs as written, call 2 records (and checks), calls 3-5 replay
assert plans.replays == 3, plans.why
"""


@pytest.mark.parametrize("case, rules", [(CONVNET, "strict"), (CONVNET, "kernelbench"), (LSTM, "kernelbench"),
                                         (WINDOWS, "kernelbench"), (WINDOWS, "strict")],
                         ids=["convnet-strict", "convnet-kernelbench", "lstm-kernelbench", "windows-kernelbench",
                              "windows-strict"])
def test_later_calls_replay_the_recorded_launches_on_new_inputs(tmp_path, case, rules):
    _in_interpreter(tmp_path, case, rules, REPLAYS)


# 35_LSTM's shape of forward: the initial state drawn from torch's generator on every call
DRAWN_STATE = Case(
    "plan_drawn_state",
    "x: h0 = torch.randn(2, 2, 6, device=x.device)\nc0 = torch.randn(2, 2, 6, device=x.device)\n"
    "out, _ = self.lstm(x, (h0, c0))\nreturn self.fc(out[:, -1, :]) + h0[-1].sum()",
    "[torch.randn(2, 5, 4)]",
    init="self.lstm = nn.LSTM(4, 6, 2, batch_first=True)\nself.fc = nn.Linear(6, 3)",
)


def test_a_forward_that_draws_its_state_replays_with_fresh_draws(tmp_path):
    """Under kernelbench rules the draw is a host step: each replay draws anew from the same
    generator as the reference, and every call (the recording one too) draws once as it does."""
    _in_interpreter(tmp_path, DRAWN_STATE, "kernelbench", """
for k in range(5):
    x = inputs()
    torch.manual_seed(100 + k)
    want, after_ref = ref(*x), torch.rand(1)
    torch.manual_seed(100 + k)
    got, after_new = new(*x), torch.rand(1)
    assert close(got, want), k
    assert torch.equal(after_new, after_ref), k  # the generator is where the reference left it
assert new._evokernel_launch_plans.replays == 3, new._evokernel_launch_plans.why
""")


def test_a_replaced_parameter_is_seen_and_the_forward_recorded_again(tmp_path):
    _in_interpreter(tmp_path, CONVNET, "strict", """
x = inputs()[0]
for _ in range(3):
    new(x)
assert new._evokernel_launch_plans.replays == 1
weight = torch.randn_like(ref.conv.weight)
ref.conv.weight = nn.Parameter(weight.clone())
new.conv.weight = nn.Parameter(weight.clone())  # new storage: the plan's address is stale
assert close(new(x), ref(x))
assert close(new(x), ref(x))  # the plan made again after the change
assert new._evokernel_launch_plans.replays == 2
""")


def test_a_torch_op_the_plan_does_not_hold_keeps_forward_running_as_written(tmp_path):
    _in_interpreter(tmp_path, CONVNET, "strict", """
original = mod.ModelNew._launches


def with_untracked_op(self, x):
    doubled = torch.empty_like(x)
    doubled.copy_(x * 2)  # torch's own kernel, neither a launch nor a host step: no plan can replay it
    return original(self, doubled)


mod.ModelNew._launches = with_untracked_op
x = inputs()[0]
outs = [new(x + i) for i in range(5)]
plans = new._evokernel_launch_plans
assert plans.replays == 0 and plans.plans == {}
assert "differ" in next(iter(plans.why.values()))
assert close(outs[-1], ref((x + 4) * 2))
""")


class _Compiled:
    """Stands in for a compiled kernel: its launcher (Triton's takes the stream as a keyword)
    records what it is given."""

    def __init__(self, calls):
        self.calls = calls

    def __getitem__(self, grid):
        return lambda *args, stream=None: self.calls.append((grid, args))


class _Jit:
    arg_names = ["x_ptr", "out_ptr", "n", "BLOCK"]

    def __init__(self, calls):
        self.calls = calls

        def fn(x_ptr, out_ptr, n, BLOCK=128):
            pass

        self.fn = fn

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            return _Compiled(self.calls)

        return launch


def test_on_the_gpu_path_each_kernel_gets_the_new_addresses_in_declaration_order():
    calls: list = []
    kernel = _Jit(calls)
    module = nn.Linear(4, 4)
    x = torch.randn(8, 4)
    recording = lp._PlanRecording(module, (x,))
    lp._RECORDING[:] = [recording]
    tmp = torch.empty(8, 4)
    lp._launch(kernel, lambda meta: (meta["n"] // meta["BLOCK"],), x[2:], tmp, 256)
    out = torch.empty(8, 4)
    lp._launch(kernel, (3,), tmp, out, 32, BLOCK=64)
    lp._launch(kernel, (1,), module.weight, out, 16)
    lp._RECORDING.clear()
    plan = recording.finish(out)
    assert recording.why is None

    y = torch.randn(8, 4)
    calls.clear()
    result = plan.run((y,))
    assert result.shape == (8, 4)
    (g1, a1), (g2, a2), (g3, a3) = calls
    assert g1 == (2, 1, 1) and g2 == (3, 1, 1)  # a grid function evaluated on the bound arguments
    assert a1[0] == y.data_ptr() + 2 * 4 * 4  # the new input's address, the view's offset kept
    assert a1[2:] == (256, 128) and a2[2:] == (32, 64)  # scalars; the default and the keyword constexpr
    assert a1[1] == a2[0]  # one temporary, in the plan's block
    assert a2[1] == result.data_ptr()  # the output: an allocation of its own
    assert a3[0] == module.weight.data_ptr()  # a parameter: its own address


def test_launches_route_through_the_recorder_and_other_indexing_does_not():
    text = ("    k_s0[(triton.cdiv(n, 4), b[0])](x, y[1:], BLOCK=4)\n"
            "    main_kernel[grid](a)\n"
            "    z = shape[0]\n")
    routed = route_launches(text, {"k_s0"})
    assert "_launch(k_s0, (triton.cdiv(n, 4), b[0]), x, y[1:], BLOCK=4)" in routed
    assert "_launch(main_kernel, grid, a)" in routed
    assert "z = shape[0]" in routed


def test_the_executor_accepts_a_candidate_whose_later_trials_replay(tmp_path, cpu_executor):
    task = write(CONVNET, tmp_path)
    plan = analyze(str(task), "strict")
    options = EvalOptions.from_dict({"rules": "strict", "timing": False, "baselines": False, "trials": 4})
    result = cpu_executor.evaluate(task, generate(plan, default_config(plan)), backend="triton", options=options)
    assert ok(result), explain(result)


def test_forward_copies_and_fills_become_recorded_host_steps():
    from evokernel.builtin._emit import route_copies

    lines = ["buf1 = fused_a(x.transpose(1, 2).reshape(-1, 16, 9), y.flatten(start_dim=1), z.contiguous())",
             "buf2 = fused_b(torch.ones(64, 64, device=x.device, dtype=torch.bool), torch.full((1, 4), 0.0, "
             "dtype=torch.float32, device=x.device), torch.zeros_like(w, requires_grad=False))",
             "return fused_c(buf1.view(2, -1), buf2.reshape_as(buf1))"]
    assert route_copies(lines) == [
        "buf1 = fused_a(_reshape(x.transpose(1, 2), -1, 16, 9), _flatten(y, 1, -1), _contiguous(z))",
        "buf2 = fused_b(_ones((64, 64), torch.bool, x.device), _full((1, 4), 0.0, torch.float32, x.device), "
        "_zeros_like(w))",
        "return fused_c(buf1.view(2, -1), _reshape_as(buf2, buf1))"]
    # a factory with other keywords, or zeros_like asking for a gradient, stays as written
    kept = ["buf = fused_d(torch.ones(3, pin_memory=True), torch.zeros_like(w, requires_grad=True))"]
    assert route_copies(kept) == kept
