"""Triton's integer-overflow check in the CPU interpreter: the worker's hooks skip computing it while
the interpreter's options say no debug (its only consumer, device_assert, does nothing then), so
integer arithmetic wraps as before; with debug on, the check runs and an overflow is reported as before."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

KERNEL = '''import triton
import triton.language as tl


@triton.jit
def affine_kernel(x_ptr, y_ptr):
    offs = tl.arange(0, 4)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 3 + 7)
'''

# A child with the interpreter chosen before Triton is imported (this process imported it already).
CHECK = '''
import dataclasses, sys
from pathlib import Path
import torch
from triton.language.semantic import TritonSemantic
from triton.runtime import interpreter
from backends import LaunchLog, get_backend
from backends._task import import_file

calls = []
original = TritonSemantic.binary_op_sanitize_overflow_impl
def counted(self, *args):
    calls.append(1)
    return original(self, *args)
TritonSemantic.binary_op_sanitize_overflow_impl = counted

get_backend("triton").install_hooks(LaunchLog(), compile_only=False)
kernel = import_file(Path(sys.argv[1]), "kern").affine_kernel
x = torch.tensor([1, -5, 2**30, -(2**30)], dtype=torch.int32)
y = torch.empty_like(x)
kernel[(1,)](x, y)
wrapped = ((x.to(torch.int64) * 3 + 7 + 2**31) % 2**32 - 2**31).to(torch.int32)
print("no debug:", torch.equal(y, wrapped), len(calls))
interpreter.interpreter_builder.options = dataclasses.replace(interpreter.interpreter_builder.options, debug=True)
try:
    kernel[(1,)](x, y)
    print("debug: no error", len(calls))
except Exception as exc:
    print("debug:", "int32 overflow detected" in str(exc), len(calls))
'''


def test_the_overflow_check_runs_only_where_debug_can_report_it(tmp_path):
    (tmp_path / "kern.py").write_text(KERNEL)
    env = dict(os.environ, TRITON_INTERPRET="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    proc = subprocess.run([sys.executable, "-c", CHECK, str(tmp_path / "kern.py")], capture_output=True, text=True,
                          timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    no_debug, debug = proc.stdout.strip().splitlines()[-2:]
    assert no_debug == "no debug: True 0", no_debug  # wrapped as before, and not one check computed
    words = debug.split()
    assert words[:2] == ["debug:", "True"] and int(words[2]) > 0, debug
