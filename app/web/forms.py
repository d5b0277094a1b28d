"""The start-a-debate form: reading its fields and uploads into a ``DebateRequest``, and the
state it re-renders with (what was typed, and an error beside each field that has one).

Field names: ``topic``, ``format``, ``topic_type``, ``rounds``, ``seed``, ``history``,
``context`` (files), and per seat ``seat-<format>-<role>`` (provider) and
``model-<format>-<role>`` (model name, blank for the provider's default). Each format has
its own seat fields so switching format in the page keeps both sets of choices.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from starlette.datastructures import FormData, UploadFile

from app.debates import MAX_CONTEXT_FILE_BYTES, MAX_CONTEXT_FILES, DebateRequest
from app.formats import get_format
from app.providers.base import ProviderStatus
from app.spec import FORMATS, Seat

FALLBACK_PROVIDER = "local"
TEXT_FIELDS = ("topic", "format", "topic_type", "rounds", "seed")


def seat_field(format: str, role: str) -> str:
    return f"seat-{format}-{role}"


def model_field(format: str, role: str) -> str:
    return f"model-{format}-{role}"


def format_seats() -> dict[str, tuple[Seat, ...]]:
    return {name: get_format(name).default_seats() for name in FORMATS}


@dataclass(frozen=True)
class FormState:
    """What the form shows: values (as typed) and errors by field name."""

    values: Mapping[str, str] = field(default_factory=dict)
    errors: Mapping[str, str] = field(default_factory=dict)

    def value(self, name: str, default: str = "") -> str:
        return self.values.get(name, default)

    def checked(self, name: str) -> bool:
        return self.values.get(name) in ("on", "true", "1", "yes")

    def error(self, name: str) -> str | None:
        return self.errors.get(name)

    def seat(self, format: str, seat: Seat, statuses: Sequence[ProviderStatus]) -> str:
        """The provider selected for a seat: what was sent, else the format's default when
        it is ready, else the local model, else the default anyway (it falls back later)."""
        sent = self.values.get(seat_field(format, seat.role))
        if sent:
            return sent
        ready = {status.name for status in statuses if status.configured}
        if seat.provider in ready:
            return seat.provider
        if FALLBACK_PROVIDER in ready:
            return FALLBACK_PROVIDER
        return next(iter(sorted(ready)), seat.provider)


@dataclass(frozen=True)
class ParsedForm:
    state: FormState
    request: DebateRequest | None


async def parse_form(form: FormData) -> ParsedForm:
    """The request the form asks for, or the errors that stop it (beside their fields)."""
    values = {name: _text(form.get(name)) for name in TEXT_FIELDS}
    values["history"] = "on" if form.get("history") else ""
    seats = format_seats()
    for format, defaults in seats.items():
        for seat in defaults:
            for name in (seat_field(format, seat.role), model_field(format, seat.role)):
                values[name] = _text(form.get(name)).strip()
    errors: dict[str, str] = {}
    if not values["topic"].strip():
        errors["topic"] = "Enter a topic to debate."
    context, context_error = await read_uploads(form.getlist("context"))
    if context_error:
        errors["context"] = context_error
    chosen = values["format"] or "duel"
    data: dict[str, Any] = {
        "topic": values["topic"],
        "format": chosen,
        "topic_type": values["topic_type"] or "general",
        "rounds": values["rounds"] or "4",
        "seed": values["seed"] or None,
        "history": bool(values["history"]),
        "context": context,
        "seats": {
            seat.role: {
                "provider": values[seat_field(chosen, seat.role)] or seat.provider,
                "model": values[model_field(chosen, seat.role)] or None,
            }
            for seat in seats.get(chosen, ())
        },
    }
    request: DebateRequest | None = None
    try:
        request = DebateRequest.model_validate(data)
    except ValidationError as error:
        for item in error.errors():
            name, message = field_error(item, chosen)
            errors.setdefault(name, message)
    if errors:
        return ParsedForm(FormState(values, errors), None)
    return ParsedForm(FormState(values, {}), request)


def field_error(item: Mapping[str, Any], format: str) -> tuple[str, str]:
    """The form field a validation error belongs to, and its message in plain words."""
    loc = tuple(str(part) for part in item.get("loc", ()))
    message = str(item.get("msg", "invalid value")).removeprefix("Value error, ")
    head = loc[0] if loc else "form"
    if head == "topic" and item.get("type") in ("string_too_short", "missing"):
        return "topic", "Enter a topic to debate."
    if head == "seats" and len(loc) >= 3:
        role, part = loc[1], loc[2]
        name = seat_field(format, role) if part == "provider" else model_field(format, role)
        return name, message
    if head in (*TEXT_FIELDS, "history", "context"):
        return head, message
    return "form", message


async def read_uploads(
    items: Sequence[str | UploadFile],
) -> tuple[list[dict[str, str]], str | None]:
    """Uploaded context files as ``{name, text}``; text only, within the size and count
    limits. Returns the first problem in words (the form shows it beside the field)."""
    files = [item for item in items if isinstance(item, UploadFile) and item.filename]
    if len(files) > MAX_CONTEXT_FILES:
        return [], f"At most {MAX_CONTEXT_FILES} files; {len(files)} were chosen."
    uploads: list[dict[str, str]] = []
    for upload in files:
        name = upload.filename or "context"
        data = await upload.read(MAX_CONTEXT_FILE_BYTES + 1)
        if len(data) > MAX_CONTEXT_FILE_BYTES:
            return [], f"{name} is larger than {MAX_CONTEXT_FILE_BYTES // 1000} kB."
        if b"\0" in data:
            return [], f"{name} is not a text file."
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return [], f"{name} is not UTF-8 text."
        uploads.append({"name": name, "text": text})
    return uploads, None


def _text(value: str | UploadFile | None) -> str:
    return value if isinstance(value, str) else ""
