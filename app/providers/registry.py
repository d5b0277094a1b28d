"""The provider registry: every provider by name, their readiness, and seat fallback.

The SDK adapters are imported only when built, so a command that needs one provider never
pays for (or breaks on) the others' SDKs.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import replace

from app.config import Settings
from app.providers.base import Provider, ProviderStatus
from app.spec import Seat

log = logging.getLogger(__name__)

PROVIDER_NAMES = ("anthropic", "gemini", "openai", "local", "claude-cli", "gemini-cli", "codex-cli")
FALLBACK_PROVIDER = "local"


def _check(name: str) -> None:
    if name not in PROVIDER_NAMES:
        raise ValueError(f"unknown provider {name!r}; known providers: {', '.join(PROVIDER_NAMES)}")


def build_provider(name: str, settings: Settings) -> Provider:
    _check(name)
    if name == "anthropic":
        from app.providers.anthropic import AnthropicProvider

        return AnthropicProvider(settings)
    if name == "gemini":
        from app.providers.gemini import GeminiProvider

        return GeminiProvider(settings)
    if name == "openai":
        from app.providers.openai import OpenAIProvider

        return OpenAIProvider(settings)
    if name == "local":
        from app.providers.local import LocalProvider

        return LocalProvider(settings)
    from app.providers.cli import build_cli_provider

    return build_cli_provider(name, settings)


def build_providers(settings: Settings) -> dict[str, Provider]:
    return {name: build_provider(name, settings) for name in PROVIDER_NAMES}


# The hosted APIs' key settings and the variables people set them with. Without its key such
# an adapter is plainly not configured, and saying so need not import its SDK (each takes a
# large part of a second to import). The OpenAI adapter has more to say when a base URL is set.
_KEYED = {
    "anthropic": ("anthropic_api_key", "ANTHROPIC_API_KEY", None),
    "gemini": ("gemini_api_key", "GEMINI_API_KEY (or GOOGLE_API_KEY)", None),
    "openai": ("openai_api_key", "OPENAI_API_KEY", "openai_base_url"),
}


def _keyless_status(name: str, settings: Settings) -> ProviderStatus | None:
    """A hosted provider's status when its key is unset, known from the settings alone."""
    if name not in _KEYED:
        return None
    key_setting, key_env, base_url_setting = _KEYED[name]
    if getattr(settings, key_setting) is not None:
        return None
    if base_url_setting is not None and getattr(settings, base_url_setting):
        return None
    return ProviderStatus(name, False, f"{key_env} not set", default_model(name, settings))


def provider_status(name: str, settings: Settings) -> ProviderStatus:
    """One provider's status; an adapter that cannot even be imported is "not configured"."""
    if (keyless := _keyless_status(name, settings)) is not None:
        return keyless
    try:
        return build_provider(name, settings).status()
    except ImportError as exc:
        reason = f"adapter unavailable ({exc})"
        return ProviderStatus(name, False, reason, default_model(name, settings))


def provider_statuses(settings: Settings) -> list[ProviderStatus]:
    return [provider_status(name, settings) for name in PROVIDER_NAMES]


def default_model(name: str, settings: Settings) -> str:
    _check(name)
    if name == "anthropic":
        return settings.anthropic_model
    if name == "gemini":
        return settings.gemini_model
    if name == "openai":
        return settings.openai_model
    if name == "local":
        from app.providers.local import model_id

        return model_id(settings)
    from app.providers.cli import CLI_DEFAULT_MODEL

    return CLI_DEFAULT_MODEL


def resolve_seat(seat: Seat, statuses: Iterable[ProviderStatus]) -> tuple[Seat, str | None]:
    """The seat as it will actually run, and a note for people when it had to change.

    A seat whose provider is not configured moves to the local model (its own default), so a
    debate still runs; the note says which seat moved and why.
    """
    _check(seat.provider)
    by_name = {status.name: status for status in statuses}
    status = by_name.get(seat.provider)
    if status is None or status.configured or seat.provider == FALLBACK_PROVIDER:
        return seat, None
    note = f"{seat.label}: {seat.provider} not configured ({status.reason}); using local"
    local = by_name.get(FALLBACK_PROVIDER)
    if local is not None and not local.configured:
        note += f", which is not ready either ({local.reason})"
    return replace(seat, provider=FALLBACK_PROVIDER, model=None), note


async def close_providers(providers: Mapping[str, Provider]) -> None:
    """Close the providers' HTTP clients while their loop still runs (the adapters that have
    an ``aclose``): a client left to the garbage collector finds its loop gone. One that fails
    to close is logged and does not keep the others open."""
    for name, provider in providers.items():
        close = getattr(provider, "aclose", None)
        if close is None:
            continue
        try:
            await close()
        except Exception:
            log.warning("closing the %s provider's client failed", name, exc_info=True)
