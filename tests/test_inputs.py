"""Seeded inputs: ours, and KernelBench's, whose host draws come in chunks
with exactly the values one host call would give."""

from __future__ import annotations

import torch

from backends import _inputs


def kb_style_inputs():
    a = torch.rand(100, 77)
    b = torch.randn(33, 101) * 2 - 1
    c = torch.randint(0, 10, (999,))
    d = torch.randint(5, (17, 3))
    e = torch.empty(4097).uniform_(-2, 3)
    f = torch.empty(123).normal_(std=0.5)
    g = torch.randn_like(a)
    h = torch.randperm(50)
    i = torch.rand(10, dtype=torch.float64)
    j = torch.randn(7)
    k = torch.randint_like(c, 3, 9)
    return [a, b, c, d, e, f, g, h, i, j, k]


def test_host_stream_in_chunks_equals_whole_host_draws(monkeypatch):
    torch.manual_seed(42)
    whole = kb_style_inputs()
    assert _inputs.host_stream_exact()
    for chunk in (16, 48, 1000):
        monkeypatch.setattr(_inputs, "HOST_CHUNK", chunk)
        drawn = _inputs.draw(kb_style_inputs, torch.device("cpu"), 42, host_stream=True)
        assert [x.dtype for x in drawn] == [x.dtype for x in whole]
        assert all(torch.equal(x, y) for x, y in zip(drawn, whole)), chunk


def test_chunks_are_multiples_of_16_with_a_long_tail():
    for n in (1, 15, 16, 17, 100, 4096 + 3):
        spans = _inputs._chunks(n, 48)
        assert spans[0][0] == 0 and spans[-1][1] == n
        assert all(b == c for (_, b), (c, _) in zip(spans, spans[1:]))
        assert all((b - a) % 16 == 0 for a, b in spans[:-1])
        assert len(spans) == 1 or spans[-1][1] - spans[-1][0] >= 16


def test_kernelbench_trial_seeds_follow_its_scheme():
    torch.manual_seed(42)  # as KernelBench's eval draws its trial seeds
    expected = [torch.randint(0, 2**32 - 1, (1,)).item() for _ in range(5)]
    assert _inputs.trial_seeds(42, 5, kernelbench=True) == expected
    assert _inputs.trial_seeds(1234, 3, kernelbench=False) == [1235, 1236, 1237]


def test_our_draws_are_seeded_and_on_the_device():
    a = _inputs.draw(lambda: [torch.randn(4, 4), 3], torch.device("cpu"), 7)
    b = _inputs.draw(lambda: [torch.randn(4, 4), 3], torch.device("cpu"), 7)
    assert torch.equal(a[0], b[0]) and a[1] == 3
    assert _inputs.sizes_of(lambda: [torch.randn(1 << 40)])[0].device.type == "meta"


def test_host_stream_check_and_trial_seeds_make_host_tensors_inside_a_device_context(monkeypatch):
    # draw() runs get_inputs under `torch.device(cuda)`, and the first HostStream
    # checks exactness there: its host generator needs host tensors (seen on an
    # H200: "Expected a 'cuda' device type for generator but found 'cpu'"). A meta
    # context stands in for CUDA here: it fails the same way on a tensor not made on the host.
    monkeypatch.setattr(_inputs, "_exact", {})
    with torch.device("meta"):
        assert _inputs.host_stream_exact()
        seeds = _inputs.trial_seeds(42, 3, kernelbench=True)
    assert seeds == _inputs.trial_seeds(42, 3, kernelbench=True)
