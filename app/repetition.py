"""Spotting a reply that has fallen into a loop while it streams.

Small models often repeat one phrase, or one line, until they reach their output cap. A
``RepetitionWatch`` is fed the text as it arrives and reports the moment the end of the text
is a runaway repetition, with how much of the text to keep: everything up to and including
the repeated phrase's second occurrence. It looks only at the last few thousand characters,
and only every few dozen characters, so watching costs little however long the reply. A
phrase loop is looked for without trying every period: any loop long enough to count makes
the text's last few hundred characters recur exactly one period earlier, so ``str.rfind``
finds the few periods worth checking, shortest first.

Tuned to leave ordinary prose, lists and tables alone: a phrase counts only when it comes
back to back at least four times over several hundred characters, and a line only when six
lines in a row say the same words (list markers aside).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MIN_PHRASE_CHARS = 8
MAX_PHRASE_CHARS = 200
PHRASE_REPEATS = 4
MIN_LOOP_CHARS = 480
LINE_REPEATS = 6
KEPT_REPEATS = 2
CHECK_EVERY_CHARS = 64
TAIL_CHARS = 4096

# The fewest characters at the end of a text that a phrase loop of any period repeats one
# period earlier: the loop's span less one period.
_LOOP_SUFFIX_CHARS = min(
    max(MIN_LOOP_CHARS, PHRASE_REPEATS * period) - period
    for period in range(MIN_PHRASE_CHARS, MAX_PHRASE_CHARS + 1)
)
_LIST_MARKER = re.compile(r"^(?:[-*+>#]+|\(?\d+[.):])\s*")
_LETTER = re.compile(r"[^\W\d_]")


@dataclass(frozen=True)
class Runaway:
    """A loop found at the end of a text: the phrase (or line) repeated, and how many of the
    text's characters to keep."""

    phrase: str
    keep: int


def find_runaway(text: str) -> Runaway | None:
    """The loop the end of ``text`` is stuck in, if any."""
    return find_phrase_loop(text) or find_line_loop(text)


def find_phrase_loop(text: str) -> Runaway | None:
    """The shortest phrase of 8–200 characters that the end of ``text`` repeats back to back
    at least four times and over at least ``MIN_LOOP_CHARS`` characters."""
    end = len(text)
    if end < MIN_LOOP_CHARS:
        return None
    # Periods whose loop would need more than the whole text cannot count.
    longest = min(MAX_PHRASE_CHARS, end // PHRASE_REPEATS)
    # A loop of any period repeats at least the last ``_LOOP_SUFFIX_CHARS`` characters one
    # period earlier, so only periods where they recur are checked, shortest first.
    suffix = text[end - _LOOP_SUFFIX_CHARS :]
    lowest = max(0, end - _LOOP_SUFFIX_CHARS - longest)
    at = text.rfind(suffix, lowest, end - MIN_PHRASE_CHARS)
    while at >= 0:
        period = end - _LOOP_SUFFIX_CHARS - at
        span = max(MIN_LOOP_CHARS, PHRASE_REPEATS * period)
        if text[end - span + period :] == text[end - span : end - period]:
            if len(set(text[end - period : end])) < 2:
                # One character over and over is a long word or a rule line, not a phrase.
                return None
            start = _loop_start(text, end - span, period)
            return Runaway(phrase=text[start : start + period], keep=start + KEPT_REPEATS * period)
        at = text.rfind(suffix, lowest, at + _LOOP_SUFFIX_CHARS - 1)
    return None


def _loop_start(text: str, start: int, period: int) -> int:
    """Where the repetition that reaches ``start`` began: walk back while it still holds, a
    whole period at a time, then character by character."""
    while start >= period and text[start - period : start] == text[start : start + period]:
        start -= period
    while start > 0 and text[start - 1] == text[start - 1 + period]:
        start -= 1
    return start


def find_line_loop(text: str) -> Runaway | None:
    """The line that the last ``LINE_REPEATS`` complete, non-blank lines of ``text`` all say
    (list markers and numbers in front aside), if it has words in it."""
    lines = _complete_lines(text)
    last = lines[-LINE_REPEATS:]
    if len(last) < LINE_REPEATS:
        return None
    said = last[0][0]
    if any(words != said for words, _ in last) or not _is_wordy(said):
        return None
    first = len(lines) - LINE_REPEATS
    while first > 0 and lines[first - 1][0] == said:
        first -= 1
    return Runaway(phrase=said, keep=lines[first + KEPT_REPEATS - 1][1])


def _complete_lines(text: str) -> list[tuple[str, int]]:
    """Each non-blank line that has ended, as (its words, where it ends in ``text``)."""
    lines: list[tuple[str, int]] = []
    position = 0
    for line in text.splitlines(keepends=True):
        position += len(line)
        if not line.endswith(("\n", "\r")):
            break  # still being written
        words = _LIST_MARKER.sub("", line.strip())
        if words:
            lines.append((words, position - len(line) + len(line.rstrip("\r\n"))))
    return lines


def _is_wordy(line: str) -> bool:
    return len(line) >= MIN_PHRASE_CHARS and _LETTER.search(line) is not None


class RepetitionWatch:
    """Fed a reply's text as it streams; says when it has become a runaway repetition."""

    def __init__(self) -> None:
        self._tail = ""
        self._dropped = 0  # characters before the tail
        self._pending: list[str] = []
        self._pending_chars = 0

    def feed(self, text: str) -> Runaway | None:
        """Add the next piece of the reply; the loop it now ends in, if any, with ``keep``
        counted from the start of everything fed."""
        self._pending.append(text)
        self._pending_chars += len(text)
        if self._pending_chars < CHECK_EVERY_CHARS:
            return None
        tail = self._tail + "".join(self._pending)
        self._pending.clear()
        self._pending_chars = 0
        if len(tail) > TAIL_CHARS:
            self._dropped += len(tail) - TAIL_CHARS
            tail = tail[-TAIL_CHARS:]
        self._tail = tail
        found = find_runaway(tail)
        if found is None:
            return None
        return Runaway(phrase=found.phrase, keep=self._dropped + found.keep)
