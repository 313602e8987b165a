"""summarize_step: by the LLM when there is one, from the verifier's facts otherwise."""

from __future__ import annotations

from llm_server import FakeLog

from evokernel.llm import (
    Completion,
    LLMClient,
    PriceTable,
    ProviderCallError,
    RetryPolicy,
    StepFacts,
    facts_summary,
    summarize_step,
)

FACTS = StepFacts(
    task_name="23_Softmax", backend="triton", stage="draft", status="wrong_result",
    message="mismatch: max abs error 3.1e-02 > atol 1e-04\nat index [17, 4095]",
    max_abs_error=0.031, latency_ms=0.21, speedup_eager=0.84, code="import triton\n",
)


class Scripted:
    def __init__(self, *answers):
        self.answers = list(answers)
        self.seen: list[tuple[list, str]] = []

    def complete(self, messages, *, system, max_tokens, temperature):
        self.seen.append((messages, system))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return Completion(answer, 10, 10, "stop", False, "m", 1.0)


def _client(provider) -> LLMClient:
    return LLMClient(provider, provider_name="stub", model="m", log=FakeLog(),
                     retry=RetryPolicy(max_attempts=1), prices=PriceTable({}))


def test_facts_summary_without_llm():
    summary = summarize_step(FACTS)
    assert summary.source == "facts"
    for needle in ("23_Softmax", "infeasible", "wrong_result", "max abs error 3.1e-02",
                   "0.031", "0.21 ms", "0.84x over eager"):
        assert needle in summary.text
    assert summary.key_text.startswith("23_Softmax triton draft wrong_result mismatch")


def test_llm_summary():
    provider = Scripted("Tried a one-pass row softmax; wrong because the tail was unmasked.")
    summary = summarize_step(FACTS, client=_client(provider))
    assert summary.source == "llm" and "unmasked" in summary.text
    assert "unmasked" in summary.key_text and "23_Softmax" in summary.key_text
    messages, system = provider.seen[0]
    assert "Summarise one attempt" in system
    assert "at index [17, 4095]" in messages[0]["content"] and "import triton" in messages[0]["content"]


def test_llm_failure_falls_back_to_facts():
    provider = Scripted(ProviderCallError("down", status=503, retryable=True))
    summary = summarize_step(FACTS, client=_client(provider))
    assert summary.source == "facts" and "wrong_result" in summary.text


def test_feasible_step():
    ok = StepFacts("23_Softmax", "triton", "refine", "ok", latency_ms=0.07,
                   speedup_eager=2.5, speedup_compile=1.01)
    text = summarize_step(ok).text
    assert "feasible (verdict: ok)" in text and "1.01x over torch.compile" in text


def test_facts_from_an_eval_result_carry_what_helps():
    from backends import EvalResult, KernelFacts, Roofline, Verdict

    ok = EvalResult(Verdict.OK, "correct on 2 input sets", latency_ms=0.133, latency_iqr_ms=0.002,
                    latency_source="measured-gpu", kernels=[KernelFacts("softmax_kernel", registers=32, spills=0)],
                    roofline=Roofline(copy_bandwidth_gbps=4300.0, min_bytes_moved=268435456, achieved_gbps=2018.3))
    text = summarize_step(StepFacts.from_result("23_Softmax", "triton", "refine", ok)).text
    assert "feasible (verdict: ok)" in text and "0.133 ms (IQR 0.002 ms), measured-gpu" in text
    assert "47% of the measured copy bandwidth" in text and "softmax_kernel: registers 32, spills 0" in text
    wrong = EvalResult(Verdict.WRONG_RESULT, "output mismatch: max abs error 0.5",
                       feedback="output mismatch: max abs error 0.5\nfirst bad index [3, 1000] (row 3, column 1000)",
                       max_abs_error=0.5)
    text = summarize_step(StepFacts.from_result("23_Softmax", "triton", "draft", wrong)).text
    assert "Where: first bad index [3, 1000] (row 3, column 1000)" in text and "Latency" not in text
    compiled = EvalResult(Verdict.COMPILED, "compiled for sm_90; cannot run here")
    assert "feasible (verdict: compiled)" in facts_summary(StepFacts.from_result("t", "cuda", "draft", compiled))
    interpreted = EvalResult(Verdict.OK, "correct", latency_ms=41.0, latency_source="interpreted-cpu")
    assert "a correctness run, not speed" in facts_summary(StepFacts.from_result("t", "triton", "draft", interpreted))
