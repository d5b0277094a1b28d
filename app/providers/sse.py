"""Server-sent events read from a raw response body, for the adapters that read their SDK's
stream themselves (``anthropic``, ``openai``): the SDKs decode every event into typed objects,
which costs far more CPU than the few fields an adapter reads.

Owns the splitting of a body, read in pieces cut anywhere, into ``(event, data)`` pairs, as
the SDKs' own decoders split it.
"""

from __future__ import annotations

from collections.abc import Iterator


class SseParser:
    """Server-sent events from a body read in pieces cut anywhere: ``feed`` each piece and
    iterate the ``(event, data)`` of the events it completes. Lines end in LF, CRLF or CR
    (a CRLF may be cut between its two bytes); one space after a field's colon is dropped;
    ``data`` lines join with LF; a line starting with a colon, and ``id``, ``retry`` and
    unknown fields, are ignored; an event is dispatched at a blank line if it has an event
    name or data (an empty name is ``None``). An event not ended by a blank line when the body
    ends is never dispatched. As the SDK's decoder, lines are decoded as strict UTF-8."""

    __slots__ = ("_after_cr", "_data", "_event", "_rest")

    def __init__(self) -> None:
        self._rest = b""  # the start of a line not ended yet
        self._after_cr = False  # the last piece ended in CR: an LF starting the next ends nothing
        self._event: str | None = None
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> Iterator[tuple[str | None, str]]:
        if self._after_cr and chunk:
            self._after_cr = False
            if chunk[0] == 10:  # LF
                chunk = chunk[1:]
        buffer = self._rest + chunk if self._rest else chunk
        end = max(buffer.rfind(b"\n"), buffer.rfind(b"\r")) + 1
        if not end:
            self._rest = buffer
            return
        self._rest = buffer[end:]
        self._after_cr = buffer[end - 1] == 13  # CR
        # Line ends are ASCII bytes, so no UTF-8 character is cut; bytes split only on them.
        for raw in buffer[:end].splitlines():
            if not raw:
                if self._event is not None or self._data:
                    data = self._data
                    event, self._event, self._data = self._event, None, []
                    yield event, data[0] if len(data) == 1 else "\n".join(data)
                continue
            name, _, value = raw.decode().partition(":")
            if value[:1] == " ":
                value = value[1:]
            if name == "data":
                self._data.append(value)
            elif name == "event":
                self._event = value or None
