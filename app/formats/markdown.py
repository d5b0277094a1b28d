"""Markdown pieces every format's reports share: a turn as a titled message, a person's
question as a quote, reading order, and a model's own headings kept below the heading that
holds its text. Pure: values in, text out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from app.commonmark import commonmark
from app.endings import ended_early_note

if TYPE_CHECKING:
    from markdown_it.token import Token

    from app.models import Debate, Turn

__all__ = [
    "model_of",
    "nest_headings",
    "one_line",
    "quoted",
    "reading_order",
    "seat_name",
    "turn_message",
    "workspace_name",
]


def workspace_name(debate: Debate) -> str:
    """``debate_YYYYMMDD_HHMMSS_<id>``: like the seed, named by when the debate began (Phase 0
    creates the workspace), and by the debate's id, so two panels begun in the same second
    never share a folder and re-exporting a debate names the same workspace."""
    return f"debate_{debate.created_at:%Y%m%d_%H%M%S}_{debate.id}"


def quoted(text: str) -> str:
    """A person's question as a Markdown quote: shown as written, never read as headings."""
    return "\n".join(f"> {line}".rstrip() for line in text.strip().splitlines() or [""])


def turn_message(turn: Turn) -> str:
    heading = f"### Round {turn.round} · {turn.phase} · {one_line(seat_name(turn))}"
    heading += f" ({model_of(turn.provider, turn.model)})"
    if turn.status == "completed":
        body = f"{heading}\n\n{nest_headings(turn.text.strip(), under=3)}"
        note = ended_early_note(turn.ended_early, output_tokens=turn.output_tokens)
        return f"{body}\n\n_({note})_" if note else body
    reason = turn.error_message or turn.error_kind or "no reply"
    return f"{heading}\n\n_(this turn failed: {one_line(reason)})_"


def seat_name(turn: Turn) -> str:
    return turn.label or turn.role.replace("_", " ").title()


def model_of(provider: str, model: str | None) -> str:
    return f"{provider}:{model}" if model else f"{provider} (its default model)"


def reading_order(
    turns: Iterable[Turn],
    phases: Sequence[str],
    roles: Sequence[str],
    *,
    by_round: bool = False,
) -> list[Turn]:
    """Turns in reading order. Turns of one step run in parallel and complete in any order,
    so completion order (``seq``) only breaks ties after round, phase and seat."""

    def rank(values: Sequence[str], value: str) -> int:
        return values.index(value) if value in values else len(values)

    def key(turn: Turn) -> tuple[int, int, int, int]:
        round_key = turn.round if by_round else 0
        return (round_key, rank(phases, turn.phase), rank(roles, turn.role), turn.seq or 0)

    return sorted(turns, key=key)


# What may stand before a heading's ``#`` marks on its line: indentation, and inside a quote
# or a list item, the ``>`` and list markers that hold it.
_CONTAINER_PREFIX = r"(?:[ \t]*(?:>[ \t]?|(?:[-*+]|\d{1,9}[.)])[ \t]+))*[ \t]*"
_ATX_MARKS = re.compile(rf"^({_CONTAINER_PREFIX})#{{1,6}}(?=[ \t]|$)")
_CONTAINER = re.compile(_CONTAINER_PREFIX)
_SETEXT_MARKUP = frozenset({"=", "-"})
_DEEPEST_HEADING = 6


def nest_headings(text: str, *, under: int) -> str:
    """Shift a model's own headings below the heading (level ``under``) that holds its text,
    keeping their relative levels and stopping at level 6, so a reply's "## Core Claims" does
    not read as a section of the document around it. Code blocks are left alone; underlined
    headings become ``#`` headings, since underlines only make levels 1 and 2."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    tokens = commonmark().parse("\n".join(lines))
    headings = [
        (token, tokens[index + 1].content)
        for index, token in enumerate(tokens)
        if token.type == "heading_open" and token.map is not None
    ]
    if not headings:
        return text
    shift = max(0, under + 1 - min(_level(token) for token, _ in headings))
    if shift == 0:
        return text
    # From the last heading up: rewriting an underlined heading removes lines below it.
    for token, content in reversed(headings):
        start, end = token.map or (0, 0)
        marks = "#" * min(_level(token) + shift, _DEEPEST_HEADING)
        if token.markup in _SETEXT_MARKUP:
            lines[start:end] = [_setext_as_atx(lines[start], content, marks)]
        else:
            lines[start] = _ATX_MARKS.sub(rf"\g<1>{marks}", lines[start], count=1)
    return "\n".join(lines)


def _level(heading: Token) -> int:
    return int(heading.tag.removeprefix("h"))


def _setext_as_atx(first_line: str, content: str, marks: str) -> str:
    """An underlined heading as one ``#`` line, kept inside the quote or list that held it.
    A trailing ``#`` is escaped so it is not read as the closing marks."""
    prefix = match.group(0) if (match := _CONTAINER.match(first_line)) else ""
    title = " ".join(content.split("\n"))
    if title.endswith("#"):
        title = title[:-1] + "\\#"
    return f"{prefix}{marks} {title}"


def one_line(text: str) -> str:
    return " ".join(text.split())
