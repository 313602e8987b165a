"""einops calls a captured graph holds whole (Mamba2 in KernelBench level3) are lowered to the
reshape, permute, expand and reductions they stand for, whatever einops version is installed.

On the H200's image dynamo kept `rearrange` as one opaque call (einops registers its functions
with `allow_in_graph` where it misreads torch's version, and torch does for einops before 0.8.2),
and the builtin said "operation rearrange is not supported"; here the task file makes the same
registration einops would."""

import pytest
import torch
import torch.fx as fx

from builtin_case import explain, ok
from evokernel.builtin import Unsupported, analyze, generate
from evokernel.builtin._build import Reject
from evokernel.builtin._einops import lower_einops

einops = pytest.importorskip("einops")

PATTERNS = [
    ("rearrange", "b (c l) h p -> b c l h p", {"l": 3}),
    ("rearrange", "b c h p -> b (h c) p", {}),
    ("rearrange", "b ... p -> b p ...", {}),
    ("rearrange", "b c ... -> b (c ...)", {}),
    ("rearrange", "b c h p -> p h c b", {}),
    ("rearrange", "b c h p -> b c h p 1", {}),
    ("rearrange", "b c h (p q) -> (b q) c h p", {"q": 5}),
    ("repeat", "b c h p -> b c r h p", {"r": 3}),
    ("repeat", "b c h p -> (r b) c h p", {"r": 2}),
    ("reduce", "b c h p -> b p", {"reduction": "max"}),
    ("reduce", "b (c l) h p -> b l p", {"l": 2, "reduction": "mean"}),
    ("reduce", "b c h p -> b c", {"reduction": "sum"}),
]


def _lowered(kind: str, x: torch.Tensor, pattern: str, **kwargs):
    graph = fx.Graph()
    source = graph.placeholder("x")
    source.meta["example_value"] = x
    graph.output(graph.call_function(getattr(einops, kind), (source, pattern), kwargs))
    lower_einops(graph)
    assert not any(n.op == "call_function" for n in graph.nodes)  # only Tensor methods are left
    return fx.GraphModule(torch.nn.Module(), graph)(x)


@pytest.mark.parametrize("kind,pattern,kwargs", PATTERNS, ids=[p for _, p, _ in PATTERNS])
def test_a_lowered_einops_call_equals_einops(kind, pattern, kwargs):
    x = torch.randn(2, 6, 4, 10)
    assert torch.equal(_lowered(kind, x, pattern, **kwargs), getattr(einops, kind)(x, pattern, **kwargs))


def test_a_size_one_axis_named_by_a_number_is_dropped():
    x = torch.randn(3, 1, 4)
    assert torch.equal(_lowered("rearrange", x, "a 1 b -> b a"), einops.rearrange(x, "a 1 b -> b a"))


@pytest.mark.parametrize("pattern,kwargs,says", [
    ("b (c l) h p -> b c l h p", {}, "cannot infer the sizes of c, l"),
    ("b c h -> b c h", {}, "names 3 dimensions, the input has 4"),
    ("b c h p -> b c h", {}, "drops axes ['p']"),
    ("b (c l) h p -> b c l h p", {"l": 4}, "6 is not divisible"),
])
def test_a_pattern_that_does_not_fit_says_why(pattern, kwargs, says):
    with pytest.raises(Reject) as caught:
        _lowered("rearrange", torch.randn(2, 6, 4, 10), pattern, **kwargs)
    assert says in str(caught.value)


CHUNKED = '''
import torch
import torch.nn as nn
import torch._dynamo
from einops import rearrange

torch._dynamo.allow_in_graph(rearrange)  # what einops does on import where it keeps its calls whole


class Model(nn.Module):
    def __init__(self, block_len):
        super().__init__()
        self.block_len = block_len
        self.scale = nn.Parameter(torch.randn(6))

    def forward(self, x):
        blocks = rearrange(x, "b (c l) h -> b c l h", l=self.block_len)
        summed = torch.cumsum(blocks * self.scale, dim=2)
        return rearrange(summed, "b c l h -> b h (c l)")


def get_inputs():
    return [torch.randn(2, 12, 6)]


def get_init_inputs():
    return [4]
'''


def test_a_forward_whose_einops_calls_dynamo_keeps_whole_is_correct(cpu_executor, tmp_path, monkeypatch):
    from backends import EvalOptions
    import evokernel.builtin._capture as capture

    path = tmp_path / "chunked.py"
    path.write_text(CHUNKED)
    plan = analyze(path, "strict")
    assert not isinstance(plan, Unsupported), plan.reason
    options = EvalOptions.from_dict({"rules": "strict", "timing": False, "baselines": False, "trials": 2})
    result = cpu_executor.evaluate(path, generate(plan), backend="triton", options=options)
    assert ok(result), explain(result)
    # the capture really held the calls whole: without the lowering the builtin cannot plan it
    monkeypatch.setattr(capture, "lower_einops", lambda graph: None)
    unlowered = analyze(path, "strict")
    assert isinstance(unlowered, Unsupported) and "rearrange" in unlowered.reason
