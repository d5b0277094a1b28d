"""What every provider's wire module shares: the parsed request and text extraction."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ParsedRequest:
    """A generation request, reduced to what the fake needs to pick and shape a reply."""

    provider: str
    model: str
    stream: bool
    system: str
    messages: tuple[tuple[str, str], ...]  # (role as sent on the wire, text)
    include_usage: bool

    @property
    def last_user_text(self) -> str:
        for role, text in reversed(self.messages):
            if role == "user":
                return text
        return ""

    @property
    def all_text(self) -> str:
        return "\n".join([self.system, *(text for _, text in self.messages)])


def block_text(content: Any) -> str:
    """Text of a message content: a plain string or a list of ``{"text": ...}`` blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        if "parts" in content:
            return block_text(content["parts"])
        return str(content.get("text", ""))
    if isinstance(content, list):
        return "".join(block_text(part) for part in content)
    return str(content)
