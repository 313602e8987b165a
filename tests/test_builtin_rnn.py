"""Recurrent layers: nn.LSTM, nn.GRU and nn.RNN (tanh, relu) with several layers, both
directions, batch_first either way, with and without biases, h0/c0 given or not,
returning the output sequence, h_n or c_n and what forward does next, checked by the
executor (interpreter values, sm_90 compile of every launched kernel) under both rule
sets (under kernelbench the library's GEMM projects the inputs)."""


from builtin_case import Case, correctness_checks, explain, ok

CASES = [
    Case("lstm_fc_last", "x, h0, c0: out, state = self.lstm(x, (h0, c0))\nreturn self.fc(out[:, -1, :])",
         "[torch.randn(3, 5, 8), torch.randn(2, 3, 16), torch.randn(2, 3, 16)]",
         init="self.lstm = nn.LSTM(8, 16, 2, batch_first=True)\nself.fc = nn.Linear(16, 5)"),
    Case("lstm_hn", "x, h0, c0: out, state = self.lstm(x, (h0, c0))\nreturn state[0]",
         "[torch.randn(2, 4, 8), torch.randn(3, 2, 20), torch.randn(3, 2, 20)]",
         init="self.lstm = nn.LSTM(8, 20, 3, batch_first=True)", slow=True),
    Case("lstm_cn", "x, h0, c0: out, state = self.lstm(x, (h0, c0))\nreturn state[1]",
         "[torch.randn(2, 4, 8), torch.randn(2, 2, 20), torch.randn(2, 2, 20)]",
         init="self.lstm = nn.LSTM(8, 20, 2, batch_first=True)", slow=True),
    Case("lstm_bidirectional", "x, h0, c0: out, _ = self.lstm(x, (h0, c0))\nreturn out",
         "[torch.randn(3, 4, 6), torch.randn(4, 3, 18), torch.randn(4, 3, 18)]",
         init="self.lstm = nn.LSTM(6, 18, 2, batch_first=True, bidirectional=True)"),
    Case("lstm_inputs_named_by_other_roles", "c0, h0, x: out, (h, c) = self.lstm(c0, (x, h0))\nreturn c",
         "[torch.randn(4, 3, 8), torch.randn(1, 3, 16), torch.randn(1, 3, 16)]", init="self.lstm = nn.LSTM(8, 16)",
         slow=True),
    Case("lstm_no_bias_no_state", "x: out, (h, c) = self.lstm(x)\nreturn torch.relu(out) + c[-1]",
         "[torch.randn(5, 3, 7)]", init="self.lstm = nn.LSTM(7, 12, 1, bias=False)", slow=True),
    Case("gru_bidirectional_hidden", "x, h0: out, h_n = self.gru(x, h0)\nreturn h_n",
         "[torch.randn(5, 3, 8), torch.randn(4, 3, 16)]",
         init="self.gru = nn.GRU(8, 16, 2, bidirectional=True)"),
    Case("gru_bidirectional_out", "x, h0: out, h_n = self.gru(x, h0)\nreturn out",
         "[torch.randn(4, 2, 8), torch.randn(2, 2, 16)]",
         init="self.gru = nn.GRU(8, 16, 1, bidirectional=True)", slow=True),
    Case("gru_batch_first", "x: out, h_n = self.gru(x)\nreturn out * 2.0",
         "[torch.randn(2, 6, 5)]", init="self.gru = nn.GRU(5, 33, 2, batch_first=True)", slow=True),
    Case("rnn_relu_no_bias", "x: out, h_n = self.rnn(x)\nreturn out",
         "[torch.rand(6, 3, 4)]", init="self.rnn = nn.RNN(4, 16, 2, nonlinearity='relu', bias=False)"),
    Case("rnn_tanh_unbatched", "x, h0: out, h_n = self.rnn(x, h0)\nreturn h_n",
         "[torch.randn(5, 4), torch.randn(2, 16)]", init="self.rnn = nn.RNN(4, 16, 1, bidirectional=True)",
         slow=True),
]
KERNELBENCH = ("lstm_fc_last", "gru_bidirectional_hidden")


