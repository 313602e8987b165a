"""The verified skill library (daVinci-kernel, arXiv 2606.16497, with a frozen LLM).

A skill is a reusable optimisation technique distilled from one step that made
a task's kernel at least 1.2x faster than its start point: a title, when it
applies, the technique in words, a short code sketch and its evidence. It is
summarised by the LLM driving the run, or assembled from the builtin policy's
configuration change; re-timed before and after in alternation in one worker
and admitted only if the speedup reproduces; near-duplicates merged, rejected
proposals kept so they are not proposed again. For each step, BM25 recall over
admitted skills and a rerank (one short LLM call, or the skills' stage values)
choose the few that go into the prompt, and that the builtin policy tries first.
Skills are memory items of kind `best_practice`, so their values learn from the
steps that used them like every other item's.
"""

from ._library import Learned, Selection, SkillLibrary, skills_in
from ._select import by_value, llm_rerank, parse_rerank, recall, rerank_request
from ._summary import Improvement, builtin_draft, config_change, llm_draft, parse_summary
from ._types import (
    KIND,
    Action,
    Evidence,
    Scope,
    Skill,
    SkillDraft,
    SkillOptions,
    SkillStatus,
    Usage,
    Verification,
)
from ._verify import verify

__all__ = [
    "KIND",
    "Action",
    "Evidence",
    "Improvement",
    "Learned",
    "Scope",
    "Selection",
    "Skill",
    "SkillDraft",
    "SkillLibrary",
    "SkillOptions",
    "SkillStatus",
    "Usage",
    "Verification",
    "builtin_draft",
    "by_value",
    "config_change",
    "llm_draft",
    "llm_rerank",
    "parse_rerank",
    "parse_summary",
    "recall",
    "rerank_request",
    "skills_in",
    "verify",
]
