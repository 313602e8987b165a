"""generate(plan, config) -> candidate source, by the plan's family's registered generator
(`_families`); a pipeline is its stages' code in launch order, each stage's result a buffer
in forward."""

from __future__ import annotations

import re

from ._config import Config, default_config
from ._emit import StageCode, assemble, returned_expression, stage_args
from ._families import family
from ._ir import Plan, Unsupported

__all__ = ["generate", "stage_code"]


def stage_code(plan: Plan, config: Config | None, tag: str = "") -> StageCode:
    """One stage's kernels and launcher, by its family's generator (``config`` None: the stage's default)."""
    kind = family(plan.family)
    if kind.search_space is None:  # not configured (host)
        return kind.generate(plan, None, tag)
    config = config or default_config(plan)
    if config.family != plan.family:
        raise ValueError(f"config is for the {config.family} family, the plan is {plan.family}")
    return kind.generate(plan, config, tag)


def generate(plan: Plan, config: Config | None = None) -> str:
    """A complete candidate file (imports, @triton.jit kernels, launchers, ModelNew)."""
    if isinstance(plan, Unsupported):
        raise ValueError(f"cannot generate code for an unsupported task: {plan.reason}")
    kept = getattr(plan, "_default_candidate", None)  # (configuration, source) analyze() wrote
    if kept is not None and (config is None or config == kept[0]):
        return kept[1]
    config = config or default_config(plan)
    if plan.family != "pipeline":
        return assemble(plan, config.text(), [stage_code(plan, config)])
    if config.family != plan.main_stage.family:
        raise ValueError(f"config is for the {config.family} family, the main stage is {plan.main_stage.family}")
    stages = plan.stages
    codes = [stage_code(stage, config if k == plan.main else None, f"_s{k}") for k, stage in enumerate(stages)]
    reads = [", ".join(stage_args(stage)) for stage in stages]
    last = len(stages) - 1
    buffers = [s.buffer for s in stages[:last]]
    # several tensors returned: every stage's result is a buffer, and forward's return reads them as a
    # stage after the last would (no returned buffer is deleted, nor written into a cat in place)
    returned = None if plan.returns is None else returned_expression(plan.returns)
    if returned is not None:
        reads.append(returned)
        buffers.append(stages[last].buffer)
    known = set(buffers)
    # the stages that name each buffer in their arguments, in one pass (whole names: buf1 is not buf12)
    readers: dict[str, list[int]] = {name: [] for name in known}
    for k, args in enumerate(reads):
        for word in re.findall(r"\w+", args):
            if word in readers:
                readers[word].append(k)
    parts = _cat_parts(stages, readers)
    # a part written in place is launched by its cat (its only reader), where every part's operands
    # exist: the cat's tensor is made first and each part written into its slice
    order = [k for k in range(len(stages)) if k not in parts]
    position = {k: i for i, k in enumerate(order)}
    position.update({k: position[c] for k, c in parts.items()})
    position[len(stages)] = len(order)  # the return, when it reads buffers
    # the last stage (in launch order) that names each buffer in its arguments
    written = {stages[k].buffer for k in parts}  # never a variable of forward: no del
    last_reader = {name: max(position[k] for k in ks) for name, ks in readers.items() if ks and name not in written}
    calls = []
    for i, k in enumerate(order):
        stage, code = stages[k], codes[k]
        own = [j for j in sorted(parts) if parts[j] == k]
        returns_this = k == last and returned is None  # forward returns the last stage's result
        if own:
            calls += _cat_in_place(stage, k, {stages[j].buffer: (codes[j], reads[j]) for j in own})
            if returns_this:
                calls.append(stage.buffer)
        else:
            call = f"{code.entry}({reads[k]})"
            calls.append(call if returns_this else f"{stage.buffer} = {call}")
        if k < last:
            # A buffer no later stage reads is dropped here, as eager drops its temporaries: forward as
            # written (its first calls) then peaks near eager's memory, not at the sum of its buffers.
            done = [name for name in buffers if last_reader.get(name) == i]
            if done:
                calls.append(f"del {', '.join(done)}")
    if returned is not None:
        calls.append(returned)
    text = f"pipeline of {len(stages)} stages ({', '.join(s.family for s in stages)}); " \
           f"stage {plan.main}: {config.text()}"
    return assemble(plan, text, codes, calls)


# the families whose launchers write into a given tensor (out=) and say the shape they would make
# ({entry}_out): a cat's part from one of them is written into the cat in place
CAT_PARTS = ("elementwise", "scan", "conv")


def _cat_parts(stages: list[Plan], readers: dict[str, list[int]]) -> dict[int, int]:
    """{stage: its cat stage} for the stages of CAT_PARTS' families whose result only a cat reads,
    once: they write into the cat's tensor (no copy), the cat's other operands are copied into it."""
    producer = {s.buffer: j for j, s in enumerate(stages)}
    parts = {}
    for c, stage in enumerate(stages):
        if stage.family != "host" or stage.node(stage.anchor_id).op != "cat":
            continue
        if len({leaf.spec.dtype for leaf in stage.leaves}) > 1:
            continue  # torch.cat promotes mixed dtypes: left to it
        for leaf in stage.leaves:
            k = producer.get(leaf.source)
            if k is not None and stages[k].family in CAT_PARTS and readers.get(leaf.source) == [c]:
                parts[k] = c
    return parts


def _cat_in_place(cat: Plan, k: int, by_buffer: dict[str, tuple[StageCode, str]]) -> list[str]:
    """forward's lines for cat stage ``k`` whose parts ({buffer: (code, arguments)}) write into it:
    the cat's tensor and its slices made first, each part launched into its slice, every other
    operand copied into its own."""
    node = cat.node(cat.anchor_id)
    names = {leaf.name: leaf.source for leaf in cat.leaves}
    ordered = [names[a.value] for a in node.args]  # the cat's operands in its own order
    # an operand that is not a part is evaluated once (it may be an expression that computes)
    copied = {i: f"_cat{k}_{i}" for i, o in enumerate(ordered) if o not in by_buffer}
    lines = [f"{name} = {ordered[i]}" for i, name in copied.items()]
    specs = [f"_tensor_out({copied[i]})" if i in copied else f"{by_buffer[o][0].entry}_out({by_buffer[o][1]})"
             for i, o in enumerate(ordered)]
    slots = f"_slots{k}"
    lines.append(f"{cat.buffer}, {slots} = _cat_slots({node.attr('dim')}, [{', '.join(specs)}])")
    for i, o in enumerate(ordered):
        if i in copied:
            lines.append(f"_copy_({slots}[{i}], {copied[i]})")
        else:
            code, args = by_buffer[o]
            lines.append(f"{code.entry}({args}, out={slots}[{i}])")
    lines.append(f"del {', '.join([slots, *copied.values()])}")
    return lines
