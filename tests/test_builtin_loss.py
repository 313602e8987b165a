"""Losses (MSE, L1, smooth L1/Huber, KL, cross entropy, NLL, BCE, hinge,
triplet, cosine) lowered to pointwise ops and reductions, checked by the
executor on the CPU."""

import pytest

from builtin_case import Case, Lazy, explain, ok, params

CASES = [
    Case("huber", "p, t: return F.smooth_l1_loss(p, t, beta=0.5) + F.huber_loss(p, t, delta=2.0)",
         "[torch.randn(6, 33), torch.randn(6, 33)]", full="[torch.rand(32768, 32768), torch.rand(32768, 32768)]"),
    Case("kl_batchmean", "p, t: return F.kl_div(torch.log(p), t, reduction='batchmean')",
         "[torch.rand(6, 33).softmax(-1), torch.rand(6, 33).softmax(-1)]", slow=True),
    Case("cross_entropy", "x, y: return F.cross_entropy(x, y)", "[torch.randn(7, 10), torch.randint(0, 10, (7,))]"),
    Case("nll_sum", "x, y: return F.nll_loss(torch.log_softmax(x, 1), y, reduction='sum')",
         "[torch.randn(7, 10), torch.randint(0, 10, (7,))]", slow=True),
    Case("hinge", "p, t: return torch.mean(torch.clamp(1 - p * t, min=0))",
         "[torch.randn(6, 6), torch.randint(0, 2, (6,)).float() * 2 - 1]", slow=True),
    Case("triplet", "a, p, n: return self.loss(a, p, n)", "[torch.randn(5, 17), torch.randn(5, 17), torch.randn(5, 17)]",
         "self.loss = nn.TripletMarginLoss(margin=1.0)", slow=True),
    Case("cosine_bce", "a, b: return (1 - F.cosine_similarity(a, b, dim=1)).mean() + "
         "F.binary_cross_entropy(torch.sigmoid(a), torch.sigmoid(b))", "[torch.randn(5, 17), torch.randn(5, 17)]", slow=True),
]


@pytest.fixture(scope="module")
def results(cpu_executor, tmp_path_factory):
    return Lazy(cpu_executor, CASES, tmp_path_factory.mktemp("loss"))


@pytest.mark.parametrize("name", params(CASES))
def test_loss_candidate_is_correct(results, name):
    assert ok(results[name]), explain(results[name])
