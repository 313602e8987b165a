"""The two rule sets, and which rejections are cheating.

`strict` (the default): all computation happens in the candidate's own
kernels; outside them `ModelNew` may only allocate, take views and copy.
`kernelbench`: library calls (torch ops, cuBLAS/cuDNN from C++) are allowed
beside at least one own kernel that really runs, as KernelBench's prompt
("you may replace some operators") and the published results built on it
allow.

Every rule a candidate can break is named here once, with what breaking it
means: `hack` for cheating (the candidate would look correct or fast without
being so), `disallowed` for breaking the rule set without cheating. Static
findings, the runtime guard and the verdict messages all read this table, so
a rule's verdict and wording live in one place.
"""

from __future__ import annotations

import dataclasses

from ._result import RULE_SETS, Verdict

STRICT = "strict"
KERNELBENCH = "kernelbench"
DEFAULT_RULES = STRICT


@dataclasses.dataclass(frozen=True)
class Rule:
    name: str
    verdict: Verdict  # HACK (cheating) or DISALLOWED (outside the rule set)
    allowed_in: frozenset[str]  # rule sets under which this is not a violation at all
    summary: str  # what the rule forbids, for messages and prompts


def _rule(name: str, verdict: Verdict, summary: str, allowed_in: tuple[str, ...] = ()) -> Rule:
    return Rule(name, verdict, frozenset(allowed_in), summary)


H, D = Verdict.HACK, Verdict.DISALLOWED

RULES: dict[str, Rule] = {r.name: r for r in (
    # --- cheating: rejected under every rule set ------------------------------
    _rule("timer", H, "timers are the harness's: no time/timeit, CUDA events or patched clocks"),
    _rule("stream", H, "no side streams: work on another stream escapes the timed region"),
    _rule("thread", H, "no threads or processes: work outside the call escapes the timed region"),
    _rule("lazy-tensor", H, "no tensor subclasses, torch function or dispatch modes: the work could be deferred"),
    _rule("reference", H, "the reference and its module are out of reach (Model, sys.modules, frames, gc, inspect)"),
    _rule("harness", H, "the harness is out of reach (its packages, raw pointers, foreign calls)"),
    _rule("sandbox", H, "no processes, sockets, signals or unpickling"),
    _rule("dynamic-code", H, "no eval/exec/compile, dynamic imports or computed attribute names: they hide what runs"),
    _rule("monkey-patch", H, "no patching of libraries, builtins or shared objects"),
    _rule("global-state", H, "no changes to torch's global state (precision, determinism, threads)"),
    _rule("reseed", H, "no reseeding: the harness draws the inputs"),
    _rule("reduced-precision", H, "no lower precision than the task's dtypes (autocast, casts to fp16/bf16/fp8, tf32)"),
    _rule("input-mutation", H, "inputs are read-only unless the reference itself writes into them"),
    _rule("stale-output", H, "every output element is written on every call: no uninitialised memory, no outputs kept from earlier calls"),
    _rule("output-type", H, "outputs are plain dense torch.Tensors with real storage on the inputs' device"),
    # --- outside the rules, not cheating ---------------------------------------
    _rule("try-except", D, "no try/except: a fallback path hides a failing kernel; let errors surface"),
    _rule("no-kernel", D, "the candidate must contain its own kernel of the backend's kind"),
    _rule("no-launch", D, "ModelNew.forward must launch at least one of its own kernels"),
    _rule("torch-compile", D, "torch.compile, torch.jit and inductor are the baseline, not the candidate's kernels"),
    _rule("cuda-graph", D, "no CUDA graphs: the harness times the launches themselves"),
    _rule("torch-compute", D, "all computation happens in the candidate's own kernels (no torch compute ops)", (KERNELBENCH,)),
    _rule("library-call", D, "no library kernels (cuBLAS, cuDNN, CUTLASS) in place of the candidate's own", (KERNELBENCH,)),
    _rule("host-compute", D, "no host-side computation (numpy, .tolist()) in place of a kernel", (KERNELBENCH,)),
    _rule("lazy", D, "own kernels must do at least the required share of the GPU time (--min-own-share)"),
    _rule("backend", D, "the backend's own rules for its kernel format"),
)}


