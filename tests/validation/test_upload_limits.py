"""An upload over the limits is cut off as it streams in: the server stops reading at the limit
(a file's, or the whole form's), never writes the upload to a temporary file, answers with the
form and its error beside the file field, and closes the connection instead of draining the
rest. A declared Content-Length over the limit is refused before any of the body is read."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from urllib.parse import urlencode

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from starlette.datastructures import Headers

from app.debates import MAX_CONTEXT_FILE_BYTES, MAX_CONTEXT_FILES
from app.web.uploads import MAX_FORM_BYTES, read_form
from tests.validation.test_form_input import assert_kept, error_beside, form_fields
from tests.web.conftest import LiveServer

BOUNDARY = "argue-upload-test"
CHUNK = 64 * 1024
HUGE = 128 * 1024 * 1024  # "hundreds of MB" in spirit; 30 times the whole form's limit


def open_temp_files() -> set[str]:
    """What this process holds open that is a temporary file: an unlinked file (how Python's
    ``TemporaryFile`` makes one) or a ``tmp…`` file in the temporary folder."""
    found: set[str] = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.endswith("(deleted)") or re.search(r"/tmp\w{8}$", target):
            found.add(f"{fd} -> {target}")
    return found


def part(name: str, value: str) -> bytes:
    return (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'
    ).encode()


def file_head(filename: str) -> bytes:
    return (
        f"--{BOUNDARY}\r\nContent-Disposition: form-data; "
        f'name="context"; filename="{filename}"\r\nContent-Type: text/plain\r\n\r\n'
    ).encode()


def fields_head() -> bytes:
    return b"".join(part(name, value) for name, value in form_fields().items())


@dataclass
class Body:
    """A multipart body made on demand, so a test can tell how much of it was read."""

    files: list[tuple[str, int]]  # (file name, size)
    pulled: int = 0
    temp_files_seen: set[str] = field(default_factory=set)

    def chunks(self) -> Iterator[bytes]:
        yield fields_head()
        for name, size in self.files:
            yield file_head(name)
            left = size
            while left > 0:
                # Anything the server spooled to disk is open by now: look while it reads.
                self.temp_files_seen |= open_temp_files()
                piece = min(CHUNK, left)
                left -= piece
                self.pulled += piece
                yield b"a" * piece
            yield b"\r\n"
        yield f"--{BOUNDARY}--\r\n".encode()

    async def stream(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks():
            yield chunk


CONTENT_TYPE = f"multipart/form-data; boundary={BOUNDARY}"


def post_streamed_form(
    app: FastAPI, body: AsyncIterator[bytes], content_type: str, **headers: str
) -> httpx.Response:
    """POST ``body`` to the form through the ASGI app itself, with no Content-Length unless
    one is given: its chunks are pulled only as the app reads them."""

    async def post() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            return await client.post(
                "/debates", content=body, headers={"content-type": content_type} | headers
            )

    return asyncio.run(post())


def post_streamed(app: FastAPI, body: Body, **headers: str) -> httpx.Response:
    return post_streamed_form(app, body.stream(), CONTENT_TYPE, **headers)


@pytest.fixture
def started_app(client: TestClient, app: FastAPI) -> FastAPI:
    """The app with its lifespan running (engine, hub, jobs), for a client of its own."""
    return app


def test_a_file_over_its_limit_stops_being_read_at_the_limit(started_app: FastAPI) -> None:
    before = open_temp_files()
    body = Body(files=[("huge.txt", HUGE)])

    response = post_streamed(started_app, body)

    assert response.status_code == 422
    assert error_beside(response.text, "context") == "huge.txt is larger than 200 kB."
    assert_kept(response.text)
    assert body.pulled <= MAX_CONTEXT_FILE_BYTES + 2 * CHUNK, body.pulled
    assert response.headers["connection"] == "close"
    assert body.temp_files_seen - before == set()
    assert open_temp_files() - before == set()


def test_many_files_stop_being_read_at_the_whole_forms_limit(started_app: FastAPI) -> None:
    before = open_temp_files()
    count = 60
    body = Body(files=[(f"part{i}.txt", MAX_CONTEXT_FILE_BYTES - 1000) for i in range(count)])

    response = post_streamed(started_app, body)

    assert response.status_code == 413
    chosen = re.fullmatch(
        rf"At most {MAX_CONTEXT_FILES} files; (\d+) or more were chosen\.",
        error_beside(response.text, "context"),
    )
    assert chosen and MAX_CONTEXT_FILES < int(chosen.group(1)) < count
    assert body.pulled <= MAX_FORM_BYTES + 2 * CHUNK, body.pulled
    assert body.pulled < count * (MAX_CONTEXT_FILE_BYTES - 1000) / 2
    assert response.headers["connection"] == "close"
    assert body.temp_files_seen - before == set()
    assert open_temp_files() - before == set()


def test_a_declared_length_over_the_limit_is_refused_before_reading(
    started_app: FastAPI,
) -> None:
    body = Body(files=[("huge.txt", HUGE)])

    response = post_streamed(started_app, body, **{"content-length": str(300_000_000)})

    assert response.status_code == 413
    assert error_beside(response.text, "context") == (
        "This form is 300 MB; a form may send at most 4 MB "
        f"(up to {MAX_CONTEXT_FILES} context files of 200 kB each)."
    )
    assert body.pulled == 0
    assert response.headers["connection"] == "close"


# -- a real server, a real socket --------------------------------------------------------------


@dataclass
class RawUpload:
    """An HTTP/1.1 upload written to a socket as fast as the server takes it, in a thread."""

    sock: socket.socket
    body: Body
    sent: int = 0
    stopped_by: str = ""

    def send(self, head: bytes, chunked: bool) -> None:
        try:
            self.sock.sendall(head)
            for chunk in self.body.chunks():
                data = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n" if chunked else chunk
                self.sock.sendall(data)
                self.sent += len(chunk)
            if chunked:
                self.sock.sendall(b"0\r\n\r\n")
            self.stopped_by = "end of body"
        except OSError as error:  # the server closed the connection under us: expected
            self.stopped_by = type(error).__name__


def read_response(sock: socket.socket, timeout: float) -> bytes:
    """Everything the server sends until it closes the connection (or resets it)."""
    sock.settimeout(timeout)
    received = b""
    try:
        while data := sock.recv(65536):
            received += data
    except ConnectionResetError:
        pass
    except TimeoutError:  # the server neither answered in full nor hung up
        pass
    return received


def upload(live: LiveServer, body: Body, *, declared: int | None = None) -> tuple[bytes, RawUpload]:
    host, port = live.url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)))
    length = f"Content-Length: {declared}" if declared else "Transfer-Encoding: chunked"
    head = (
        f"POST /debates HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n{length}\r\n\r\n"
    ).encode()
    raw = RawUpload(sock, body)
    sender = threading.Thread(target=raw.send, args=(head, declared is None), daemon=True)
    sender.start()
    try:
        response = read_response(sock, timeout=20)
        sender.join(timeout=20)
    finally:
        sock.close()
    return response, raw


def test_a_real_server_stops_reading_an_oversized_upload_and_hangs_up(
    live_server: LiveServer,
) -> None:
    before = open_temp_files()
    body = Body(files=[("huge.txt", HUGE)])
    started = time.monotonic()

    response, raw = upload(live_server, body)

    assert response.startswith(b"HTTP/1.1 422 "), response[:200]
    assert b"huge.txt is larger than 200 kB." in response
    assert b"connection: close" in response.lower()
    # The server took the limit and what the kernel's socket buffers hold, not the 128 MB.
    assert raw.sent < 32 * 1024 * 1024, raw.sent
    assert raw.stopped_by != "end of body"
    assert time.monotonic() - started < 15
    assert body.temp_files_seen - before == set()
    assert open_temp_files() - before == set()


def test_a_real_server_refuses_a_declared_oversized_upload_without_waiting_for_it(
    live_server: LiveServer,
) -> None:
    body = Body(files=[])  # nothing is sent past the head: the answer cannot wait for it
    host, port = live_server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(
            (
                f"POST /debates HTTP/1.1\r\nHost: {host}:{port}\r\n"
                f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
                "Content-Length: 300000000\r\n\r\n"
            ).encode()
        )
        response = read_response(sock, timeout=5)

    assert response.startswith(b"HTTP/1.1 413 "), response[:200]
    assert b"This form is 300 MB" in response
    assert body.pulled == 0


# -- reading in pieces -------------------------------------------------------------------------

TYPED = "Café + naïve 100% ✓ & more"


async def in_pieces(data: bytes, size: int) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


@pytest.mark.parametrize("size", [1, 2, 3, 7])
@pytest.mark.parametrize("encoding", ["urlencoded", "multipart"])
def test_a_form_arriving_in_tiny_pieces_keeps_every_character(encoding: str, size: int) -> None:
    # Escapes (%C3%A9) and UTF-8 sequences cut between pieces are put back together.
    if encoding == "urlencoded":
        data = urlencode({"topic": TYPED, "rounds": "2"}).encode()
        content_type = "application/x-www-form-urlencoded"
    else:
        data = part("topic", TYPED) + part("rounds", "2") + f"--{BOUNDARY}--\r\n".encode()
        content_type = CONTENT_TYPE
    headers = Headers({"content-type": content_type})

    form = asyncio.run(read_form(headers, in_pieces(data, size)))

    assert form.text("topic") == TYPED
    assert form.text("rounds") == "2"
    assert form.fields["topic"].chars == len(TYPED)
    assert form.complete and not form.errors
