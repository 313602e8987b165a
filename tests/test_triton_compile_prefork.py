"""A CPU worker forks its sm_90 compile server once torch is imported (backends/_triton_compile.py:
prefork), instead of starting a fresh interpreter that imports torch again: the forked server compiles
as a started one does, holds none of the worker's other descriptors (the executor sees the worker's
pipe close when the worker dies), and none is forked once Triton is imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

KERNEL = '''import triton
import triton.language as tl


@triton.jit
def double_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)
'''

# In a child, as a worker is: torch imported, Triton not, TRITON_INTERPRET=1 in the environment.
CHECK = '''
import json, os, select, sys, time
import torch
from backends import _triton_compile as tc

watched_r, watched_w = os.pipe()  # stands for the worker's protocol pipe to the executor
tc.prefork()
os.close(watched_w)
# EOF within seconds: the server kept no copy of the write end (with one, the read would wait forever)
closed = bool(select.select([watched_r], [], [], 10)[0]) and os.read(watched_r, 1) == b""
server = tc.take_preforked()
again = tc.take_preforked()
worker_imported_triton = "triton" in sys.modules
spec = {"name": "double_kernel", "args": [{"tensor": "fp32"}, 64], "kwargs": {"BLOCK": 64}}
server.stdin.write(json.dumps({"file": sys.argv[1], "specs": [spec]}) + "\\n")
server.stdin.flush()
reply = json.loads(server.stdout.readline())
forked = open(f"/proc/{server.pid}/cmdline", "rb").read() == open("/proc/self/cmdline", "rb").read()
server.stdin.close()  # the worker's end closed: the server stops
deadline = time.monotonic() + 60
while server.poll() is None and time.monotonic() < deadline:
    time.sleep(0.05)
import triton
tc.prefork()
print(json.dumps({"closed": closed, "taken_once": server is not None and again is None,
                  "worker_imported_triton": worker_imported_triton, "reply": reply, "forked": forked,
                  "exit": server.poll(), "after_triton": tc.take_preforked() is None}))
'''


def test_the_forked_compile_server_compiles_and_keeps_none_of_the_workers_pipes(tmp_path):
    kernel = tmp_path / "kernel.py"
    kernel.write_text(KERNEL)
    env = dict(os.environ, TRITON_INTERPRET="1", TRITON_CACHE_DIR=str(tmp_path / "triton-cache"))
    env.pop("EVOKERNEL_SANDBOX", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    proc = subprocess.run([sys.executable, "-c", CHECK, str(kernel)], capture_output=True, text=True, timeout=300,
                          env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    assert data["closed"], "the forked server holds a copy of the worker's descriptors"
    assert data["taken_once"] and not data["worker_imported_triton"]
    assert data["forked"], "the server is a fork of the worker, not a new interpreter"
    reply = data["reply"]
    assert reply["ok"], reply
    assert reply["kernels"][0]["name"] == "double_kernel" and reply["kernels"][0]["registers"], reply
    assert data["exit"] == 0, "the server stops when the worker's end of its pipe closes"
    assert data["after_triton"], "no server is forked from a process that has imported Triton"
