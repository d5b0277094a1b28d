"""The response both live streams are sent as: sse-starlette's, with each write made
directly when no send timeout is set.

sse-starlette wraps every write of a stream in an anyio cancel scope for its send timeout,
even when there is none. A live stream writes to each viewer once per window of live text,
so under load that scope is a real share of the web process: measured with the latency
benchmark (``python -m bench --only latency``), about 5 % of the web process's CPU. With no
timeout the scope can never cancel anything, so writing directly changes nothing else; with a
timeout, the library's own wrapping runs as before. Nothing else of the library is changed.
"""

from __future__ import annotations

from sse_starlette import EventSourceResponse
from starlette.types import Message, Send

__all__ = ["LiveEventResponse"]


class LiveEventResponse(EventSourceResponse):
    async def _send_with_timeout(self, send: Send, message: Message) -> None:
        if self.send_timeout is None:
            await send(message)
        else:
            await super()._send_with_timeout(send, message)
