"""The start-a-debate form: reading its fields and uploads into a ``DebateRequest``, and the
state it re-renders with (what was typed, and an error beside each field that has one).

Field names: ``topic``, ``format``, ``topic_type``, ``rounds``, ``seed``, ``history``,
``blind_judge``, ``swap_judge`` (checkboxes), ``context`` (files), and per seat
``seat-<format>-<role>`` (provider) and ``model-<format>-<role>`` (model name, blank for the
provider's default). Each format has its own seat fields so switching format in the page
keeps both sets of choices.

Every refusal is a sentence beside its field, and the form comes back with what was typed
(an over-long field cut to a bound; ``app.web.uploads`` reads the body within its limits).
The limits the form states (``FormLimits``) and the cost guard it shows (``CostGuard``) are
read from the same constants and settings that enforce them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from app.config import Settings
from app.context import MAX_CONTEXT_LINES
from app.debates import (
    MAX_BUDGET_USD,
    MAX_CONTEXT_FILE_BYTES,
    MAX_CONTEXT_FILES,
    MAX_CONTEXT_NAME_CHARS,
    MAX_MODEL_CHARS,
    MAX_ROUNDS,
    MAX_TOPIC_CHARS,
    MIN_ROUNDS,
    DebateRequest,
)
from app.formats import default_rounds_text, format_names, formats, rounds_formats
from app.providers.base import ProviderStatus
from app.spec import SEEDS, TOPIC_TYPES, Seat
from app.web.uploads import FILE_FIELD, ReadForm, TextValue, UploadedFile

FALLBACK_PROVIDER = "local"
TEXT_FIELDS = ("topic", "format", "topic_type", "rounds", "seed", "budget_usd")
CHECKBOXES = ("history", "blind_judge", "swap_judge")

# What each choice does, as the form's options read: the topic type frames the question for
# both sides; a seed analysis is one extra turn before the debate. Both offer a "plan", so
# their words must never read alike.
TOPIC_TYPE_TEXT = {
    "general": "General question",
    "plan": "Plan — the best plan",
    "bug": "Bug — its cause and fix",
    "tech": "Technical question",
}
TOPIC_TYPE_HELP = (
    "How both sides read the topic: an open question; a plan to agree on (a duel ends with "
    "the plan as a file to download); a bug's symptom, to find its cause and fix; or a "
    "technical question."
)
SEED_TEXT = {
    "": "None — start at once",
    "find_bug": "Hunt for bugs first",
    "plan": "Draft a plan first",
    "audit": "Audit first",
}
SEED_HELP = (
    "Duel only: before the openings, the second seat writes one analysis of the topic and "
    "context files, and both sides start from it."
)


def seat_field(format: str, role: str) -> str:
    return f"seat-{format}-{role}"


def model_field(format: str, role: str) -> str:
    return f"model-{format}-{role}"


def format_seats() -> dict[str, tuple[Seat, ...]]:
    """Every registered format's default seats, in registration order."""
    return {fmt.name: fmt.default_seats() for fmt in formats()}


def rounds_defaults() -> str:
    """What a blank rounds field gives each format that takes rounds: "duel 4 · society 2"."""
    return default_rounds_text(" · ")


def rounds_note() -> str:
    """Which formats take rounds, and what they count, for the rounds field's label:
    "duel; society: update rounds"."""
    return "; ".join(
        f"{fmt.name}: {fmt.rounds_meaning}" if fmt.rounds_meaning else fmt.name
        for fmt in rounds_formats()
    )


@dataclass(frozen=True)
class FormLimits:
    """The limits the form states beside its fields (the request model enforces them)."""

    topic_chars: int = MAX_TOPIC_CHARS
    model_chars: int = MAX_MODEL_CHARS
    min_rounds: int = MIN_ROUNDS
    max_rounds: int = MAX_ROUNDS
    files: int = MAX_CONTEXT_FILES
    file_kilobytes: int = MAX_CONTEXT_FILE_BYTES // 1000
    file_lines: int = MAX_CONTEXT_LINES


LIMITS = FormLimits()


