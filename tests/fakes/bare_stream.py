"""A bare HTTP server that answers every request with a 200 event stream of given pieces,
each its own HTTP chunk written and drained apart: for bytes the wire-level fake does not
send (odd cuts, each line end, error shapes) to the adapters that read the SSE body
themselves."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager

# The three line ends server-sent events may use.
ENDINGS = {"LF": "\n", "CRLF": "\r\n", "CR": "\r"}


def cut_oddly(data: bytes, sizes: Iterator[int]) -> list[bytes]:
    pieces, at = [], 0
    while at < len(data):
        size = next(sizes)
        pieces.append(data[at : at + size])
        at += size
    return pieces


def odd_sizes() -> Iterator[int]:
    while True:
        yield from (1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 7)


@asynccontextmanager
async def bare_server(
    pieces: Sequence[bytes], headers: Sequence[str] = (), *, hold_open: float = 0.0
) -> AsyncIterator[str]:
    """Serves ``pieces`` (with ``headers`` added to the response's); yields the base URL.
    With ``hold_open`` the body is ended only that many seconds after the last piece, or when
    the client goes, whichever comes first."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.decode("latin-1").split("\r\n"):
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            await reader.readexactly(length)
            start = [
                "HTTP/1.1 200 OK",
                "content-type: text/event-stream",
                "transfer-encoding: chunked",
                "connection: close",
                *headers,
            ]
            writer.write(("\r\n".join(start) + "\r\n\r\n").encode())
            for piece in pieces:
                writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                await writer.drain()
                await asyncio.sleep(0.001)
            if hold_open:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(reader.read(), hold_open)  # b"" once the client goes
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        except ConnectionError:
            pass  # the client went first
        finally:
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
        await server.wait_closed()
