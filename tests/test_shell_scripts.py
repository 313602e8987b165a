"""The repository's shell scripts parse: a script that only runs on a leased GPU machine must not
first meet bash there (a comment once swallowed a `fi` in kernelbench_builtin.sh)."""

from __future__ import annotations

import os
import subprocess
import sys
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


def test_a_detached_run_copies_what_a_commit_holds_and_the_task_folder(tmp_path):
    # A git checkout is copied as its tracked (and not ignored) files: not .git or a virtual environment.
    # The task folder comes along even when git ignores it, since the run reads its tasks from the copy.
    repo, out, detach = tmp_path / "repo", tmp_path / "out", tmp_path / "detach"
    (repo / "benchmarks").mkdir(parents=True)
    (repo / "benchmarks" / "kernelbench_builtin.sh").write_text(
        (ROOT / "benchmarks" / "kernelbench_builtin.sh").read_text())
    (repo / ".gitignore").write_text(".venv/\n/kb/\n")
    (repo / ".venv").mkdir()
    (repo / ".venv" / "big").write_text("x")
    (repo / "kb" / "level1").mkdir(parents=True)
    (repo / "kb" / "level1" / "1_task.py").write_text("# a task\n")
    (repo / "untracked.txt").write_text("kept\n")
    (repo / "evokernel").mkdir()
    (repo / "evokernel" / "_archive_commit.txt").write_text("$Format:%H$\n")  # git archive's placeholder
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "benchmarks", "evokernel", ".gitignore"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "x"], cwd=repo, check=True)
    out.mkdir()
    run = subprocess.run(["bash", str(repo / "benchmarks" / "kernelbench_builtin.sh"), str(repo / "kb"), str(out)],
                         capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "DETACH": str(detach), "LEVELS": "none"})
    pid = int((out / "detached.pid").read_text())
    subprocess.run(["kill", "--", str(pid)], capture_output=True)
    assert run.returncode == 0, run.stderr
    project = detach / "project"
    copied = sorted(str(p.relative_to(project)) for p in project.rglob("*") if p.is_file())
    assert copied == [".gitignore", "benchmarks/kernelbench_builtin.sh", "evokernel/_archive_commit.txt",
                      "kb/level1/1_task.py", "untracked.txt"]
    # the copy has no .git: the commit it came from is written where the results' git_commit is read
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True).stdout
    assert (project / "evokernel" / "_archive_commit.txt").read_text() == head


def test_results_are_named_by_the_card_that_ran_them(tmp_path):
    # A lease may put the run on an H100 when an H200 was asked for: the files say which card ran them
    # (here none: "cpu"), never "h200" regardless.
    out, kb = tmp_path / "out", tmp_path / "kb"
    kb.mkdir()
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "LEVELS": "none", "CUDA_VISIBLE_DEVICES": "",
           "HOME": os.environ.get("HOME", str(tmp_path))}
    run = subprocess.run(["bash", str(ROOT / "benchmarks" / "kernelbench_builtin.sh"), str(kb), str(out)],
                         capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stderr
    assert "level1: no results file (kernelbench-level1-cpu-builtin.json)" in run.stdout, run.stdout
    assert "level3-strict: no results file (kernelbench-level3-cpu-builtin-strict.json)" in run.stdout
    assert "h200" not in run.stdout
