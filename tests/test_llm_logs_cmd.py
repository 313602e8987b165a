"""`evokernel logs`: stdout carries data only; errors go to stderr."""

from __future__ import annotations

import json

import typer
from llm_server import FakeLog
from typer.testing import CliRunner

from evokernel.cli import logs_cmd


def _app() -> typer.Typer:
    app = typer.Typer()
    logs_cmd.register(app)

    @app.callback()
    def main() -> None:  # a group, so the command is invoked by name as in the real CLI
        pass

    return app


def _store_with_calls() -> FakeLog:
    log = FakeLog()
    for run_id in (1, 1, 2):
        log.log_llm_call(
            provider="openai", model="gpt-5", prompt={"messages": []},
            response_text="leaked sk-proj-abcdefghijklmnop", tokens_in=10, tokens_out=5,
            cost_usd=0.0001, latency_ms=1234.0, run_id=run_id, step_id=None, error=None,
        )
    return log


def test_logs_json(tmp_path, monkeypatch):
    db = tmp_path / "memory.db"
    db.touch()
    store = _store_with_calls()
    monkeypatch.setattr(logs_cmd, "_open_store", lambda path: store)
    result = CliRunner().invoke(_app(), ["logs", "--memory", str(db), "--run", "1", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["run_id"] for r in rows] == [1, 1]
    assert "sk-proj-abcdefghijklmnop" not in result.stdout


def test_logs_table(tmp_path, monkeypatch):
    db = tmp_path / "memory.db"
    db.touch()
    monkeypatch.setattr(logs_cmd, "_open_store", lambda path: _store_with_calls())
    monkeypatch.setenv("COLUMNS", "160")  # rich sizes the table to the terminal
    result = CliRunner().invoke(_app(), ["logs", "--memory", str(db), "--limit", "2"])
    assert result.exit_code == 0, result.output
    assert "openai:gpt-5" in result.stdout and "2 LLM calls" in result.stdout
    assert result.stderr == ""


def test_logs_piped_keeps_whole_values(tmp_path, monkeypatch):
    """`evokernel logs | cat` squeezed the table to 80 columns: stdout is not a terminal here either."""
    db = tmp_path / "memory.db"
    db.touch()
    log = FakeLog()
    model = "a-model-name-long-enough-that-eighty-columns-would-cut-it-short-v1"
    log.log_llm_call(provider="openai", model=model, prompt={"messages": []}, response_text="", tokens_in=1,
                     tokens_out=1, cost_usd=None, latency_ms=1.0, run_id=1, step_id=7,
                     error="a failure message that says what went wrong in enough words")
    monkeypatch.setattr(logs_cmd, "_open_store", lambda path: log)
    monkeypatch.delenv("COLUMNS", raising=False)
    result = CliRunner().invoke(_app(), ["logs", "--memory", str(db)])
    assert result.exit_code == 0, result.output
    assert f"openai:{model}" in result.stdout and "a failure message that says what went wrong" in result.stdout
    assert "…" not in result.stdout


def test_logs_missing_database(tmp_path):
    result = CliRunner().invoke(_app(), ["logs", "--memory", str(tmp_path / "none.db"), "--json"])
    assert result.exit_code == 2
    assert result.stdout == "" and result.stderr == (
        f"error: no memory at {tmp_path / 'none.db'} (pass --memory or set EVOKERNEL_HOME)\n")


def test_logs_on_a_damaged_memory_is_one_line_naming_it(tmp_path):
    bad = tmp_path / "memory.db"
    bad.write_text("not a database\n" * 100)
    result = CliRunner().invoke(_app(), ["logs", "--memory", str(bad)])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert str(bad) in result.stderr and "evokernel memory check" in result.stderr


def test_logs_has_help():
    result = CliRunner().invoke(_app(), ["logs", "--help"])
    assert result.exit_code == 0 and "--run" in result.stdout and "--json" in result.stdout


def _store_with_a_parsed_call() -> FakeLog:
    log = FakeLog()
    log.log_llm_call(
        provider="openai", model="qwen3", response_text="<think>\nplan\n</think>\n```triton\n...\n```",
        prompt={"system": "SYSTEM-RULES", "messages": [{"role": "user", "content": [
            {"type": "text", "text": "TASK-PART", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "VARIABLE-PART"}]}],
            "finish_reason": "stop", "cached_tokens_in": 800, "reasoning_tokens": 40,
            "parse": {"outcome": "candidate", "source": "answer", "decision": "took block 1: the last whole module",
                      "chosen": [1], "blocks": [{"index": 1, "language": "triton", "lines": [4, 6],
                                                  "role": "whole module", "detail": ""}],
                      "reasoning_sections": 1, "reasoning_chars": 5, "notes": []}},
        tokens_in=1000, tokens_out=90, cost_usd=None, latency_ms=10.0, run_id=1, step_id=None, error=None,
    )
    return log


def test_logs_table_shows_how_each_answer_was_read(tmp_path, monkeypatch):
    db = tmp_path / "memory.db"
    db.touch()
    monkeypatch.setattr(logs_cmd, "_open_store", lambda path: _store_with_a_parsed_call())
    monkeypatch.setenv("COLUMNS", "200")
    result = CliRunner().invoke(_app(), ["logs", "--memory", str(db)])
    assert result.exit_code == 0, result.output
    assert "block 1 of 1" in result.stdout


def test_logs_one_call_in_full(tmp_path, monkeypatch):
    db = tmp_path / "memory.db"
    db.touch()
    monkeypatch.setattr(logs_cmd, "_open_store", lambda path: _store_with_a_parsed_call())
    result = CliRunner().invoke(_app(), ["logs", "--memory", str(db), "--call", "1"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "parse: candidate from the answer: took block 1" in out
    assert "*block 1 ```triton lines 4-6: whole module" in out
    assert "in 1000 (cached 800), out 90 (reasoning 40)" in out
    assert out.index("SYSTEM-RULES") < out.index("TASK-PART") < out.index("VARIABLE-PART") < out.index("--- answer ---")
    missing = CliRunner().invoke(_app(), ["logs", "--memory", str(db), "--call", "9"])
    assert missing.exit_code == 2 and missing.stderr.startswith("error: no LLM call with id 9")
