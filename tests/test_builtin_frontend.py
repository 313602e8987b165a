"""The builtin front end on whole models: a Model.__init__ built from the task file's own
classes, helper functions and helper methods (carried into the candidate as parameter
holders, their forward never run), and forwards torch.fx cannot trace (captured by dynamo
at the task's shapes)."""

import textwrap

import pytest
import torch

from builtin_case import evaluate_task, explain, ok, write_task
from evokernel.builtin import Unsupported, analyze, generate

# A tiny ResNet: a module-level helper, a block class and a helper method build the layers.
RESNET = '''
import torch
import torch.nn as nn
import torch.nn.functional as F

WIDTH = 4


def conv_bn(cin, cout, stride):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout))


class Block(nn.Module):
    expansion = 1

    def __init__(self, cin, cout, stride=1):
        super(Block, self).__init__()
        self.body = conv_bn(cin, cout, stride)
        self.relu = nn.ReLU(inplace=True)
        self.down = None if stride == 1 and cin == cout else nn.Conv2d(cin, cout, 1, stride, bias=False)

    def forward(self, x):
        out = self.body(x)
        if self.down is not None:
            x = self.down(x)
        out += x
        return self.relu(out)


class Model(nn.Module):
    growth = 2

    def __init__(self, classes):
        super(Model, self).__init__()
        self.cin = WIDTH
        self.stem = conv_bn(3, WIDTH, 1)
        self.stage1 = self._make_stage(WIDTH, 1, 1)
        self.stage2 = self._make_stage(self.growth * WIDTH, 1, 2)
        self.fc = nn.Linear(2 * WIDTH * Block.expansion, classes)

    def _make_stage(self, cout, blocks, stride):
        layers = [Block(self.cin, cout, stride)]
        self.cin = cout
        layers += [Block(cout, cout) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = F.relu(self.stem(x))
        x = self.stage2(self.stage1(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def get_inputs():
    return [torch.randn(2, 3, 6, 6)]


def get_init_inputs():
    return [5]
'''

# Slicing a buffer by a size read from the input: torch.fx cannot trace it, dynamo can.
SLICED = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, longest, width):
        super().__init__()
        self.register_buffer("mask", torch.tril(torch.ones(longest, longest)))
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        B, T, C = x.shape
        scores = self.proj(x) @ x.transpose(1, 2)
        scores = scores.masked_fill(self.mask[:T, :T] == 0, 0.0)
        return torch.tanh(scores[:, :, :T] * (1.0 / C))


def get_inputs():
    return [torch.randn(2, 5, 6)]


def get_init_inputs():
    return [8, 6]
'''

# A block whose forward computes with torch: ModelNew must neither carry it nor run it.
GUARDED = '''
import torch
import torch.nn as nn


