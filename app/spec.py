"""The frozen value types of a debate: the request, its seats, a planned turn, a done turn;
and the rule every seat's model name follows, wherever it is typed.

No database ids live here: identity is a storage concern. Formats plan with these values and
nothing else; the runner turns plans into completed turns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

from app.providers.base import Message

__all__ = [
    "MODEL_NAME_RULE",
    "SEEDS",
    "TOPIC_TYPES",
    "CompletedTurn",
    "ContextFile",
    "DebateSpec",
    "Message",
    "Outcome",
    "Seat",
    "TurnPlan",
    "check_model_name",
]

TopicType = Literal["general", "plan", "bug", "tech"]
SeedTool = Literal["find_bug", "plan", "audit"]

TOPIC_TYPES: tuple[TopicType, ...] = ("general", "plan", "bug", "tech")
SEEDS: tuple[SeedTool, ...] = ("find_bug", "plan", "audit")


MODEL_NAME_RULE = "letters, digits and . _ : / @ + -, not starting with -"
_MODEL_NAME = re.compile(r"[A-Za-z0-9._:/@+-]+")


def check_model_name(name: str) -> str:
    """``name`` if it is a model name, else ``ValueError`` saying what is wrong with it.

    Every provider's model names fit the rule (``gpt-5``, ``llama3.1:8b``,
    ``meta-llama/Llama-3.1-8B``, ``claude-3-5-sonnet@20240620``). A name never starts with
    ``-``: the CLI providers pass it on a command line, where it would read as an option.
    """
    if any(char.isspace() or not char.isprintable() for char in name):
        raise ValueError("a model name has no spaces or control characters")
    if name.startswith("-"):
        raise ValueError(
            f"a model name cannot start with '-' ({name!r} would read as a command-line option)"
        )
    if not _MODEL_NAME.fullmatch(name):
        raise ValueError(f"a model name has only {MODEL_NAME_RULE}")
    return name


@dataclass(frozen=True)
class Seat:
    """A role in a debate and who fills it.

    ``role`` is the format's name for the role (``claude``, ``gemini``, ``pro_codex``,
    ``judge`` …); ``label`` is what people read ("Claude", "Pro · Codex"); ``provider`` and
    ``model`` say which model actually sits there (``model`` None = the provider's default).
    """

    role: str
    label: str
    provider: str
    model: str | None = None


@dataclass(frozen=True)
class ContextFile:
    """A context file as the debaters see it: already cut to its first lines."""

    path: str
    text: str
    total_lines: int
    truncated: bool


@dataclass(frozen=True)
class DebateSpec:
    topic: str
    format: str = "duel"  # a registered format's name (``app.formats``)
    topic_type: TopicType = "general"
    rounds: int = 4
    seats: tuple[Seat, ...] = ()
    context: tuple[ContextFile, ...] = ()
    skipped_paths: tuple[str, ...] = ()
    seed: SeedTool | None = None
    history: bool = False
    # Questions asked after the debate ended, in the order asked; the format plans their
    # answers once the debate itself is done. Saved beside the spec, not in it.
    followups: tuple[str, ...] = ()
    # What the debate may spend, in US dollars (``app.pricing``); None: no limit. The runner
    # keeps to it; formats never read it.
    budget_usd: Decimal | None = None
    # Controls for a judge's bias, for a format whose judge scores the sides (the panel;
    # the duel's synthesizer gives no scores, so it ignores both). ``blind_judge``: the judge
    # sees the sides and debaters by neutral names only; ``swap_judge``: it judges a second
    # time with the sides shown in the other order.
    blind_judge: bool = False
    swap_judge: bool = False

    def seat(self, role: str) -> Seat:
        for seat in self.seats:
            if seat.role == role:
                return seat
        raise KeyError(f"no seat for role {role!r}")


@dataclass(frozen=True)
class TurnPlan:
    """One model call a format wants made.

    ``key`` is unique within a debate and stable across re-planning (``r2.rebuttal.claude``),
    which is how a resumed debate knows a turn is already done.
    """

    key: str
    role: str
    phase: str
    round: int
    system: str
    messages: tuple[Message, ...]


@dataclass(frozen=True)
class CompletedTurn:
    """A turn that finished with text. ``verdict`` is the format's parse of that text
    (convergence, grades) or None when the phase has none."""

    key: str
    role: str
    phase: str
    round: int
    text: str
    verdict: dict[str, Any] | None = field(default=None, hash=False, compare=False)


@dataclass(frozen=True)
class Outcome:
    """What a finished debate concluded, as the format reads its turns."""

    rounds_run: int
    converged: bool | None
    synthesis: str
