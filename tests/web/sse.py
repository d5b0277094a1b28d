"""Reading server-sent events in tests: a parser for whole bodies and for live lines."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Message:
    event: str
    data: str
    id: str | None

    def json(self) -> Any:
        return json.loads(self.data)


def parse_lines(lines: Iterable[str]) -> Iterator[Message]:
    """Messages from the lines of an event stream; comments (pings) are skipped."""
    event, data, event_id = "message", [], None
    for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            if data or event != "message":
                yield Message(event, "\n".join(data), event_id)
            event, data, event_id = "message", [], None
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
        elif name == "id":
            event_id = value
    if data:
        yield Message(event, "\n".join(data), event_id)


def parse(body: str) -> list[Message]:
    return list(parse_lines(body.replace("\r\n", "\n").split("\n")))