class Gate(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(self._initial(n))

    def _initial(self, n):
        return torch.linspace(0.5, 1.5, n)

    def forward(self, x):
        return torch.sigmoid(x) * self.weight

    def describe(self):
        return torch.special.expit(self.weight)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = Gate(7)

    def forward(self, x):
        return self.gate(x) + 1.0


def get_inputs():
    return [torch.randn(3, 7)]


def get_init_inputs():
    return []
'''


# strict: four convolutions of our own on the interpreter (tens of seconds): end to end, marked slow
@pytest.mark.parametrize("rules", [pytest.param("strict", marks=pytest.mark.slow), "kernelbench"])
def test_a_model_built_from_its_own_classes_and_helpers_is_correct(cpu_executor, tmp_path, rules):
    result = evaluate_task(cpu_executor, write_task(tmp_path, "tiny_resnet", RESNET), rules)
    assert ok(result), explain(result)


def test_the_candidate_carries_the_builders_but_no_reference_forward(tmp_path):
    source = generate(analyze(write_task(tmp_path, "tiny_resnet", RESNET), "strict"))
    assert "def conv_bn(" in source and "class Block(nn.Module)" in source and "def _make_stage(self" in source
    assert "WIDTH = 4" in source and "expansion = 1" in source and "    growth = 2" in source
    assert source.count("def forward(") == 1  # ModelNew's: Block's is not carried


def test_a_carried_module_builds_the_same_parameters_under_the_same_names(tmp_path):
    from backends._task import import_file

    path = write_task(tmp_path, "tiny_resnet", RESNET)
    (tmp_path / "cand.py").write_text(generate(analyze(path, "strict")))
    reference, candidate = import_file(path, "ref_resnet"), import_file(tmp_path / "cand.py", "cand_resnet")
    torch.manual_seed(0)
    model = reference.Model(*reference.get_init_inputs())
    torch.manual_seed(0)
    new = candidate.ModelNew(*reference.get_init_inputs())
    mine, theirs = dict(new.state_dict()), dict(model.state_dict())
    assert list(mine) == list(theirs)
    assert all(torch.equal(mine[k], theirs[k]) for k in theirs)
    with pytest.raises(NotImplementedError):  # the carried block has no forward of its own
        new.stage1[0](torch.randn(1, 4, 3, 3))


def test_a_forward_sliced_by_its_input_size_is_captured_and_correct(cpu_executor, tmp_path):
    path = write_task(tmp_path, "sliced", SLICED)
    from backends._task import import_file

    module = import_file(path, "sliced_ref")
    with pytest.raises(Exception):  # the case this front end exists for
        torch.fx.symbolic_trace(module.Model(*module.get_init_inputs()))
    result = evaluate_task(cpu_executor, path, "strict")
    assert ok(result), explain(result)


def test_a_captured_graph_calls_each_torch_nn_module_as_torch_fx_would():
    """Dynamo inlines torch.nn modules; the capture makes each call a call_module again (two
    calls of one module stay two), and parameters and buffers read as the model's own paths."""
    from evokernel.builtin._capture import capture

    class Twice(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(6, 6)
            self.norm = torch.nn.LayerNorm(6)
            self.register_buffer("shift", torch.zeros(8, 6))

        def forward(self, x):
            B, C = x.shape
            return self.norm(self.fc(torch.relu(self.fc(x))) + self.shift[:B])

    with torch.device("meta"):
        gm = capture(Twice(), [torch.empty(3, 6)], ["x"])
    calls = [(n.op, n.target) for n in gm.graph.nodes if n.op in ("placeholder", "call_module", "get_attr")]
    assert calls == [("placeholder", "x"), ("call_module", "fc"), ("call_module", "fc"), ("get_attr", "shift"),
                     ("call_module", "norm")]
    assert all("tensor_meta" in n.meta for n in gm.graph.nodes if n.op not in ("output",))


def test_an_optional_parameter_get_inputs_leaves_out_keeps_its_default(cpu_executor, tmp_path):
    """Traced as a proxy, `if hidden is None` would take the branch the reference never takes."""
    path = write_task(tmp_path, "optional", '''
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            def forward(self, x, hidden=None):
                if hidden is None:
                    return torch.relu(x) * 2
                return torch.sigmoid(x + hidden)


        def get_inputs():
            return [torch.randn(3, 5)]


        def get_init_inputs():
            return []
        ''')
    result = evaluate_task(cpu_executor, path, "strict")
    assert ok(result), explain(result)


def test_a_carried_forward_is_never_run_and_the_static_rules_agree(cpu_executor, tmp_path):
    from backends._static import static_findings

    path = write_task(tmp_path, "guarded", GUARDED)
    source = generate(analyze(path, "strict"))
    assert "def describe(" not in source and "def _initial(" in source
    assert static_findings(source, "strict") == []
    # the same candidate with Gate's forward put back is what the static rules refuse
    restored = source.replace("        return torch.linspace(0.5, 1.5, n)",
                              "        return torch.linspace(0.5, 1.5, n)\n\n"
                              "    def forward(self, x):\n        return torch.sigmoid(x) * self.weight", 1)
    assert restored != source
    assert [f.rule for f in static_findings(restored, "strict")] == ["torch-compute"]
    result = evaluate_task(cpu_executor, path, "strict")
    assert ok(result), explain(result)


def test_a_builder_method_is_setup_code_only_while_nothing_else_calls_it():
    from backends._static import static_findings

    built = textwrap.dedent("""
        import torch
        import torch.nn as nn


        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(self._make(3))

            def _make(self, n):
                return torch.linspace(0.0, 1.0, n)

            def forward(self, x):
                return x
        """)
    assert static_findings(built, "strict") == []
    called = built.replace("return x\n", "return self._make(3)\n")
    assert called != built and [f.rule for f in static_findings(called, "strict")] == ["torch-compute"]


CAPTURED_FORWARDS = {
    # dynamo captures it; the handlers have no complex fft (rfft and irfft they have)
    "spectrum": ("B, C = x.shape\n        return torch.fft.fft(x, n=C).real", "fft_fft"),
    # a branch on a value: neither torch.fx nor dynamo (fullgraph) can follow it
    "branchy": ("if x.sum() > 0:\n            return x * 2\n        return x", "dynamo could not capture"),
}


@pytest.mark.parametrize("name", list(CAPTURED_FORWARDS))
def test_an_unsupported_forward_says_why_in_one_line(tmp_path, name):
    body, needle = CAPTURED_FORWARDS[name]
    path = write_task(tmp_path, name, f"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        {body}


def get_inputs():
    return [torch.randn(2, 8)]


def get_init_inputs():
    return []
""")
    plan = analyze(path, "strict")
    assert isinstance(plan, Unsupported) and "\n" not in plan.reason and needle in plan.reason, plan


def test_a_carried_helper_named_like_a_generated_one_is_refused(tmp_path):
    text = RESNET.replace("conv_bn", "_prod")  # _prod: a shape helper every candidate defines
    plan = analyze(write_task(tmp_path, "clash", text), "strict")
    assert isinstance(plan, Unsupported) and "_prod has the name of a generated helper" in plan.reason
