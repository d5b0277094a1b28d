"""The provider registry: building providers by name, their statuses, seat fallback."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from app.config import Settings
from app.providers.base import ProviderStatus
from app.providers.registry import (
    PROVIDER_NAMES,
    build_provider,
    build_providers,
    default_model,
    provider_statuses,
    resolve_seat,
)
from app.spec import Seat

CLAUDE = Seat(role="claude", label="Claude", provider="anthropic", model="claude-opus-4-1")


def statuses(**configured: bool) -> list[ProviderStatus]:
    reasons = {
        "anthropic": "ANTHROPIC_API_KEY not set",
        "local": "SmolLM2-135M-Instruct (Q4_1) at /x.gguf",
    }
    return [
        ProviderStatus(name, configured.get(name, False), reasons.get(name, "nope"), "m")
        for name in PROVIDER_NAMES
    ]


def test_every_provider_name_builds_a_provider_of_that_name(settings: Settings) -> None:
    providers = build_providers(settings)
    assert tuple(providers) == PROVIDER_NAMES
    assert all(provider.name == name for name, provider in providers.items())


def test_unknown_provider_name_is_a_value_error_listing_the_known_ones(settings: Settings) -> None:
    with pytest.raises(ValueError, match=r"unknown provider 'mistral'.*anthropic.*codex-cli"):
        build_provider("mistral", settings)


def test_with_no_keys_only_local_is_ready(settings: Settings) -> None:
    ready = {status.name for status in provider_statuses(settings) if status.configured}
    assert ready == {"local"}


def test_a_fake_cli_on_path_makes_its_provider_ready(
    settings: Settings, echo_cli: Callable[[str], Path]
) -> None:
    echo_cli("gemini")
    by_name = {status.name: status for status in provider_statuses(settings)}
    assert by_name["gemini-cli"].configured is True
    assert by_name["claude-cli"].configured is False


def test_unconfigured_seat_falls_back_to_local_with_a_note() -> None:
    seat, note = resolve_seat(CLAUDE, statuses(local=True))
    assert seat == Seat(role="claude", label="Claude", provider="local", model=None)
    assert note == "Claude: anthropic not configured (ANTHROPIC_API_KEY not set); using local"


def test_configured_seat_is_kept_as_it_is() -> None:
    assert resolve_seat(CLAUDE, statuses(anthropic=True, local=True)) == (CLAUDE, None)


def test_fallback_note_says_when_local_is_not_ready_either() -> None:
    _, note = resolve_seat(CLAUDE, statuses())
    assert note is not None
    assert note.endswith("which is not ready either (SmolLM2-135M-Instruct (Q4_1) at /x.gguf)")


def test_seat_with_an_unknown_provider_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown provider 'bard'"):
        resolve_seat(Seat(role="gemini", label="Gemini", provider="bard"), statuses())


def test_default_models_come_from_settings() -> None:
    settings = Settings(anthropic_model="claude-x", gemini_model="gemini-y", openai_model="gpt-z")
    assert [default_model(name, settings) for name in PROVIDER_NAMES] == [
        "claude-x",
        "gemini-y",
        "gpt-z",
        "smollm2-135m-instruct",
        "default",
        "default",
        "default",
    ]


def test_local_default_model_is_the_stem_of_a_configured_gguf() -> None:
    settings = Settings(local_model_path=Path("/models/qwen2.5-0.5b-instruct-q4.gguf"))
    assert default_model("local", settings) == "qwen2.5-0.5b-instruct-q4"