@dataclass(frozen=True)
class CostGuard:
    """What one debate may spend, as the home page states it near the submit button."""

    max_output_tokens: int
    local_max_output_tokens: int
    debate_token_budget: int | None
    max_concurrent_debates: int

    @classmethod
    def of(cls, settings: Settings) -> CostGuard:
        return cls(
            max_output_tokens=settings.max_output_tokens,
            local_max_output_tokens=settings.local_max_output_tokens,
            debate_token_budget=settings.debate_token_budget,
            max_concurrent_debates=settings.max_concurrent_debates,
        )

    @property
    def budget_text(self) -> str:
        if self.debate_token_budget is None:
            return "no budget"
        return f"{self.debate_token_budget:,} tokens"


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

    @property
    def limits(self) -> FormLimits:
        return LIMITS

    def cost_guard(self, settings: Settings) -> CostGuard:
        return CostGuard.of(settings)

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
class KnownModel:
    """A model the form offers to pick for a seat (any other name may still be typed)."""

    name: str
    provider: str


# Which names of the price table each provider answers to: the hosted APIs by their model
# families, and the command-line tools by the family of the API behind them.
MODEL_FAMILIES: dict[str, tuple[str, ...]] = {
    "anthropic": ("claude-",),
    "claude-cli": ("claude-",),
    "gemini": ("gemini-",),
    "gemini-cli": ("gemini-",),
    "openai": ("gpt-", "o1", "o3", "o4"),
    "codex-cli": ("gpt-", "o1", "o3", "o4"),
}


def known_models(
    statuses: Sequence[ProviderStatus], listed: Iterable[str] = ()
) -> tuple[KnownModel, ...]:
    """The models the ready providers are known to answer with: each one's default model
    first, then every model of ``listed`` (the price table's) in a ready provider's family.
    Known without asking anyone, so the form never waits on a provider."""
    seen: dict[str, KnownModel] = {}
    ready = [status for status in statuses if status.configured]
    for status in ready:
        if status.default_model not in seen:
            seen[status.default_model] = KnownModel(status.default_model, status.name)
    names = sorted(set(listed))
    for status in ready:
        family = MODEL_FAMILIES.get(status.name, ())
        for name in names:
            if name.startswith(family) and name not in seen:
                seen[name] = KnownModel(name, status.name)
    return tuple(seen.values())


@dataclass(frozen=True)
class ParsedForm:
    state: FormState
    request: DebateRequest | None


def parse_form(form: ReadForm) -> ParsedForm:
    """The request the form asks for, or the errors that stop it (beside their fields)."""
    values = {name: form.text(name) for name in TEXT_FIELDS}
    # A browser sends each line break of a textarea as CR LF; the topic's counter, and the
    # topic as saved, have one character for it.
    values["topic"] = values["topic"].replace("\r\n", "\n")
    for name in CHECKBOXES:
        values[name] = "on" if form.text(name) else ""
    seats = format_seats()
    for format, defaults in seats.items():
        for seat in defaults:
            for name in (seat_field(format, seat.role), model_field(format, seat.role)):
                values[name] = form.text(name).strip()
    errors: dict[str, str] = dict(form.errors)
    topic = form.fields.get("topic")
    # A form refused for its size before the topic was read says so; not "enter a topic".
    topic_error = None if topic is None and form.too_large else topic_problem(topic)
    if topic_error:
        errors["topic"] = topic_error
    context: list[dict[str, str]] = []
    if FILE_FIELD not in errors:
        context, context_error = read_uploads(form.files_of(FILE_FIELD))
        if context_error:
            errors[FILE_FIELD] = context_error
    chosen = values["format"] or format_names()[0]
    data: dict[str, Any] = {
        "topic": values["topic"],
        "format": chosen,
        "topic_type": values["topic_type"] or "general",
        "seed": values["seed"] or None,
        "history": bool(values["history"]),
        "blind_judge": bool(values["blind_judge"]),
        "swap_judge": bool(values["swap_judge"]),
        # "$0.50" reads as 0.50: people write money with its sign.
        "budget_usd": values["budget_usd"].strip().removeprefix("$").strip() or None,
        "context": context,
        "seats": {
            seat.role: {
                "provider": values[seat_field(chosen, seat.role)] or seat.provider,
                "model": values[model_field(chosen, seat.role)] or None,
            }
            for seat in seats.get(chosen, ())
        },
    }
    if values["rounds"]:  # blank: the format's own default
        data["rounds"] = values["rounds"]
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


