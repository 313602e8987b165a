"""The skill library from the command line: `memory ls --kind best_practice` shows
skills with their verification, and `--skills/--no-skills`, `--rerank/--no-rerank`
reach the run's options."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from evokernel.cli import app
from evokernel.skills import Evidence, Scope, SkillDraft, SkillStatus, Verification
from evokernel.skills._types import item_fields
from memory_store import MemoryStore

runner = CliRunner()

OUTSIDE = '''"""A QR decomposition: outside the builtin policy's families."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.linalg.qr(x)[1]


def get_inputs():
    return [torch.randn(8, 8)]


def get_init_inputs():
    return []
'''


def _skill(store, title: str, status: SkillStatus, speedup: float) -> int:
    evidence = Evidence("softmax-1", "softmax", None, None, 10.0, 10.0 / speedup, "measured-gpu")
    draft = SkillDraft(title, Scope(("softmax",), "rows of 4096", "triton", "rows"), "One pass.", "", evidence, "builtin",
                       hint={"config_key": "config", "family": "rows", "set": {"block_m": 4}, "from": {"block_m": 1}})
    verification = Verification(10.0, 10.0 / speedup, speedup, 3, "measured-gpu", status is SkillStatus.ADMITTED,
                                "scripted", 1.2)
    return store.add_item(**item_fields(draft, verification, status=status, category="rows", evidence=evidence,
                                        run_id=None, stage="refine"))


def test_memory_ls_kind_best_practice_shows_skills_with_their_verification(tmp_path):
    db = tmp_path / "m.db"
    with MemoryStore(db) as store:
        store.add_item(kind="trace", task_key="t", backend="triton", key_text="t", content="x", status="ok")
        admitted = _skill(store, "rows kernels: block_m=4", SkillStatus.ADMITTED, 1.5)
        rejected = _skill(store, "rows kernels: block_m=8", SkillStatus.REJECTED, 1.05)
    res = runner.invoke(app, ["memory", "ls", "--kind", "best_practice", "--memory", str(db)])
    assert res.exit_code == 0, res.output
    assert "rows kernels: block_m=4" in res.stdout and "1.50x (10 -> 6.667 ms)" in res.stdout
    assert "admitted" in res.stdout and "rejected" in res.stdout and "measured-gpu" in res.stdout
    res = runner.invoke(app, ["memory", "ls", "--kind", "best_practice", "--memory", str(db), "--json"])
    rows = {r["id"]: r for r in json.loads(res.stdout)}
    assert set(rows) == {admitted, rejected}
    assert rows[admitted]["status"] == "admitted" and rows[admitted]["verification"]["speedup"] == 1.5
    assert {"baseline_ms", "skill_ms", "speedup", "reruns", "latency_source"} <= set(rows[rejected]["verification"])
    assert rows[rejected]["verification"]["admitted"] is False and rows[admitted]["evidence"] == 1


def test_skills_and_rerank_flags_reach_the_run_options(tmp_path):
    task = tmp_path / "qr.py"
    task.write_text(OUTSIDE)
    res = runner.invoke(app, ["run", str(task), "--no-skills", "--no-rerank", "--budget", "1", "--device", "cpu",
                              "--memory", str(tmp_path / "m.db"), "--json"])
    config = json.loads(res.stdout.strip().splitlines()[-1])["config"]
    assert config["skills"] is False and config["rerank"] is False
    res = runner.invoke(app, ["bench", str(task), "--no-skills", "--budget", "1", "--device", "cpu", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout.strip().splitlines()[-1])["options"]["skills"] is False
