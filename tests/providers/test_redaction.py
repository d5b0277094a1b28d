"""Provider messages that quote a key, whole or partly masked, lose it before anyone sees it."""

from __future__ import annotations

from app.providers.base import ErrorKind, ProviderError, redact

KEY = "sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"


def test_a_whole_key_is_redacted() -> None:
    assert redact(f"Incorrect API key provided: {KEY}.", [KEY]) == (
        "Incorrect API key provided: [redacted]."
    )


def test_a_partly_masked_key_loses_every_long_fragment() -> None:
    masked = f"Incorrect API key provided: {KEY[:12]}************{KEY[-4:]}"
    shown = redact(masked, [KEY])
    assert KEY[:12] not in shown
    assert "Incorrect API key provided" in shown


def test_an_error_without_secrets_is_kept_as_it_is() -> None:
    error = ProviderError(kind=ErrorKind.AUTH, provider="openai", message="Key revoked")
    assert error.redacted([KEY]) is error
    redacted = ProviderError(kind=ErrorKind.AUTH, provider="openai", message=KEY).redacted([KEY])
    assert (redacted.message, redacted.kind, redacted.retryable) == (
        "[redacted]",
        ErrorKind.AUTH,
        False,
    )
