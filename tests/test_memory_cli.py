"""Tests for `evokernel memory ...`, driven through typer's runner."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from evokernel.cli import memory_cmd
from memory_store import MemoryStore
from memory_store._schema import migration_names


@pytest.fixture
def app():
    app = typer.Typer()
    memory_cmd.register(app)

    @app.callback()
    def _root() -> None:  # keeps `memory` a subcommand even with one group
        pass

    return app


@pytest.fixture
def runner():
    return CliRunner()


@pytest.fixture
def bank(tmp_path):
    path = tmp_path / "bank.db"
    with MemoryStore(path) as s:
        run = s.start_run({})
        a = s.add_item(kind="trace", task_key="softmax", backend="triton", key_text="softmax row", content="KERNEL SOURCE", status="ok", latency_ms=1.0)
        s.add_item(kind="trace", task_key="softmax", backend="triton", key_text="softmax row v2", content="v2", parent_id=a, stage="refine")
        s.add_item(kind="api_note", task_key="_api", backend="ascendc", key_text="DataCopy: copy", content="doc")
        s.record_step(run_id=run, task_key="softmax", backend="triton", stage="draft", reward=1.0, context_item_ids=[a])
    return path


def test_every_command_has_help(app, runner):
    for command in ("stats", "ls", "show", "check", "export", "import", "bench"):
        result = runner.invoke(app, ["memory", command, "--help"])
        assert result.exit_code == 0, command
        assert "--memory" in result.stdout and "--json" in result.stdout


def test_stats_json_on_stdout_only(app, runner, bank):
    result = runner.invoke(app, ["memory", "stats", "--memory", str(bank), "--json"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert (data["items"], data["tasks"], data["value_updates"]) == (3, 2, 1)
    assert data["by_kind"] == {"api_note": 1, "trace": 2}
    assert result.stderr == ""


def test_stats_table(app, runner, bank):
    result = runner.invoke(app, ["memory", "stats", "--memory", str(bank)])
    assert result.exit_code == 0
    assert "items" in result.stdout and "kind trace" in result.stdout


def test_missing_bank_is_a_clear_error(app, runner, tmp_path):
    result = runner.invoke(app, ["memory", "stats", "--memory", str(tmp_path / "nope.db"), "--json"])
    assert result.exit_code == 2
    assert result.stdout == "" and result.stderr == f"error: no memory at {tmp_path / 'nope.db'} (pass --memory or set EVOKERNEL_HOME)\n"
    assert not (tmp_path / "nope.db").exists()


def test_default_path_comes_from_evokernel_home(app, runner, bank, monkeypatch):
    monkeypatch.setenv("EVOKERNEL_HOME", str(bank.parent))
    bank.rename(bank.parent / "memory.db")
    result = runner.invoke(app, ["memory", "stats", "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["items"] == 3


def test_ls_and_filters(app, runner, bank):
    result = runner.invoke(app, ["memory", "ls", "--memory", str(bank), "--json", "--kind", "trace"])
    assert result.exit_code == 0
    rows = json.loads(result.stdout)
    assert [r["id"] for r in rows] == [2, 1] and all("content" not in r for r in rows)
    result = runner.invoke(app, ["memory", "ls", "--memory", str(bank), "--kind", "recipe"])
    assert result.exit_code == 2 and "unknown kind 'recipe'" in result.stderr and result.stdout == ""
    result = runner.invoke(app, ["memory", "ls", "--memory", str(bank)])
    assert result.exit_code == 0 and "softmax" in result.stdout


def test_show(app, runner, bank):
    result = runner.invoke(app, ["memory", "show", "1", "--memory", str(bank), "--json"])
    item = json.loads(result.stdout)
    assert item["content"] == "KERNEL SOURCE" and item["visits_draft"] == 1
    result = runner.invoke(app, ["memory", "show", "1", "--memory", str(bank)])
    assert "KERNEL SOURCE" in result.stdout and "task_key: softmax" in result.stdout
    result = runner.invoke(app, ["memory", "show", "99", "--memory", str(bank)])
    assert result.exit_code == 2 and "unknown item id: 99" in result.stderr


def test_export_import_round_trip(app, runner, bank, tmp_path):
    dump = tmp_path / "dump.jsonl"
    result = runner.invoke(app, ["memory", "export", str(dump), "--memory", str(bank), "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout) == {"exported": 3, "path": str(dump)}
    stdout_export = runner.invoke(app, ["memory", "export", "--memory", str(bank)])
    assert stdout_export.stdout.count("\n") == 4 and "exported 3 items" in stdout_export.stderr
    target = tmp_path / "target.db"
    result = runner.invoke(app, ["memory", "import", str(dump), "--memory", str(target), "--json"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"imported": 3, "skipped": 0, "lines": 3}
    result = runner.invoke(app, ["memory", "import", "-", "--memory", str(target)], input=dump.read_text())
    assert result.exit_code == 0 and "imported 0 items (3 already present)" in result.stderr
    assert result.stdout == ""
    result = runner.invoke(app, ["memory", "export", "--memory", str(bank), "--json"])
    assert result.exit_code == 2


def test_import_of_a_corrupt_line_writes_nothing(app, runner, bank, tmp_path):
    dump = tmp_path / "dump.jsonl"
    runner.invoke(app, ["memory", "export", str(dump), "--memory", str(bank)])
    lines = dump.read_text().splitlines()
    dump.write_text("\n".join(lines[:2] + ["{not json"] + lines[2:]) + "\n")
    target = tmp_path / "target.db"
    result = runner.invoke(app, ["memory", "import", str(dump), "--memory", str(target), "--json"])
    assert result.exit_code == 2 and result.stdout == ""
    assert "line 3: not valid JSON" in result.stderr and "nothing was imported" in result.stderr
    with MemoryStore(target) as s:
        assert s.stats()["items"] == 0


def test_bench_json(app, runner, tmp_path):
    path = tmp_path / "bench.db"
    result = runner.invoke(app, ["memory", "bench", "--items", "300", "--queries", "20", "--memory", str(path), "--json"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["items"] == 300
    for key in ("insert_per_s", "retrieve_p50_ms", "retrieve_p99_ms", "environment"):
        assert key in data
    assert data["environment"]["sqlite"] and data["environment"]["python"]
    # A bank that already holds items is never used for a benchmark.
    again = runner.invoke(app, ["memory", "bench", "--items", "10", "--memory", str(path), "--json"])
    assert again.exit_code == 2 and "already holds items" in again.stderr and again.stdout == ""


def test_bench_default_uses_a_temporary_file(app, runner, monkeypatch, tmp_path):
    monkeypatch.setenv("EVOKERNEL_HOME", str(tmp_path / "home"))
    result = runner.invoke(app, ["memory", "bench", "--items", "50", "--queries", "5"])
    assert result.exit_code == 0
    assert "retrieve_p50_ms" in result.stdout
    assert not (tmp_path / "home").exists()


def _damage(path):
    """Zero the second half of a checkpointed bank: every table has lost pages."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2:] = bytes(len(data) - len(data) // 2)
    path.write_bytes(bytes(data))


