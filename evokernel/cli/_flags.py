"""The settings flags of every run-shaped command, built from the records' fields.

A command takes `options: RunOptions` and says which records it exposes:

    @settings("run", "evaluation", "llm", "loop", "execution")
    def run_command(tasks: ..., memory: ..., options: RunOptions) -> None: ...

Each record field with a `Flag` (evokernel.options) becomes one option with the
field's name, type, default and help, so `run`, `refine`, `bench` and `ablate`
cannot drift apart (tests/test_cli_flags.py holds them to it). The LLM policy's
flags come from `_llm_options` (its record, `evokernel.llm.LLMOptions`, is the
LLM package's). Nothing here imports torch: `evokernel --help` builds them all.
"""

from __future__ import annotations

import builtins
import copy
import dataclasses
import functools
import inspect
from typing import Annotated, Any, Callable, Collection, Mapping, Optional

import typer

from evokernel.options import EvaluationOptions, ExecutionOptions, Flag, LoopOptions, RunError, RunOptions, flag_of

from ._exit import fail_usage
from ._llm_options import LLM_FLAGS, llm_options

# The record each group of flags fills: "run" is RunOptions' own fields (backend, policy).
RECORDS: dict[str, type] = {"run": RunOptions, "evaluation": EvaluationOptions, "loop": LoopOptions,
                            "execution": ExecutionOptions}
GROUPS = ("run", "evaluation", "llm", "loop", "execution")
SETTINGS_ATTR = "__evokernel_settings__"  # the parameter names a command's settings flags fill


@dataclasses.dataclass(frozen=True)
class Setting:
    """One flag as a command parameter: the field it fills and its typer annotation."""

    name: str  # the field's (flat) name, also the parameter's
    group: str
    annotation: Any
    default: Any

    @property
    def flag(self) -> str:
        """The flag as a user types it (`--timeout`; a switch's first name)."""
        info = self.annotation.__metadata__[0]  # in Annotated, typer keeps the first name as `default`
        names = [d for d in (info.default, *info.param_decls) if isinstance(d, str) and d.startswith("--")]
        return names[0].split("/")[0] if names else "--" + self.name.replace("_", "-")


def _option_names(name: str, flag: Flag, kind: Any) -> list[str]:
    if flag.name is not None:
        return [flag.name]
    dashed = name.replace("_", "-")
    return [f"--{dashed}/--no-{dashed}"] if kind is bool else [f"--{dashed}"]


def _parser(flag: Flag) -> Callable[[Any], Any]:
    """The option's callback: the text given, parsed as the field wants it."""

    def parse(value: Any) -> Any:
        if value is None:
            return None
        try:
            return flag.parse(value)
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from None

    return parse


def record_settings(group: str) -> list[Setting]:
    """The flags of one record's fields, in the record's order."""
    record = RECORDS[group]
    settings = []
    for field in dataclasses.fields(record):
        flag = flag_of(field)
        if flag is None:
            continue
        kind = eval(field.type, vars(builtins))  # the field's annotation: builtins only (tested)
        default = field.default if field.default is not dataclasses.MISSING else field.default_factory()
        option: dict[str, Any] = dict(help=flag.help, metavar=flag.metavar)
        if flag.parse is not None:  # given as text, parsed into the field's value
            kind, option["callback"] = Optional[str], _parser(flag)
        elif flag.repeat:
            kind, default = Optional[list[str]], None
        if flag.min is not None:
            option["min"] = flag.min
        if flag.max is not None:
            option["max"] = flag.max
        info = typer.Option(*_option_names(field.name, flag, kind), **{k: v for k, v in option.items() if v is not None})
        settings.append(Setting(field.name, group, Annotated[kind, info], default))
    return settings


def group_settings(group: str) -> list[Setting]:
    if group == "llm":
        return [Setting(name, "llm", annotation, default) for name, annotation, default in LLM_FLAGS]
    return record_settings(group)


def settings(*groups: str, only: Mapping[str, Collection[str]] | None = None,
             defaults: Mapping[str, Any] | None = None, helps: Mapping[str, str] | None = None):
    """A decorator: the command gets the flags of `groups` (all of a group's fields, or those
    `only` names for it) and is called with `options`, the RunOptions they describe. `defaults`
    and `helps` change a flag's default or help for this command alone."""
    unknown = set(groups) - set(GROUPS)
    if unknown:
        raise ValueError(f"unknown settings group(s) {sorted(unknown)}; known: {', '.join(GROUPS)}")
    chosen = [s for g in groups for s in group_settings(g) if only is None or g not in only or s.name in only[g]]
    defaults, helps = dict(defaults or {}), dict(helps or {})

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        own = inspect.signature(fn, eval_str=True)
        params = [p for p in own.parameters.values() if p.name != "options"]
        clash = {p.name for p in params} & {s.name for s in chosen}
        if clash:
            raise ValueError(f"{fn.__name__}: parameters {sorted(clash)} are also settings")
        for s in chosen:
            annotation = s.annotation
            if s.name in helps:  # this command's own words for the flag
                info = copy.copy(annotation.__metadata__[0])
                info.help = helps[s.name]
                annotation = Annotated[annotation.__origin__, info]
            params.append(inspect.Parameter(s.name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation,
                                            default=defaults.get(s.name, s.default)))

        flags = {s.name: s.flag for s in chosen}

        @functools.wraps(fn)
        def command(**kwargs: Any) -> Any:
            values = {s.name: kwargs.pop(s.name) for s in chosen}
            return fn(**kwargs, options=build_options(values, flags))

        command.__signature__ = own.replace(parameters=params)  # what typer reads
        command.__annotations__ = {p.name: p.annotation for p in params}
        setattr(command, SETTINGS_ATTR, tuple(s.name for s in chosen))
        return command

    return decorate


def build_options(values: Mapping[str, Any], flags: Mapping[str, str] | None = None) -> RunOptions:
    """RunOptions from parsed flag values (flat names); a bad value or combination is a
    usage error (one line, exit 2) that names the flag when one value alone is wrong."""
    values = dict(values)
    llm_values = {name: values.pop(name) for name, _, _ in LLM_FLAGS if name in values}
    if values.get("port_from") is not None:
        values["port_from"] = tuple(values["port_from"])
    else:
        values.pop("port_from", None)
    llm = llm_options(list(llm_values.pop("model", None) or []), **llm_values) if llm_values else None
    try:
        return RunOptions.of(**values, llm=llm)
    except RunError as exc:
        raise fail_usage(_naming_the_flag(values, flags or {}, exc)) from None


def _naming_the_flag(values: Mapping[str, Any], flags: Mapping[str, str], error: RunError) -> str:
    """The record's message, prefixed with the flag whose value alone it refuses (as click
    says a bad value); a combination that is wrong names no single flag."""
    for name, value in values.items():
        try:
            RunOptions.of(**{name: value})
        except RunError as alone:
            return f"Invalid value for '{flags.get(name, name)}': {alone}"
    return str(error)


def command_settings(command: Callable[..., Any]) -> tuple[str, ...]:
    """The settings a command's flags fill (tests and docs)."""
    return getattr(command, SETTINGS_ATTR, ())
