"""Starting a debate: a request (from the form, the API or the command line) is validated,
its seats resolved to ready providers, its context cut, and it becomes a saved, queued debate.

The request's field names are the ones the form and the JSON API use.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
)
from sqlalchemy.engine import Engine
from sqlmodel import Session

from app import store
from app.config import Settings
from app.context import cut_context
from app.db import session_scope
from app.formats import FormatName, format_names, get_format
from app.models import Debate
from app.pricing import PriceTable, bundled_table
from app.providers.base import ProviderStatus
from app.providers.registry import PROVIDER_NAMES, resolve_seat
from app.spec import (
    ContextFile,
    DebateSpec,
    Seat,
    SeedTool,
    TopicType,
    check_model_name,
)

MAX_TOPIC_CHARS = 2000
MAX_CONTEXT_FILES = 10
MAX_CONTEXT_FILE_BYTES = 200_000
MAX_CONTEXT_NAME_CHARS = 255
MAX_MODEL_CHARS = 128
MIN_ROUNDS = 1
MAX_ROUNDS = 8
# More than any format has roles (a panel has nine); the rest is refused by role name.
MAX_SEATS = 16
MAX_BUDGET_USD = Decimal(100_000)

# C0 and C1 control characters other than tab and newline, and lone UTF-16 surrogates (JSON
# can carry them as escapes; they cannot be stored or sent as UTF-8).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
# What makes a context file "not text": a NUL byte, or a surrogate (not UTF-8 at all).
_NOT_TEXT = re.compile(r"[\x00\ud800-\udfff]")


def plain_text(value: str, *, what: str) -> str:
    """``value`` with line ends made ``\\n``; refused when it holds any other control
    character (or a lone surrogate), which no person types and no page can show."""
    value = value.replace("\r\n", "\n").replace("\r", "\n")
    found = _CONTROL.search(value)
    if found:
        raise ValueError(
            f"{what} has a control character (U+{ord(found.group()):04X}); "
            "only ordinary text, newlines and tabs are allowed"
        )
    return value


def _model_name(value: str | None) -> str | None:
    if value is None or not value.strip():
        return None
    return check_model_name(value.strip())


class ContextUpload(BaseModel):
    """A context file sent with the request: its name and its text (UTF-8, no NUL)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=MAX_CONTEXT_NAME_CHARS)
    text: str = Field(
        max_length=MAX_CONTEXT_FILE_BYTES,
        description=f"The file's text: UTF-8, at most {MAX_CONTEXT_FILE_BYTES:,} bytes.",
    )

    @field_validator("name")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("a context file needs a name")
        if "\n" in value or "\t" in value:
            raise ValueError("a file name is one line")
        return plain_text(value, what="the file name")

    @field_validator("text")
    @classmethod
    def _text_only(cls, value: str, info: ValidationInfo) -> str:
        name = info.data.get("name", "the file")
        if _NOT_TEXT.search(value):
            raise ValueError(f"{name} is not a text file")
        size = len(value.encode("utf-8"))
        if size > MAX_CONTEXT_FILE_BYTES:
            raise ValueError(
                f"{name} is larger than {MAX_CONTEXT_FILE_BYTES // 1000} kB ({size:,} bytes)"
            )
        return value


class SeatChoice(BaseModel):
    model_config = ConfigDict(extra="forbid")

    provider: str = Field(min_length=1, max_length=32)
    model: str | None = Field(
        default=None, max_length=MAX_MODEL_CHARS, description="None: the provider's default."
    )

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
        return _model_name(value)