results, kernelbench_results, test_rnn_candidate_is_correct, test_rnn_candidate_is_correct_under_kernelbench_rules = correctness_checks(
    CASES, "rnn", KERNELBENCH)


def test_rnn_one_launch_per_step_is_correct(cpu_executor, tmp_path):
    """The launch-per-step schedule (wide hidden states) on a bidirectional two-layer LSTM."""
    from dataclasses import replace

    from backends import EvalOptions
    from builtin_case import write
    from evokernel.builtin import analyze, default_config, generate

    path = write(next(c for c in CASES if c.name == "lstm_bidirectional"), tmp_path)
    plan = analyze(path)
    assert plan, explain(plan)
    config = replace(default_config(plan), one_pass=False, block_n=16, block_k=16)
    options = EvalOptions.from_dict({"rules": "strict", "timing": False, "baselines": False, "trials": 1})
    result = cpu_executor.evaluate(path, generate(plan, config), backend="triton", options=options)
    assert ok(result), explain(result)


def test_rnn_cooperative_layer_is_correct(cpu_executor, tmp_path):
    """One launch a layer with the hidden tiles shared by programs that meet after every step (split_n):
    in the interpreter one program walks them all through the barrier; sm_90 compiles the kernel."""
    from dataclasses import replace

    from backends import EvalOptions
    from builtin_case import write
    from evokernel.builtin import analyze, default_config, generate

    for name in ("lstm_bidirectional", "gru_bidirectional_hidden"):
        path = write(next(c for c in CASES if c.name == name), tmp_path)
        plan = analyze(path)
        assert plan, explain(plan)
        config = replace(default_config(plan), one_pass=True, split_n=2, block_n=16, block_k=16)
        source = generate(plan, config)
        assert "GRID_SYNC=True" in source and "launch_cooperative_grid=x.is_cuda" in source
        options = EvalOptions.from_dict({"rules": "strict", "timing": False, "baselines": False, "trials": 1})
        result = cpu_executor.evaluate(path, source, backend="triton", options=options)
        assert ok(result), explain(result)


def test_a_loop_of_linear_layers_takes_tf32_from_the_matmul_switch_not_cudnns(tmp_path):
    """34_VanillaRNNHidden's reference is a Python loop of nn.Linear (cuBLAS: IEEE fp32 unless
    torch.backends.cuda.matmul.allow_tf32), not cuDNN's RNN (TF32 by default): on the H200 its
    folded recurrence computed in TF32 was 1.5% wrong elements."""
    import types

    import torch

    from evokernel.builtin import _gen_rnn

    # torch's switches as a GPU build has them (a CPU build may lack the matmul one)
    switches = types.SimpleNamespace(cudnn=types.SimpleNamespace(allow_tf32=True),
                                     cuda=types.SimpleNamespace(matmul=types.SimpleNamespace(allow_tf32=False)))
    scope: dict = {"torch": types.SimpleNamespace(float32=torch.float32, backends=switches)}
    exec(_gen_rnn._PRECISION, scope)
    x = types.SimpleNamespace(is_cuda=True, dtype=torch.float32)
    assert scope["_rnn_precision"](x, "auto", True) == "ieee"
    assert scope["_rnn_precision"](x, "auto", False) == "round"

    from builtin_case import write
    from evokernel.builtin import analyze, default_config, generate
    from test_builtin_reroll import CASES as LOOPS

    elman = next(c for c in LOOPS if c.name == "elman_outputs_stacked")
    plan = analyze(str(write(elman, tmp_path)), "kernelbench")
    assert "_rnn_precision(x, 'auto', True)" in generate(plan, default_config(plan))
    lstm = next(c for c in CASES if c.name == "lstm_hn")
    plan = analyze(str(write(lstm, tmp_path)), "kernelbench")
    assert "_rnn_precision(x, 'auto', False)" in generate(plan, default_config(plan))
