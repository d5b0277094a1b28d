"""The provider protocol, its value types, and the one error every adapter raises."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal, Protocol


@dataclass(frozen=True)
class Message:
    """One chat message. ``user`` and ``assistant`` only: the system text travels apart."""

    role: Literal["user", "assistant"]
    content: str


@dataclass(frozen=True)
class Usage:
    input_tokens: int
    output_tokens: int
    estimated: bool = False


@dataclass(frozen=True)
class TextDelta:
    text: str


# Each SDK's own word for "the reply reached its output-token cap": Anthropic's stop_reason
# (``model_context_window_exceeded`` when the context ran out first), OpenAI's and llama.cpp's
# finish_reason, Gemini's FinishReason. CLI providers do not say why they stopped.
OUTPUT_LIMIT_STOP_REASONS = frozenset(
    {"max_tokens", "model_context_window_exceeded", "length", "MAX_TOKENS"}
)


@dataclass(frozen=True)
class Finished:
    """The end of a stream: the tokens it cost and the provider's own reason for stopping."""

    usage: Usage
    stop_reason: str | None = None

    @property
    def hit_output_limit(self) -> bool:
        """Whether the reply was cut because it reached its output-token cap."""
        return self.stop_reason in OUTPUT_LIMIT_STOP_REASONS


@dataclass(frozen=True)
class Retrying:
    """A retryable failure happened; text streamed so far in this call is void."""

    attempt: int
    delay: float
    error: ProviderError


StreamEvent = TextDelta | Finished | Retrying


class ErrorKind(StrEnum):
    AUTH = "auth"
    RATE_LIMIT = "rate_limit"
    OVERLOADED = "overloaded"
    TIMEOUT = "timeout"
    BAD_REQUEST = "bad_request"
    SERVER = "server"
    CONNECTION = "connection"
    NOT_FOUND = "not_found"
    # A bug in Argue (an adapter or the code around it), not the provider's doing: never
    # retried, always logged with its traceback.
    INTERNAL = "internal"


RETRYABLE_KINDS = frozenset(
    {
        ErrorKind.RATE_LIMIT,
        ErrorKind.OVERLOADED,
        ErrorKind.TIMEOUT,
        ErrorKind.SERVER,
        ErrorKind.CONNECTION,
    }
)


class ProviderError(Exception):
    """Any failure of any provider, with the provider's own message for the user."""

    def __init__(
        self,
        *,
        kind: ErrorKind,
        provider: str,
        message: str,
        status: int | None = None,
        retry_after: float | None = None,
        retryable: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.provider = provider
        self.message = message
        self.status = status
        self.retry_after = retry_after
        self.retryable = kind in RETRYABLE_KINDS if retryable is None else retryable

    def redacted(self, secrets: Iterable[str]) -> ProviderError:
        """This error with every secret in its message replaced by ``[redacted]``."""
        message = redact(self.message, secrets)
        if message == self.message:
            return self
        return ProviderError(
            kind=self.kind,
            provider=self.provider,
            message=message,
            status=self.status,
            retry_after=self.retry_after,
            retryable=self.retryable,
        )

    def __str__(self) -> str:
        status = f" {self.status}" if self.status is not None else ""
        return f"{self.provider} {self.kind.value}{status}: {self.message}"


@dataclass(frozen=True)
class ProviderStatus:
    """Whether a provider can be used now, and in words why not."""

    name: str
    configured: bool
    reason: str
    default_model: str


class Provider(Protocol):
    """What every adapter offers. ``stream`` raises ``ProviderError`` and nothing else."""

    name: str

    def status(self) -> ProviderStatus: ...

    async def list_models(self) -> list[str]: ...

    def stream(
        self,
        *,
        model: str,
        system: str,
        messages: Sequence[Message],
        max_tokens: int,
    ) -> AsyncIterator[TextDelta | Finished]: ...


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with each secret, and any long fragment of one, replaced by ``[redacted]``.

    Fragments count because providers often quote a key partly masked (``sk-abc…xyz``)."""
    for secret in secrets:
        for fragment in _fragments(secret):
            text = text.replace(fragment, "[redacted]")
    return text


def _fragments(secret: str, size: int = 8) -> list[str]:
    """The secret, then every run of ``size`` of its characters."""
    if len(secret) <= size:
        return [secret] if secret else []
    return [secret, *{secret[i : i + size] for i in range(len(secret) - size + 1)}]


def estimate_tokens(text: str) -> int:
    """A rough token count for providers that report none: about four characters a token."""
    return max(1, (len(text) + 3) // 4) if text else 0
