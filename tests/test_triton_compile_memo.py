"""The Triton compile server compiles a kernel text once: the same kernel at another line of another
candidate (the launch-plan helper every generated candidate carries) reports what the first compile
found, while a kernel whose body or constants differ is compiled for itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

KERNEL = '''import triton
import triton.language as tl

SCALE = tl.constexpr(4)


@triton.jit
def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * SCALE, mask=offs < n)
'''

# In a child without the interpreter: compiles in a process that has run interpreted kernels break
# (backends/triton_backend.py), and this one has its own Triton cache so nothing comes from disk.
CHECK = '''
import json, sys
from pathlib import Path
from backends._triton_compile import compile_specs, text_key
from backends._task import import_file

paths = [Path(p) for p in sys.argv[1:]]
spec = {"name": "scale_kernel", "args": [{"tensor": "fp32"}, 64], "kwargs": {"BLOCK": 64}}
memo, modules, out = {}, {}, {}
keys = [text_key(import_file(p, f"k{i}").scale_kernel) for i, p in enumerate(paths)]
for p in paths:
    reply = compile_specs(str(p), [spec], modules, memo)
    out[p.stem] = {"ok": reply["ok"], "kernels": reply["kernels"], "memo": len(memo)}
print(json.dumps({"keys": keys, "replies": out}))
'''


def test_a_kernel_moved_to_another_line_is_not_compiled_again(tmp_path):
    first = tmp_path / "first.py"
    first.write_text(KERNEL)
    moved = tmp_path / "moved.py"
    moved.write_text("# a candidate with more above the kernel\n\n\n" + KERNEL)
    other_constant = tmp_path / "other_constant.py"
    other_constant.write_text(KERNEL.replace("tl.constexpr(4)", "tl.constexpr(5)"))
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path / "triton-cache")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    proc = subprocess.run([sys.executable, "-c", CHECK, str(first), str(moved), str(other_constant)],
                          capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    first_key, moved_key, other_key = data["keys"]
    assert first_key and first_key == moved_key and other_key != first_key
    replies = data["replies"]
    assert all(r["ok"] for r in replies.values()), replies
    # the moved kernel took the first compile's facts; the other constant was compiled for itself
    assert [replies[n]["memo"] for n in ("first", "moved", "other_constant")] == [1, 1, 2]
    assert replies["moved"]["kernels"] == replies["first"]["kernels"]
    assert replies["first"]["kernels"][0]["registers"]
    # one compile each for first and other_constant: Triton's own cache holds two kernels, not three
    assert len(list((tmp_path / "triton-cache").iterdir())) == 2