class DebateRequest(BaseModel):
    """What a person asks for. Unknown fields are refused, not ignored."""

    model_config = ConfigDict(extra="forbid")

    topic: str = Field(
        min_length=1,
        max_length=MAX_TOPIC_CHARS,
        description="The question. Newlines and tabs are kept; other control characters refused.",
    )
    format: FormatName = "duel"
    topic_type: TopicType = "general"
    # Left out: the format's own default. Given, a whole number (``null`` is refused like any
    # other non-number, so the schema says integer).
    rounds: Annotated[
        int | None,
        WithJsonSchema(
            {
                "type": "integer",
                "minimum": MIN_ROUNDS,
                "maximum": MAX_ROUNDS,
                "description": "Rounds for the formats that take them; left out: the "
                "format's own default (duel 4, society 2 update rounds).",
            }
        ),
    ] = Field(default=None, ge=MIN_ROUNDS, le=MAX_ROUNDS)
    seats: dict[str, SeatChoice] = Field(
        default_factory=dict,
        max_length=MAX_SEATS,
        description="Role to provider, for roles of the chosen format; others keep defaults.",
    )
    seed: SeedTool | None = None
    model: str | None = Field(
        default=None, max_length=MAX_MODEL_CHARS, description="Overrides the Gemini seat's model."
    )
    history: bool = False
    context: list[ContextUpload] = Field(default_factory=list, max_length=MAX_CONTEXT_FILES)
    budget_usd: Decimal | None = Field(
        default=None,
        gt=0,
        le=MAX_BUDGET_USD,
        description="The most the debate may spend, in US dollars at list prices; it stops "
        "once that is spent (checked between turns). Every seat's model needs a price.",
    )
    blind_judge: bool = Field(
        default=False,
        description="Panel: the judge sees the sides as Side 1/Side 2 and the debaters by "
        "number, never pro/con or model names; its marks are read back to pro/con. "
        "The duel (no scores) ignores it.",
    )
    swap_judge: bool = Field(
        default=False,
        description="Panel: the judge judges a second time with the sides shown in the other "
        "order; the page and reports say whether both put the same side ahead. "
        "The duel (no scores) ignores it.",
    )

    @field_validator("topic")
    @classmethod
    def _topic_has_words(cls, value: str) -> str:
        value = plain_text(value, what="the topic").strip()
        if not value:
            raise ValueError("the topic is empty")
        return value

    @field_validator("rounds", mode="before")
    @classmethod
    def _rounds_not_a_flag(cls, value: Any) -> Any:
        # Lax mode reads true as 1; a flag where a count belongs is a mistake, not a request.
        if value is None or isinstance(value, bool):
            raise ValueError(f"rounds is a whole number from {MIN_ROUNDS} to {MAX_ROUNDS}")
        return value

    @field_validator("seats")
    @classmethod
    def _roles_of_the_format(
        cls, value: dict[str, SeatChoice], info: ValidationInfo
    ) -> dict[str, SeatChoice]:
        chosen = info.data.get("format")
        if chosen in format_names():
            roles = {seat.role for seat in get_format(chosen).default_seats()}
            unknown = sorted(set(value) - roles)
            if unknown:
                raise ValueError(seat_error_message(chosen, unknown, roles))
        return value

    @field_validator("model")
    @classmethod
    def _plain_model_name(cls, value: str | None) -> str | None:
        return _model_name(value)

    @field_validator("budget_usd", mode="before")
    @classmethod
    def _budget_not_a_flag(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError("budget_usd is an amount of US dollars, like 0.50")
        return value


def seat_error_message(format: str, unknown: Sequence[str], roles: set[str]) -> str:
    return f"{format} has no seat {', '.join(unknown)}; its seats are {', '.join(sorted(roles))}"


@dataclass(frozen=True)
class PreparedDebate:
    spec: DebateSpec
    notes: tuple[str, ...]


class SeatError(ValueError):
    """A seat names a role the format does not have."""


class BudgetError(ValueError):
    """A money budget was asked for, but a seat's model has no price to keep it with."""


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
    prices: PriceTable | None = None,
) -> PreparedDebate:
    """The spec to run: default seats overridden by the request, then resolved so each seat
    names a provider that is ready (unconfigured ones fall back to ``local``, with a note).

    A money budget needs every seat's price (``prices``; the bundled table when None), so
    that it can be kept: a seat whose model has none is refused (``BudgetError``)."""
    fmt = get_format(request.format)
    seats, notes = _seats(request, fmt.default_seats(), statuses)
    if request.budget_usd is not None:
        _check_priced(seats, statuses, prices or bundled_table())
    context = tuple(extra_context) + tuple(
        cut_context(upload.name, upload.text) for upload in request.context
    )
    spec = DebateSpec(
        topic=request.topic,
        format=request.format,
        topic_type=request.topic_type,
        rounds=request.rounds if request.rounds is not None else fmt.default_rounds,
        seats=seats,
        context=context,
        skipped_paths=tuple(skipped_paths),
        seed=request.seed,
        history=request.history,
        budget_usd=request.budget_usd,
        blind_judge=request.blind_judge,
        swap_judge=request.swap_judge,
    )
    return PreparedDebate(spec=spec, notes=tuple(notes))


def _check_priced(
    seats: Sequence[Seat], statuses: Sequence[ProviderStatus], prices: PriceTable
) -> None:
    defaults = {status.name: status.default_model for status in statuses}
    for seat in seats:
        model = seat.model or defaults.get(seat.provider, "default")
        if prices.price(seat.provider, model) is None:
            raise BudgetError(
                f"{seat.label}'s model {model} ({seat.provider}) has no price, so a money "
                f"budget cannot be kept; choose a priced model, or add its price to "
                f"{prices.where_to_add()}"
            )


def _seats(
    request: DebateRequest,
    defaults: Sequence[Seat],
    statuses: Sequence[ProviderStatus],
) -> tuple[tuple[Seat, ...], list[str]]:
    roles = {seat.role for seat in defaults}
    unknown = sorted(set(request.seats) - roles)
    if unknown:
        raise SeatError(seat_error_message(request.format, unknown, roles))
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


def save_new(
    session: Session,
    *,
    prepared: PreparedDebate,
    settings: Settings,
    rerun_of: str | None = None,
) -> Debate:
    """The prepared debate saved as queued, in ``session``'s transaction."""
    return store.create_debate(
        session,
        spec=prepared.spec,
        token_budget=settings.debate_token_budget,
        rerun_of=rerun_of,
    )


def create(
    engine: Engine,
    *,
    prepared: PreparedDebate,
    settings: Settings,
    rerun_of: str | None = None,
) -> Debate:
    with session_scope(engine) as session:
        return save_new(session, prepared=prepared, settings=settings, rerun_of=rerun_of)


def seat_overrides(pairs: Mapping[str, str]) -> dict[str, SeatChoice]:
    return {role: parse_seat_choice(value) for role, value in pairs.items()}
