"""Showing a debate's hub events in a terminal as they happen.

One turn running alone streams inline: a header (seat, provider:model, phase, round), then its
text as it arrives, then its tokens, latency and verdict. Turns that run together (the duel's
openings, the panel's claims) would interleave if streamed, so while a batch runs the view
keeps one progress line ("openings: Claude 120 tok ✓ · Gemini 80 tok …") and prints each
turn's whole text when it completes. On a terminal the progress line is redrawn in place; in a
pipe or a file it is written only when it changes meaningfully (a turn completes), so logs stay
readable.

Given a colour ``Style`` (a terminal that wants colour, ``app.cli.style``), seat labels get
their colours, headings are bold, failures red and retries yellow, and a status line at the
bottom says where the debate is: round, phase, tokens so far and time taken. It is drawn only
at the start of a line and wiped before anything else is written, so it never mixes with text.

The view only writes: it never reads the database or decides anything about the debate.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

from app.cli.style import PLAIN, Style
from app.event_types import (
    BatchData,
    BatchEvent,
    DeltaData,
    DeltaEvent,
    EndData,
    EndEvent,
    RetryingData,
    RetryingEvent,
    TurnCompletedData,
    TurnCompletedEvent,
    TurnFailedData,
    TurnFailedEvent,
    TurnStartedData,
    TurnStartedEvent,
    UsageData,
    UsageEvent,
    typed,
)
from app.providers.base import estimate_tokens

PHASE_PLURALS = {
    "seed": "seed analysis",
    "opening": "openings",
    "rebuttal": "rebuttals",
    "response": "responses",
    "convergence": "convergence checks",
    "claim": "claims",
    "summary": "summaries",
    "judgement": "judgements",
    "answer": "answers",
    "update": "updated answers",
}

# An error kind in words, for when the event carries no HTTP status.
ERROR_KIND_WORDS = {
    "rate_limit": "a rate limit",
    "overloaded": "an overload",
    "timeout": "a timeout",
    "server": "a server error",
    "connection": "a connection error",
}


@dataclass
class _Live:
    info: TurnStartedData
    parts: list[str] = field(default_factory=list)
    state: str = "running"  # running | done | failed
    output_tokens: int | None = None

    @property
    def key(self) -> str:
        return self.info["key"]

    @property
    def text(self) -> str:
        return "".join(self.parts)

    @property
    def tokens(self) -> int:
        if self.output_tokens is not None:
            return self.output_tokens
        return estimate_tokens(self.text)


def turn_header(info: Mapping[str, Any], style: Style = PLAIN, seat_index: int = 0) -> str:
    """``── Claude · anthropic:claude-sonnet-4-5 · opening · round 1 ──`` (a started turn's
    event data, or a saved turn's fields: ``app.cli.browse``)."""
    model = info.get("model")
    who = f"{info.get('provider')}:{model}" if model else str(info.get("provider"))
    label = style.seat(str(info.get("label")), seat_index)
    where = style.bold(f"{info.get('phase')} · round {info.get('round')}")
    return f"── {label} · {who} · {where} ──"


def turn_stats(input_tokens: Any, output_tokens: Any, latency_ms: Any) -> str:
    seconds = (latency_ms or 0) / 1000
    return f"[{input_tokens or 0} in / {output_tokens or 0} out tokens · {seconds:.1f}s]"


def verdict_lines(verdict: dict[str, Any] | None) -> list[str]:
    """A verdict in words: a convergence check's answer and reason, or a judge's grades."""
    if not verdict:
        return []
    if "converged" in verdict:
        answer = {True: "converged", False: "not converged"}.get(verdict["converged"], "unclear")
        reason = one_line(str(verdict.get("reason") or ""), 240)
        return [f"verdict: {answer}" + (f" — {reason}" if reason else "")]
    if "criteria" in verdict:
        return _judgement_lines(verdict)
    return [f"verdict: {verdict}"]


def _judgement_lines(verdict: dict[str, Any]) -> list[str]:
    overall = verdict.get("overall") or {}
    lines = [
        "scores: "
        f"Pro {_grade(overall.get('pro_grade'))} ({_score(overall.get('pro_score'))}) · "
        f"Con {_grade(overall.get('con_grade'))} ({_score(overall.get('con_score'))})"
    ]
    for row in verdict.get("criteria") or []:
        lines.append(
            f"  {row.get('name')}: Pro {_grade(row.get('pro_grade'))} · "
            f"Con {_grade(row.get('con_grade'))}"
        )
    return lines


def _grade(value: Any) -> str:
    return str(value) if value else "?"


def _score(value: Any) -> str:
    return f"{value:g}/10" if isinstance(value, int | float) else "?/10"


def one_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def retry_line(data: RetryingData) -> str:
    """``retrying after 429: Rate limit exceeded in 2.0s (attempt 2)``"""
    kind = data["error_kind"]
    cause = data.get("error_status") or ERROR_KIND_WORDS.get(kind, kind or "an error")
    message = one_line(data["error_message"], 200)
    return f"retrying after {cause}: {message} in {data['delay']:.1f}s (attempt {data['attempt']})"


class TerminalView:
    """Renders hub events to ``out``. ``live`` (default: ``out`` is a terminal) redraws the
    batch progress line in place. A colour ``style`` adds colour and the status line, which
    ``tick`` redraws so its clock moves; ``clock`` is what it measures time with."""

    def __init__(
        self,
        out: TextIO,
        *,
        live: bool | None = None,
        style: Style = PLAIN,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.out = out
        self.style = style
        # The status line is colour's companion: both are for a person at a terminal.
        self.status_line = style.colour
        self.live = self.status_line or (out.isatty() if live is None else live)
        self._clock = clock
        self._started_at = clock()
        self._seats: dict[str, int] = {}
        self._where: TurnStartedData | None = None
        self.end: EndData | None = None
        self.usage: UsageData | None = None
        self._batch_keys: set[str] = set()
        self._batch: dict[str, _Live] = {}
        self._inline: _Live | None = None  # the turn streaming inline
        self._line_open = False  # the cursor is not at the start of a line
        self._progress_drawn = False

    # -- public ------------------------------------------------------------------------

    def handle(self, type: str, data: Mapping[str, Any]) -> None:
        match typed(type, data):
            case BatchEvent(data=batch):
                self._on_batch(batch)
            case TurnStartedEvent(data=started):
                self._on_turn_started(started)
            case DeltaEvent(data=delta):
                self._on_delta(delta)
            case RetryingEvent(data=retry):
                self._on_retrying(retry)
            case TurnCompletedEvent(data=completed):
                self._on_turn_completed(completed)
            case TurnFailedEvent(data=failed):
                self._on_turn_failed(failed)
            case UsageEvent(data=usage):
                self.usage = usage
            case EndEvent(data=end):
                self._on_end(end)
        self._draw_status()
        self.out.flush()

    def tick(self) -> None:
        """Redraw the status line, so its clock moves while nothing else happens."""
        self._draw_status()
        self.out.flush()

    def note(self, text: str) -> None:
        """A line from the command itself (e.g. "cancelling…"), between whatever is shown."""
        self._clear_progress()
        self._end_line()
        self._write(f"{text}\n")
        self._redraw_progress()
        self._draw_status()
        self.out.flush()

    # -- events --------------------------------------------------------------------------

    def _on_batch(self, data: BatchData) -> None:
        self._batch_keys = set(data["keys"])
        self._batch = {}

    def _on_turn_started(self, data: TurnStartedData) -> None:
        key = data["key"]
        self._where = data
        # Colours follow the order seats are planned in, not the order they finish.
        self._seats.setdefault(self._seat_of(data), len(self._seats))
        if key in self._batch_keys:
            self._batch[key] = _Live(info=data)
            self._redraw_progress(force=True)
            return
        self._clear_progress()
        self._end_line()
        self._write(f"\n{self._header(data)}\n")
        self._inline = _Live(info=data)

    def _is_inline(self, key: str) -> bool:
        return self._inline is not None and self._inline.key == key

    def _on_delta(self, data: DeltaData) -> None:
        key, text = data["key"], data.get("text", "")
        if self._inline is not None and self._inline.key == key:
            self._write(text)
            self._inline.parts.append(text)
            self._line_open = not text.endswith("\n")
        elif key in self._batch:
            self._batch[key].parts.append(text)
            if self.live:
                self._redraw_progress()

    def _on_retrying(self, data: RetryingData) -> None:
        key = data["key"]
        self._clear_progress()
        self._end_line()
        if self._inline is not None and self._inline.key == key:
            self._inline.parts.clear()
            self._write(
                self.style.warning(f"  ↻ {retry_line(data)} — the text above is void") + "\n"
            )
        else:
            live = self._batch.get(key)
            if live is not None:
                live.parts.clear()
            label = live.info["label"] if live else key
            self._write(self.style.warning(f"  ↻ {label}: {retry_line(data)}") + "\n")
        self._redraw_progress()

    def _on_turn_completed(self, data: TurnCompletedData) -> None:
        key = data["key"]
        stats = turn_stats(data["input_tokens"], data["output_tokens"], data["latency_ms"])
        lines = [stats, *verdict_lines(data["verdict"])]
        if self._is_inline(key):
            self._end_line()
            self._write("".join(f"  {line}\n" for line in lines))
            self._inline = None
            return
        live = self._batch.get(key)
        if live is None:
            return
        live.state, live.output_tokens = "done", data["output_tokens"]
        self._clear_progress()
        self._write(f"\n{self._header(data)}\n{live.text.rstrip()}\n")
        self._write("".join(f"  {line}\n" for line in lines))
        self._after_batch_turn()

    def _on_turn_failed(self, data: TurnFailedData) -> None:
        key = data["key"]
        kind = data["error_kind"]
        status = data["error_status"]
        cause = f"{kind} {status}" if status else kind
        message = f"  ✗ {data['label']} failed ({cause}): {data['error_message']}"
        message = self.style.error(message) + "\n"
        if self._is_inline(key):
            self._end_line()
            self._write(message)
            self._inline = None
            return
        live = self._batch.get(key)
        if live is None:
            return
        live.state = "failed"
        self._clear_progress()
        self._write(f"\n{self._header(data)}\n{message}")
        self._after_batch_turn()

    def _on_end(self, data: EndData) -> None:
        self._clear_progress()
        self._end_line()
        self.end = data

    def _header(self, info: TurnStartedData) -> str:
        seat_index = self._seats.setdefault(self._seat_of(info), len(self._seats))
        return turn_header(info, self.style, seat_index)

    @staticmethod
    def _seat_of(info: TurnStartedData) -> str:
        return str(info.get("role") or info.get("label"))

    # -- status line ---------------------------------------------------------------------

    def _status_text(self) -> str:
        """``round 2 · rebuttal · Claude · 344 tok · 1:05``; a batch shows its progress."""
        where = self._where
        if where is None:
            return ""
        if self._batch:
            doing = self._progress_text()
        elif self._inline is not None:
            doing = f"{where['phase']} · {where['label']}"
        else:
            doing = where["phase"]
        running = [live for live in self._batch.values() if live.state == "running"]
        if self._inline is not None:
            running.append(self._inline)
        saved = self.usage["input_tokens"] + self.usage["output_tokens"] if self.usage else 0
        tokens = saved + sum(live.tokens for live in running)
        minutes, seconds = divmod(int(self._clock() - self._started_at), 60)
        return f"round {where['round']} · {doing} · {tokens} tok · {minutes}:{seconds:02d}"

    def _draw_status(self) -> None:
        # Only at the start of a line: wiped later, it leaves no trace in the text.
        if not self.status_line or not self._where or self.end is not None or self._line_open:
            return
        width = max(20, shutil.get_terminal_size((100, 20)).columns - 1)
        self.out.write("\r\x1b[2K" + self.style.dim(one_line(self._status_text(), width)))
        self._progress_drawn = True

    # -- batch progress ------------------------------------------------------------------

    def _after_batch_turn(self) -> None:
        if len(self._batch) == len(self._batch_keys) and all(
            live.state != "running" for live in self._batch.values()
        ):
            if not self.live:
                self._write(self._progress_text() + "\n")
            self._batch_keys, self._batch = set(), {}
            return
        self._redraw_progress(force=True)

    def _progress_text(self) -> str:
        lives = list(self._batch.values())
        phase = lives[0].info["phase"] if lives else ""
        marks = {"running": "…", "done": "✓", "failed": "✗"}
        parts = [f"{live.info['label']} {live.tokens} tok {marks[live.state]}" for live in lives]
        return f"{PHASE_PLURALS.get(phase, phase)}: " + " · ".join(parts)

    def _redraw_progress(self, *, force: bool = False) -> None:
        if not self._batch or self.status_line:  # the status line shows the batch instead
            return
        if self.live:
            width = max(20, shutil.get_terminal_size((100, 20)).columns - 1)
            self._write("\r\x1b[2K" + one_line(self._progress_text(), width))
            self._progress_drawn = True
        elif force and any(live.state != "running" for live in self._batch.values()):
            self._write(self._progress_text() + "\n")

    def _clear_progress(self) -> None:
        if self._progress_drawn:
            self.out.write("\r\x1b[2K")
            self._progress_drawn = False

    # -- writing -------------------------------------------------------------------------

    def _end_line(self) -> None:
        if self._line_open:
            self._write("\n")
            self._line_open = False

    def _write(self, text: str) -> None:
        if self.status_line:
            self._clear_progress()
        self.out.write(text)
