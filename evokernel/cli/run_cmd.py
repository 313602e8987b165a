"""`evokernel run` and `evokernel refine`: parse, call `evokernel.run`/`refine`, render."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ._common import (
    EXIT_OK,
    EXIT_REJECTED,
    BackendOpt,
    BudgetOpt,
    DeviceOpt,
    EngineOpt,
    GpusOpt,
    JobsOpt,
    JsonOpt,
    MemoryBudgetOpt,
    MemoryModeOpt,
    MinOwnShareOpt,
    parse_bytes,
    ContextTokensOpt,
    ModelOpt,
    MultiTurnOpt,
    ReasoningEffortOpt,
    ThinkingTokensOpt,
    RepsOpt,
    RerankOpt,
    RulesOpt,
    SeedOpt,
    SizeOpt,
    SkillsOpt,
    TimeLimitOpt,
    TimeoutOpt,
    TrialsOpt,
    call,
    err_console,
    first_correct_cell,
    memory_path,
    out_console,
    parse_gpus,
    prepare_device,
    print_json,
    run_options,
    size_note,
)
from ._llm_options import BuiltinFirstOpt


def register(app: typer.Typer) -> None:
    app.command("run")(run_command)
    app.command("refine")(refine_command)


PolicyOpt = Annotated[str, typer.Option(help="'builtin': the offline policy (not an LLM), used without --model.")]
MemoryOpt = Annotated[Optional[Path], typer.Option(help="Memory database (default: $EVOKERNEL_HOME/memory.db or the user's data directory).")]
ExportOpt = Annotated[Optional[Path], typer.Option(help="Write each task's best kernel to this directory.")]
ResumeOpt = Annotated[bool, typer.Option(help="Continue a matching unfinished run (--no-resume starts a new one).")]
ReplayOpt = Annotated[bool, typer.Option(help="Answer repeated LLM requests from the response cache (exact, free rerun).")]
PortOpt = Annotated[Optional[list[str]], typer.Option("--port-from", help="Also retrieve memories of this backend (porting).")]


def run_command(
    tasks: Annotated[Optional[list[str]], typer.Argument(help="Task files or bundled task names; none: the bundled examples.")] = None,
    backend: BackendOpt = "triton",
    model: ModelOpt = None,
    context_tokens: ContextTokensOpt = 24_000,
    multi_turn: MultiTurnOpt = False,
    builtin_first: BuiltinFirstOpt = True,
    reasoning_effort: ReasoningEffortOpt = None,
    thinking_tokens: ThinkingTokensOpt = None,
    policy: PolicyOpt = "builtin",
    budget: BudgetOpt = 30,
    memory: MemoryOpt = None,
    memory_mode: MemoryModeOpt = "value",
    skills: SkillsOpt = True,
    rerank: RerankOpt = True,
    device: DeviceOpt = None,
    gpus: GpusOpt = None,
    size: SizeOpt = None,
    rules: RulesOpt = "strict",
    min_own_share: MinOwnShareOpt = 0.0,
    memory_budget: MemoryBudgetOpt = None,
    jobs: JobsOpt = None,
    engine: EngineOpt = "local",
    timeout: TimeoutOpt = 300.0,
    time_limit: TimeLimitOpt = None,
    trials: TrialsOpt = 5,
    reps: RepsOpt = 100,
    export: ExportOpt = None,
    resume: ResumeOpt = True,
    replay: ReplayOpt = False,
    port_from: PortOpt = None,
    seed: SeedOpt = 0,
    json_output: JsonOpt = False,
) -> None:
    """Draft each task until a kernel is correct, then refine its latency."""
    import evokernel

    options = run_options(
        backend=backend, model=model, context_tokens=context_tokens, multi_turn=multi_turn, builtin_first=builtin_first,
        reasoning_effort=reasoning_effort, thinking_tokens=thinking_tokens, policy=policy, budget=budget, memory_mode=memory_mode, device=device,
        gpus=parse_gpus(gpus), size=size, rules=rules,
        min_own_share=min_own_share, memory_budget_bytes=parse_bytes(memory_budget), jobs=jobs, engine=engine, timeout_s=timeout, time_limit_s=time_limit, trials=trials,
        reps=reps, export=str(export) if export else None, resume=resume, replay=replay, port_from=tuple(port_from or ()),
        seed=seed, skills=skills, rerank=rerank,
    )
    result = _with_progress(evokernel.run, options, list(tasks or []), memory=memory_path(memory))
    _finish(result, json_output)


def refine_command(
    backend: BackendOpt = "triton",
    model: ModelOpt = None,
    context_tokens: ContextTokensOpt = 24_000,
    multi_turn: MultiTurnOpt = False,
    builtin_first: BuiltinFirstOpt = True,
    reasoning_effort: ReasoningEffortOpt = None,
    thinking_tokens: ThinkingTokensOpt = None,
    policy: PolicyOpt = "builtin",
    budget: BudgetOpt = 10,
    memory: MemoryOpt = None,
    skills: SkillsOpt = True,
    rerank: RerankOpt = True,
    device: DeviceOpt = None,
    gpus: GpusOpt = None,
    size: SizeOpt = None,
    rules: RulesOpt = "strict",
    min_own_share: MinOwnShareOpt = 0.0,
    memory_budget: MemoryBudgetOpt = None,
    jobs: JobsOpt = None,
    engine: EngineOpt = "local",
    timeout: TimeoutOpt = 300.0,
    time_limit: TimeLimitOpt = None,
    export: ExportOpt = None,
    json_output: JsonOpt = False,
) -> None:
    """Continue refining every task in the memory that already has a feasible kernel."""
    import evokernel

    options = run_options(
        backend=backend, model=model, context_tokens=context_tokens, multi_turn=multi_turn, builtin_first=builtin_first,
        reasoning_effort=reasoning_effort, thinking_tokens=thinking_tokens, policy=policy, budget=budget, device=device, gpus=parse_gpus(gpus), size=size,
        rules=rules,
        min_own_share=min_own_share, memory_budget_bytes=parse_bytes(memory_budget), jobs=jobs, engine=engine, timeout_s=timeout, time_limit_s=time_limit, export=str(export) if export else None,
        skills=skills, rerank=rerank,
    )
    result = _with_progress(evokernel.refine, options, memory=memory_path(memory))
    _finish(result, json_output)


def _with_progress(fn: Any, options: Any, *args: Any, memory: Path) -> Any:
    """Say what runs where, then make the library call with a live view on stderr."""
    from ._progress import RunProgress

    device = prepare_device(options.backend, options.device)
    label = options.policy_label if options.model else f"{options.policy} (offline, not an LLM)"
    said = [f"policy: {label}; backend: {options.backend}; device: {device}; memory: {memory}"]
    note = size_note(device, options.size)
    view = RunProgress(err_console(), options.budget, preamble=[note, *said] if note else said)
    with view:
        return call(fn, *args, options, memory=memory, on_event=view)


def _finish(result: Any, json_output: bool) -> None:
    console = err_console()
    for note in result.notes:
        console.print(note, style="dim", markup=False)
    for path in result.exported:
        console.print(f"wrote {path}", style="dim", markup=False)
    if json_output:
        print_json(result.to_dict())
    else:
        _final_table(result)
    raise typer.Exit(EXIT_OK if result.all_correct else EXIT_REJECTED)


def _final_table(result: Any) -> None:
    from rich.table import Table

    label = result.policy if result.policy_is_llm else f"{result.policy} (offline, not an LLM)"
    usage = ("tokens in", "tokens out", "cost $") if result.policy_is_llm else ()
    table = Table("task", "correct", "attempts", "first correct", "best ms", "source", "x first", "x eager", "x compile",
                  "last verdict", *usage, title=f"run {result.run_id} ({label}){' resumed' if result.resumed else ''}")
    for t in result.tasks:
        cost = (str(t.tokens_in), str(t.tokens_out), f"{t.cost_usd:.4f}" if t.cost_usd else "-") if usage else ()
        table.add_row(
            t.name, "yes" if t.correct else ("stopped: " + t.stopped if t.stopped else "no"), str(t.attempts),
            first_correct_cell(t.first_correct_attempt, t.started_from_item_id), f"{t.best_latency_ms:.4f}" if t.best_latency_ms else "-", t.latency_source,
            f"{t.speedup_over_first:.2f}" if t.speedup_over_first else "-",
            f"{t.speedup_eager:.2f}" if t.speedup_eager else "-", f"{t.speedup_compile:.2f}" if t.speedup_compile else "-",
            t.last_status or "-", *cost,
        )
    if usage and len(result.tasks) > 1:
        spent = sum(t.cost_usd for t in result.tasks)
        table.add_row("total", "", str(sum(t.attempts for t in result.tasks)), *[""] * 7,
                      str(sum(t.tokens_in for t in result.tasks)), str(sum(t.tokens_out for t in result.tasks)),
                      f"{spent:.4f}" if spent else "-", end_section=True)
    out_console().print(table)

