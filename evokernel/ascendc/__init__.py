"""EvoKernel's Ascend C knowledge and offline policy.

- API notes in our own words for every API the CPU model implements, seeded
  into a memory bank as `api_note` items (`seed_api_notes`) and found again by
  exact name (`api_names_in`) or by category.
- Templates that write a complete Ascend C candidate from a traced plan
  (`generate`), for elementwise chains and row reductions/normalisations.
- The builtin policy for the ascendc backend (`AscendCBuiltinPolicy`), which
  searches tile size, core count and buffer depth against the cost model.
"""

from ._config import AscendCConfig, config_from_triton, default_config, neighbours, search_space
from ._lower import LoweringError
from ._matmul_kernel import matmul_operator_project
from ._notes import API_NOTES, CATEGORIES, ApiNote, api_names_in, seed_api_notes
from ._policy import AscendCBuiltinPolicy
from ._templates import TemplateError, covers, generate

__all__ = [
    "API_NOTES",
    "ApiNote",
    "AscendCBuiltinPolicy",
    "AscendCConfig",
    "CATEGORIES",
    "LoweringError",
    "TemplateError",
    "api_names_in",
    "config_from_triton",
    "covers",
    "default_config",
    "generate",
    "matmul_operator_project",
    "neighbours",
    "search_space",
    "seed_api_notes",
]