@pytest.fixture
def damaged(tmp_path):
    path = tmp_path / "damaged.db"
    with MemoryStore(path) as s:
        for i in range(200):
            s.add_item(kind="trace", task_key=f"t{i}", backend="triton", key_text=f"softmax {i} " + "x" * 200, content="c")
        s.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    _damage(path)
    return path


def test_check_a_sound_bank(app, runner, bank):
    result = runner.invoke(app, ["memory", "check", "--memory", str(bank)])
    assert result.exit_code == 0 and result.stdout.strip().endswith(": sound")
    data = json.loads(runner.invoke(app, ["memory", "check", "--memory", str(bank), "--json"]).stdout)
    assert data["ok"] is True and data["problems"] == [] and data["migrations"] == migration_names()


def test_check_a_damaged_or_foreign_file(app, runner, damaged, tmp_path):
    result = runner.invoke(app, ["memory", "check", "--memory", str(damaged)])
    assert result.exit_code == 1
    assert "problem: integrity:" in result.stdout and "problem(s)" in result.stdout
    notes = tmp_path / "notes.db"
    notes.write_text("my notes, not a database\n" * 50)
    result = runner.invoke(app, ["memory", "check", "--memory", str(notes), "--json"])
    assert result.exit_code == 1 and json.loads(result.stdout)["problems"] == ["not a SQLite database (wrong header)"]


@pytest.mark.parametrize("command", [["stats"], ["ls", "--limit", "1000"], ["show", "150"], ["export"]])
def test_every_command_on_a_damaged_file_is_one_line_naming_it(app, runner, damaged, tmp_path, command):
    notes = tmp_path / "notes.db"
    notes.write_text("my notes, not a database\n" * 50)
    for path in (damaged, notes):
        result = runner.invoke(app, ["memory", *command, "--memory", str(path)])
        assert result.exit_code == 2, (command, path, result.output)
        lines = result.stderr.splitlines()
        assert lines[-1].startswith("error: ") and str(path) in lines[-1], result.stderr
        assert f"evokernel memory check --memory {path}" in lines[-1]
        assert "Traceback" not in result.output
    assert notes.read_text() == "my notes, not a database\n" * 50, "a foreign file is never written"