def check_rule_set(rules: str) -> str:
    """`rules` itself, or a ValueError naming the known rule sets."""
    if rules not in RULE_SETS:
        raise ValueError(f"unknown rule set {rules!r}; known: {', '.join(RULE_SETS)}")
    return rules


def verdict_for(rule: str, rules: str) -> Verdict | None:
    """The verdict breaking `rule` earns under `rules`; None when `rules` allows it."""
    r = RULES.get(rule) or RULES["backend"]
    if rules in r.allowed_in:
        return None
    return r.verdict


def allowed_elsewhere(rule: str, rules: str) -> list[str]:
    """Rule sets, other than `rules`, under which `rule` is no violation."""
    r = RULES.get(rule) or RULES["backend"]
    return [s for s in RULE_SETS if s != rules and s in r.allowed_in]


def explain(rule: str, rules: str) -> str:
    """'rule torch-compute of --rules strict: ...; --rules kernelbench allows it', for a message."""
    r = RULES.get(rule) or RULES["backend"]
    text = f"rule {r.name} of --rules {rules}: {r.summary}"
    others = allowed_elsewhere(rule, rules)
    if others:
        text += "; " + " or ".join(f"--rules {o}" for o in others) + " allows it"
    return text


RULE_SET_TEXT = {
    STRICT: (
        "Rule set `strict`: all computation happens in your own kernels. Outside them, ModelNew.forward may only "
        "allocate (torch.empty...), take views, copy and query metadata; torch compute ops, nn submodules that "
        "compute, and cuBLAS/cuDNN/CUTLASS calls are rejected as `disallowed`."
    ),
    KERNELBENCH: (
        "Rule set `kernelbench`: you may replace some operators and keep others: torch ops and library calls "
        "(cuBLAS, cuDNN) are allowed beside at least one of your own kernels that really runs on every call. "
        "The share of GPU time spent in your own kernels is measured and reported."
    ),
}

CHEATING_TEXT = (
    "Under every rule set these are cheating (`hack`): timers, side streams, threads, caching or reusing outputs "
    "across calls, uninitialised outputs, writing into the inputs, tensor subclasses or dispatch modes, reaching the "
    "reference or the harness, monkey-patching, reseeding, computing in a lower precision than the task runs in "
    "(autocast, casts to a narrower float type, tf32 on an fp32 task; a bf16 or fp16 task computes in its own type "
    "or wider). "
    "Also rejected (`disallowed`): try/except fallbacks, torch.compile/torch.jit, and a ModelNew that never launches "
    "its own kernel. Inputs are drawn fresh on every call and outputs are poisoned between calls."
)


ACCURACY_TEXT = (
    "Outputs are judged against the reference's and against the reference run in float64: a kernel far less "
    "accurate than the reference (TF32, fp16 or bf16 arithmetic on an fp32 task) is `wrong_result` even within the "
    "tolerance; one at least as accurate passes where the reference's own rounding misses the tolerance. Off the "
    "GPU, a PyTorch fallback for inputs not on the GPU is `unverified`: the GPU path is what is judged."
)


def describe_rules(rules: str) -> str:
    """The rule set in words for an LLM prompt (the rule set, cheating, accuracy)."""
    return RULE_SET_TEXT[check_rule_set(rules)] + "\n" + CHEATING_TEXT + "\n" + ACCURACY_TEXT


__all__ = [
    "DEFAULT_RULES",
    "KERNELBENCH",
    "RULES",
    "RULE_SETS",
    "Rule",
    "STRICT",
    "allowed_elsewhere",
    "check_rule_set",
    "describe_rules",
    "explain",
    "verdict_for",
]
