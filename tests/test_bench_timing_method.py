"""The timing method a results file records is the one the run used."""

from evokernel.bench._runner import _timing_method
from evokernel.options import EvaluationOptions


def test_gpu_timing_method_states_the_runs_warmup_reps_and_baselines():
    text = _timing_method("cuda:0", EvaluationOptions(reps=30, warmup=3, compile_baseline=False))
    assert "median of 30 runs after 3 warm-ups" in text
    assert "no torch.compile baseline" in text
    assert "eager and torch.compile" in _timing_method("cuda:0", EvaluationOptions())
    assert "no baselines timed" in _timing_method("cuda:0", EvaluationOptions(baselines=False))


def test_cpu_timing_method_names_the_interpreter():
    assert "interpreter" in _timing_method("cpu", EvaluationOptions())
