"""The LLM layer: providers, prompts, parsing, logging of every call.

The frozen LLM is the policy. This package turns a task, retrieved memories and
the last verifier feedback into a prompt (`build_prompt`), sends it through a
provider with retries, pricing, caching and logging (`LLMClient`), and turns
the answer into a candidate (`parse_candidate`). Providers are plugins in the
`evokernel.providers` entry-point group; SDKs load only when one is built.
"""

from ._access import ProviderAccess, from_environment, price_table, provider_access, retry_policy
from ._calls import format_call, parse_summary
from ._client import CallLog, LLMClient, request_hash
from ._parse import (
    BlockNote,
    BlockRole,
    Candidate,
    CodeBlock,
    ParseError,
    ParseErrorKind,
    ParseReport,
    extract_blocks,
    parse_candidate,
    split_files,
)
from ._prices import BUILTIN_PRICES, Price, PriceTable
from ._edits import Edit, EditError, apply_edits, find_edits, parse_edited
from ._reasoning import ReasoningSplit, split_reasoning
from ._context import format_memory, source_key
from ._options import REASONING_EFFORTS, LLMOptions, ModelChoice
from ._prompts import (
    Conversation,
    MemoryView,
    Prompt,
    PromptInputs,
    PromptReport,
    StartPoint,
    Turn,
    build_prompt,
    content_text,
    system_prompt,
)
from ._registry import (
    ENTRY_POINT_GROUP,
    get_provider,
    parse_spec,
    provider_names,
    register_provider,
    unregister_provider,
)
from ._retry import RetryPolicy, call_with_retries
from ._rules import STAGES
from ._secrets import mask_obj, mask_secrets
from ._summary import StepFacts, StepSummary, facts_summary, summarize_step
from ._tokens import TokenCounter, get_token_counter, seed_tiktoken_cache
from ._types import Completion, LLMError, Provider, ProviderCallError

__all__ = [
    "ProviderAccess",
    "from_environment",
    "price_table",
    "provider_access",
    "retry_policy",
    "BUILTIN_PRICES",
    "BlockNote",
    "BlockRole",
    "CallLog",
    "Candidate",
    "CodeBlock",
    "Completion",
    "Conversation",
    "ENTRY_POINT_GROUP",
    "LLMClient",
    "LLMError",
    "LLMOptions",
    "MemoryView",
    "ModelChoice",
    "ParseError",
    "ParseErrorKind",
    "ParseReport",
    "Price",
    "PriceTable",
    "Prompt",
    "PromptInputs",
    "PromptReport",
    "Provider",
    "ProviderCallError",
    "REASONING_EFFORTS",
    "ReasoningSplit",
    "RetryPolicy",
    "STAGES",
    "StartPoint",
    "StepFacts",
    "StepSummary",
    "TokenCounter",
    "Turn",
    "build_prompt",
    "call_with_retries",
    "content_text",
    "extract_blocks",
    "facts_summary",
    "format_call",
    "format_memory",
    "get_provider",
    "get_token_counter",
    "mask_obj",
    "mask_secrets",
    "parse_candidate",
    "parse_spec",
    "parse_summary",
    "provider_names",
    "register_provider",
    "request_hash",
    "seed_tiktoken_cache",
    "source_key",
    "split_files",
    "split_reasoning",
    "Edit",
    "EditError",
    "apply_edits",
    "find_edits",
    "parse_edited",
    "summarize_step",
    "system_prompt",
    "unregister_provider",
]
