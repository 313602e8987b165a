"""On a CUDA GPU: generated candidates compile with the installed triton and
match the reference, for the default and a few sampled configs, on the traced
shapes and on larger ones (multi-pass rows, many tiles)."""

import random
from pathlib import Path

import pytest
import torch

from evokernel.builtin import analyze, check_candidate, default_config, generate, search_space

pytestmark = pytest.mark.gpu

TASKS = Path(__file__).parent / "tasks"
SUPPORTED = sorted(p.stem for p in TASKS.glob("*.py") if not p.stem.startswith("unsupported"))
LARGER = {
    "ew_bias_gelu": [[64, 3, 1000, 37]],
    "rows_softmax": [[300, 20000]],
    "rows_layernorm": [[8, 1000, 33]],
    "rows_logsoftmax_dim1": [[4, 3000, 33]],
    "rows_fp16_softmax": [[333, 50], [50]],
    "mm_linear_gelu": [[4, 300, 37]],
    "mm_scale_residual": [[513, 700], [700, 257], [513, 257]],
    "mm_fp16_linear": [[1000, 24], [18, 24], [18]],
}


def _configs(plan):
    rng = random.Random(0)
    # a convolution's other roundings are for references that round differently: only "auto"
    # matches cuDNN with its TF32 switch on, as here
    space = [c for c in search_space(plan) if c.precision == "auto"]
    return [default_config(plan)] + rng.sample(space, min(3, len(space)))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("name", SUPPORTED)
def test_candidates_on_gpu(name):
    task = TASKS / f"{name}.py"
    plan = analyze(task)
    failures = []
    for config in _configs(plan):
        source = generate(plan, config)
        shape_sets = [None]
        if name in LARGER:
            shape_sets.append(LARGER[name])
        for shapes in shape_sets:
            inputs = None
            if shapes is not None:
                import importlib.util

                spec = importlib.util.spec_from_file_location("gpu_task_" + name, task)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                base = module.get_inputs()
                it = iter(shapes)
                torch.manual_seed(1)
                inputs = [torch.randn(next(it), dtype=x.dtype) if isinstance(x, torch.Tensor) else x for x in base]
                if name == "mm_fp16_linear":
                    inputs[1] = inputs[1] * 0.2
            result = check_candidate(task, source, inputs=inputs, device="cuda")
            if not result.ok:
                failures.append((config.text(), shapes, result.message))
    assert not failures, failures


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("tf32", [True, False])
def test_convolution_matches_cudnn_at_its_precision(tmp_path, tf32):
    """With cuDNN's TF32 switch on (the default) the reference convolution rounds its
    operands to TF32; the builtin kernel rounds the same way and stays within 1e-4."""
    path = tmp_path / "conv_k576.py"
    path.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.conv = nn.Conv2d(64, 96, 3, padding=1)\n\n"
        "    def forward(self, x):\n        return self.conv(x)\n\n\n"
        "def get_inputs():\n    return [torch.rand(4, 64, 40, 40)]\n\n\ndef get_init_inputs():\n    return []\n")
    previous = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = tf32
    try:
        result = check_candidate(path, generate(analyze(path)), device="cuda")
    finally:
        torch.backends.cudnn.allow_tf32 = previous
    assert result.ok, result.message


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_the_executor_holds_torch_compile_to_the_candidates_check():
    """The torch.compile baseline's own output is checked on the re-check inputs and recorded beside its
    time; an elementwise reference compiles to something within the check."""
    from backends import EvalOptions, Executor

    task = TASKS / "ew_bias_gelu.py"
    source = generate(analyze(task), default_config(analyze(task)))
    with Executor(device="cuda", timeout_s=300) as executor:
        result = executor.evaluate(task, source, options=EvalOptions(reps=3, warmup=1))
    assert result.feasible, result.message
    assert result.baselines.compile_ms is not None
    assert result.baselines.compile_correct is True, result.baselines.compile_check


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_two_workers_on_one_gpu_give_the_verdicts_of_one_and_never_time_side_by_side():
    """--workers-per-gpu 2: both workers' candidates are correct and timed, each timing waited its turn
    (the step the worker names while it waits for the GPU alone), and each worker's plan is held to
    half of the card's memory."""
    import concurrent.futures

    from backends import EvalOptions, ExecutorPool

    names = ["ew_bias_gelu", "rows_softmax", "rows_layernorm", "mm_linear_gelu"]
    sources = {n: generate(analyze(TASKS / f"{n}.py"), default_config(analyze(TASKS / f"{n}.py"))) for n in names}
    with ExecutorPool(["cuda:0", "cuda:0"], timeout_s=300) as pool:
        with concurrent.futures.ThreadPoolExecutor(2) as threads:
            results = dict(zip(names, threads.map(
                lambda n: pool.evaluate(TASKS / f"{n}.py", sources[n], options=EvalOptions(reps=5, warmup=1)), names)))
    for name, result in results.items():
        assert result.feasible and result.latency_ms, (name, result.message)
        assert "waiting for the device to time alone" in result.step_seconds, (name, result.step_seconds)
        total = torch.cuda.get_device_properties(0).total_memory
        assert result.memory.available_bytes <= total // 2, (name, result.memory)
