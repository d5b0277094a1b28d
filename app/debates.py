"""Starting a debate: a request (from the form, the API or the command line) is validated,
its seats resolved to ready providers, its context cut, and it becomes a saved, queued debate.

The request's field names are the ones the form and the JSON API use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, field_validator
from sqlalchemy.engine import Engine

from app import store
from app.config import Settings
from app.context import cut_context
from app.db import session_scope
from app.formats import get_format
from app.models import Debate
from app.providers.base import ProviderStatus
from app.providers.registry import PROVIDER_NAMES, resolve_seat
from app.spec import ContextFile, DebateSpec, FormatName, Seat, SeedTool, TopicType

MAX_TOPIC_CHARS = 2000
MAX_CONTEXT_FILES = 10
MAX_CONTEXT_FILE_BYTES = 200_000
MAX_MODEL_CHARS = 128


class ContextUpload(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=255)
    text: str = Field(max_length=MAX_CONTEXT_FILE_BYTES)


class SeatChoice(BaseModel):
    model_config = ConfigDict(extra="forbid")

    provider: str = Field(min_length=1, max_length=32)
    model: str | None = Field(default=None, max_length=MAX_MODEL_CHARS)

    @field_validator("provider")
    @classmethod
    def _known_provider(cls, value: str) -> str:
        if value not in PROVIDER_NAMES:
            raise ValueError(
                f"unknown provider {value!r}; choose one of {', '.join(PROVIDER_NAMES)}"
            )
        return value

    @field_validator("model")
    @classmethod
    def _plain_model_name(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        value = value.strip()
        if any(ch.isspace() or not ch.isprintable() for ch in value):
            raise ValueError("a model name has no spaces or control characters")
        return value


class DebateRequest(BaseModel):
    """What a person asks for. Unknown fields are refused, not ignored."""

    model_config = ConfigDict(extra="forbid")

    topic: str = Field(min_length=1, max_length=MAX_TOPIC_CHARS)
    format: FormatName = "duel"
    topic_type: TopicType = "general"
    rounds: int = Field(default=4, ge=1, le=8)
    seats: dict[str, SeatChoice] = Field(default_factory=dict)
    seed: SeedTool | None = None
    model: str | None = Field(
        default=None, max_length=MAX_MODEL_CHARS, description="Overrides the Gemini seat's model."
    )
    history: bool = False
    context: list[ContextUpload] = Field(default_factory=list, max_length=MAX_CONTEXT_FILES)

    @field_validator("topic")
    @classmethod
    def _topic_has_words(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("the topic is empty")
        return value


@dataclass(frozen=True)
class PreparedDebate:
    spec: DebateSpec
    notes: tuple[str, ...]


class SeatError(ValueError):
    """A seat names a role the format does not have."""


def parse_seat_choice(text: str) -> SeatChoice:
    """``provider`` or ``provider:model`` (the command line's and the form's short form)."""
    provider, _, model = text.partition(":")
    return SeatChoice(provider=provider.strip(), model=model.strip() or None)


def prepare(
    request: DebateRequest,
    *,
    statuses: Sequence[ProviderStatus],
    extra_context: Sequence[ContextFile] = (),
    skipped_paths: Sequence[str] = (),
) -> PreparedDebate:
    """The spec to run: default seats overridden by the request, then resolved so each seat
    names a provider that is ready (unconfigured ones fall back to ``local``, with a note)."""
    fmt = get_format(request.format)
    seats, notes = _seats(request, fmt.default_seats(), statuses)
    context = tuple(extra_context) + tuple(
        cut_context(upload.name, upload.text) for upload in request.context
    )
    spec = DebateSpec(
        topic=request.topic,
        format=request.format,
        topic_type=request.topic_type,
        rounds=request.rounds,
        seats=seats,
        context=context,
        skipped_paths=tuple(skipped_paths),
        seed=request.seed,
        history=request.history,
    )
    return PreparedDebate(spec=spec, notes=tuple(notes))


def _seats(
    request: DebateRequest,
    defaults: Sequence[Seat],
    statuses: Sequence[ProviderStatus],
) -> tuple[tuple[Seat, ...], list[str]]:
    roles = {seat.role for seat in defaults}
    unknown = sorted(set(request.seats) - roles)
    if unknown:
        raise SeatError(
            f"{request.format} has no seat {', '.join(unknown)}; its seats are "
            f"{', '.join(sorted(roles))}"
        )
    seats: list[Seat] = []
    notes: list[str] = []
    for default in defaults:
        seat = _chosen(default, request.seats.get(default.role), request)
        resolved, note = resolve_seat(seat, statuses)
        seats.append(resolved)
        if note:
            notes.append(note)
    return tuple(seats), notes


def _chosen(default: Seat, choice: SeatChoice | None, request: DebateRequest) -> Seat:
    provider, model = default.provider, default.model
    if choice is not None:
        provider, model = choice.provider, choice.model
    if request.model and default.role.endswith("gemini") and choice is None:
        model = request.model
    return Seat(role=default.role, label=default.label, provider=provider, model=model)


def create(engine: Engine, *, prepared: PreparedDebate, settings: Settings) -> Debate:
    with session_scope(engine) as session:
        return store.create_debate(
            session, spec=prepared.spec, token_budget=settings.debate_token_budget
        )


def seat_overrides(pairs: Mapping[str, str]) -> dict[str, SeatChoice]:
    return {role: parse_seat_choice(value) for role, value in pairs.items()}
