"""Colour in the terminal: when it is wanted, and the few ways ``argue`` uses it.

Colour goes only to a terminal that can show it: not into a pipe or a file (whatever reads
them wants the text alone), not to ``TERM=dumb``, and not when ``NO_COLOR`` is set to
anything non-empty (https://no-color.org). A ``Style`` without colour returns text as given,
so callers style unconditionally and plain output stays exactly the text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TextIO

RESET = "\x1b[0m"
BOLD = "1"
DIM = "2"
RED = "31"
YELLOW = "33"
# Seats are told apart by colour in the order they first speak.
SEAT_COLOURS = ("36", "35", "32", "34", "33", "96", "95", "92")


def colour_wanted(stream: TextIO, environ: Mapping[str, str]) -> bool:
    """Whether ``stream`` is a terminal that should get colour."""
    if environ.get("NO_COLOR") or environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except ValueError:  # a closed stream
        return False


@dataclass(frozen=True)
class Style:
    colour: bool = False

    def paint(self, text: str, *codes: str) -> str:
        if not self.colour or not text:
            return text
        return f"\x1b[{';'.join(codes)}m{text}{RESET}"

    def bold(self, text: str) -> str:
        return self.paint(text, BOLD)

    def dim(self, text: str) -> str:
        return self.paint(text, DIM)

    def error(self, text: str) -> str:
        return self.paint(text, RED)

    def warning(self, text: str) -> str:
        return self.paint(text, YELLOW)

    def seat(self, text: str, index: int) -> str:
        return self.paint(text, BOLD, SEAT_COLOURS[index % len(SEAT_COLOURS)])


PLAIN = Style()
