"""The repository's shell scripts parse: a script that only runs on a leased GPU machine must not
first meet bash there (a comment once swallowed a `fi` in kernelbench_builtin.sh)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted([*ROOT.glob("benchmarks/*.sh"), ROOT / ".ci" / "run"])


@pytest.mark.parametrize("script", SCRIPTS, ids=[str(s.relative_to(ROOT)) for s in SCRIPTS])
def test_the_script_parses(script):
    out = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_a_detached_run_is_not_started_twice(tmp_path):
    # A follow-up call on a leased machine repeats the command: while the run it started lives, nothing starts
    # (two benches on one memory would race) and nothing is copied.
    out, detach, kb = tmp_path / "out", tmp_path / "detach", tmp_path / "kb"
    out.mkdir()
    kb.mkdir()
    alive = subprocess.Popen(["sleep", "60"])
    try:
        (out / "detached.pid").write_text(f"{alive.pid}\n")
        run = subprocess.run(["bash", str(ROOT / "benchmarks" / "kernelbench_builtin.sh"), str(kb), str(out)],
                             capture_output=True, text=True, timeout=60,
                             env={"PATH": "/usr/bin:/bin", "DETACH": str(detach), "LEVELS": "none"})
    finally:
        alive.kill()
        alive.wait()
    assert run.returncode == 0, run.stderr
    assert f"already running detached (pid {alive.pid})" in run.stdout
    assert not (detach / "project").exists()