def _choices(field: str) -> Sequence[str]:
    """The values a choice field takes; the formats are the ones registered now."""
    return format_names() if field == "format" else CHOICES[field]


CHOICES: dict[str, Sequence[str]] = {"topic_type": TOPIC_TYPES, "seed": SEEDS}


def field_error(item: Mapping[str, Any], format: str) -> tuple[str, str]:
    """The form field a validation error belongs to, and its message in plain words."""
    loc = tuple(str(part) for part in item.get("loc", ()))
    kind = str(item.get("type", ""))
    message = str(item.get("msg", "invalid value")).removeprefix("Value error, ")
    head = loc[0] if loc else "form"
    if head == "topic":
        return "topic", _topic_message(kind, item.get("input"), message)
    if head == "rounds":
        return "rounds", f"Rounds must be a whole number from {MIN_ROUNDS} to {MAX_ROUNDS}."
    if head == "budget_usd":
        return "budget_usd", (
            f"A budget is an amount of US dollars above 0 and at most {MAX_BUDGET_USD:,}, "
            "like 0.50; leave it empty for no limit."
        )
    if head in (*CHOICES, "format"):
        return head, f"Choose one of: {', '.join(_choices(head))}."
    if head == "seats" and len(loc) >= 3:
        role, part = loc[1], loc[2]
        if part == "provider":
            return seat_field(format, role), message
        if kind == "string_too_long":
            message = f"A model name is at most {MAX_MODEL_CHARS} characters."
        return model_field(format, role), message
    if head in ("seats", "context", *CHECKBOXES):
        return head, message
    return "form", message


def topic_problem(topic: TextValue | None) -> str | None:
    """What is wrong with the topic before validation: none sent, or more characters than
    allowed, counted as it was read (the form keeps only the start of a very long one)."""
    if topic is None or not topic.text.strip():
        return "Enter a topic to debate."
    chars = topic.chars - topic.text.count("\r\n")
    if chars > MAX_TOPIC_CHARS:
        count = f"{chars:,}" if topic.whole else f"more than {chars:,}"
        return f"The topic is at most {MAX_TOPIC_CHARS:,} characters; this one has {count}."
    return None


def _topic_message(kind: str, given: Any, message: str) -> str:
    if kind in ("string_too_short", "missing"):
        return "Enter a topic to debate."
    if kind == "string_too_long":
        count = len(given) if isinstance(given, str) else 0
        return f"The topic is at most {MAX_TOPIC_CHARS:,} characters; this one has {count:,}."
    return message[:1].upper() + message[1:] + ("" if message.endswith(".") else ".")


def read_uploads(files: Sequence[UploadedFile]) -> tuple[list[dict[str, str]], str | None]:
    """Uploaded context files as ``{name, text}``; text only, within the size and count
    limits (the reader enforces them as the body arrives; checked again here so this holds
    whatever read the files). Returns the first problem in words, for beside the field."""
    if len(files) > MAX_CONTEXT_FILES:
        return [], f"At most {MAX_CONTEXT_FILES} files; {len(files)} were chosen."
    uploads: list[dict[str, str]] = []
    for upload in files:
        name = upload.filename or "context"
        if len(name) > MAX_CONTEXT_NAME_CHARS:
            return [], f"A file name is longer than {MAX_CONTEXT_NAME_CHARS} characters."
        data = upload.data
        if len(data) > MAX_CONTEXT_FILE_BYTES:
            return [], f"{name} is larger than {MAX_CONTEXT_FILE_BYTES // 1000} kB."
        if b"\0" in data:
            return [], f"{name} is not a text file."
        try:
            # utf-8-sig: a byte-order mark some editors write is not part of the text.
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            return [], f"{name} is not a text file (it is not UTF-8)."
        uploads.append({"name": name, "text": text})
    return uploads, None
