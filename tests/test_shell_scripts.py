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
