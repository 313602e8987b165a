"""The comparison runs chunk by chunk on the outputs' own device: the verdict
and the words that locate a mismatch do not depend on the chunk size."""

from __future__ import annotations

import pytest
import torch

from backends import _compare
from backends._compare import compare, tolerance_for


def cases():
    torch.manual_seed(0)
    e = torch.randn(64, 300)
    bad_rows = e.clone()
    bad_rows[3, 5:9] += 1
    bad_rows[10] += 1
    nan = e.clone()
    nan[7, 7] = float("nan")
    e1 = torch.randn(5000)
    g1 = e1.clone()
    g1[100:200] = 0
    g1[4000] = 5
    ints = torch.randint(0, 5, (30, 40))
    ints_bad = ints.clone()
    ints_bad[2, 3] = 9
    inf = torch.tensor([float("inf"), 1.0, -float("inf")])
    return [(e, e.clone()), (e, bad_rows), (e, nan), (e1, g1), (ints, ints_bad), (inf, inf.clone()),
            (torch.zeros(10) + 1e-9, torch.zeros(10)), ((e, e1), (e.clone(), g1))]


@pytest.mark.parametrize("index", range(8))
def test_chunked_comparison_says_the_same(monkeypatch, index):
    expected, got = cases()[index]
    whole = compare(expected, got)
    monkeypatch.setattr(_compare, "CHUNK", 7 * 300)
    chunked = compare(expected, got)
    assert (chunked.ok, chunked.feedback, chunked.near_zero) == (whole.ok, whole.feedback, whole.near_zero)
    assert chunked.max_abs_error == pytest.approx(whole.max_abs_error)


def test_mismatch_is_located():
    expected, got = cases()[1]
    cmp = compare(expected, got)
    assert not cmp.ok
    assert "first mismatch at index (3, 5)" in cmp.feedback
    assert "rows (flattened leading dims) with errors: 3, 10 of 64" in cmp.feedback
    nan = compare(*cases()[2])
    assert not nan.ok and "1 NaN value(s)" in nan.feedback
    one_d = compare(*cases()[3])
    assert "bad positions: 100-199, 4000 of 5000" in one_d.feedback


def test_partial_tolerance_override_keeps_the_dtype_default():
    assert tolerance_for(torch.float32, (1e-2, None)) == (1e-2, 1e-4)
    assert tolerance_for(torch.float16, None) == (1e-2, 1e-2)
    e = torch.ones(10)
    assert compare(e, e + 5e-3, (1e-2, None)).ok and not compare(e, e + 5e-3).ok
