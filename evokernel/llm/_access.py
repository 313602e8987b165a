"""Where and as whom to call each provider, and how patiently: settings the caller
resolves (the CLI from its environment) and hands to the policy in `LLMOptions`.

The library reads no environment. `from_environment(environ)` turns a mapping of
variables into these settings for a caller that has one (the CLI passes
`os.environ`); the names it reads are the documented ones:
`<PROVIDER>_API_KEY`, `<PROVIDER>_AUTH_TOKEN`, `<PROVIDER>_BASE_URL`,
`EVOKERNEL_<PROVIDER>_ALLOW_NO_KEY`, `EVOKERNEL_LLM_MAX_ATTEMPTS`,
`EVOKERNEL_LLM_BACKOFF_S` and `EVOKERNEL_PRICES`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Mapping

from ._prices import PriceTable
from ._retry import RetryPolicy

# The provider factory's keyword arguments that carry access (a plugin that takes none is given none).
ACCESS_ARGUMENTS = ("api_key", "auth_token", "base_url", "allow_no_key")


@dataclasses.dataclass(frozen=True)
class ProviderAccess:
    """One provider's endpoint and credentials. Keys never print (`repr`) and never
    reach a run's recorded options (`LLMOptions.to_dict`)."""

    api_key: str | None = dataclasses.field(default=None, repr=False)
    auth_token: str | None = dataclasses.field(default=None, repr=False)
    base_url: str | None = None
    allow_no_key: bool = False

    def arguments(self) -> dict[str, Any]:
        """The factory arguments this access sets (unset ones are left out)."""
        return {name: value for name in ACCESS_ARGUMENTS if (value := getattr(self, name))}


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


def provider_access(environ: Mapping[str, str], provider: str) -> ProviderAccess:
    """`<PROVIDER>_API_KEY`, `_AUTH_TOKEN`, `_BASE_URL` and `EVOKERNEL_<PROVIDER>_ALLOW_NO_KEY` from `environ`."""
    upper = provider.upper().replace("-", "_")
    return ProviderAccess(
        api_key=environ.get(f"{upper}_API_KEY") or None,
        auth_token=environ.get(f"{upper}_AUTH_TOKEN") or None,
        base_url=environ.get(f"{upper}_BASE_URL") or None,
        allow_no_key=_truthy(environ.get(f"EVOKERNEL_{upper}_ALLOW_NO_KEY")),
    )


def retry_policy(environ: Mapping[str, str]) -> RetryPolicy:
    """The default policy with `EVOKERNEL_LLM_MAX_ATTEMPTS` and `EVOKERNEL_LLM_BACKOFF_S`
    from `environ`; ValueError naming the variable when one is not a number."""
    default = RetryPolicy()
    fields: dict[str, Any] = {}
    for name, field, kind in (("EVOKERNEL_LLM_MAX_ATTEMPTS", "max_attempts", int),
                              ("EVOKERNEL_LLM_BACKOFF_S", "base_delay_s", float)):
        raw = environ.get(name)
        if raw:
            try:
                fields[field] = kind(raw)
            except ValueError:
                raise ValueError(f"{name}={raw!r} is not {'an integer' if kind is int else 'a number'}") from None
    try:
        return dataclasses.replace(default, **fields)
    except ValueError as exc:
        raise ValueError(f"{exc} (from EVOKERNEL_LLM_MAX_ATTEMPTS / EVOKERNEL_LLM_BACKOFF_S)") from None


def price_table(environ: Mapping[str, str]) -> PriceTable:
    """The built-in prices with the file `EVOKERNEL_PRICES` names on top."""
    return PriceTable.load(environ.get("EVOKERNEL_PRICES") or None)


def from_environment(options: Any, environ: Mapping[str, str], providers: Iterable[str] | None = None) -> Any:
    """`options` (an `LLMOptions`) with the access of each of its providers, the retry
    policy and the price table that `environ` describes. ValueError on a bad value."""
    names = set(providers or ()) | {m.spec.partition(":")[0] for m in options.models}
    return dataclasses.replace(
        options,
        access={name: provider_access(environ, name) for name in sorted(names)},
        retry=retry_policy(environ),
        prices=price_table(environ),
    )
