"""A fake LLM server on 127.0.0.1 speaking the Anthropic, OpenAI and Gemini wire protocols.

It owns scripting (what the next call replies, or which fault it meets), recording (every
request with its body, headers and start/end times) and the HTTP plumbing. The byte shapes of
each provider live in ``*_wire.py`` beside it.

Use it in-process::

    with FakeLLMServer() as server:
        server.script(provider="openai", reply="Hello there", fault="http_429", retry_after=2)
        ... point an SDK at server.openai_base_url ...
        assert server.requests[0].body["model"] == "gpt-5"

or as a process: ``python -m tests.fakes.llm_server --port 8765`` serves default replies and
accepts scripts over HTTP (``POST /_fake/script``, ``POST /_fake/rule``, ``POST /_fake/reset``,
``GET /_fake/requests``) with the same fields as :meth:`FakeLLMServer.script`.

Faults: ``http_<status>`` (``http_401``, ``http_429`` with ``retry_after``, ``http_500``,
``http_529`` …), ``mid_stream_error``, ``stall``, ``malformed_chunk``, ``unexpected_event`` (well
formed, of a shape a client may not expect) and ``disconnect`` (each after ``fault_after``
tokens). For "connection refused" use :func:`closed_port_url`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import asdict, dataclass, replace
from types import ModuleType
from typing import Any
from urllib.parse import parse_qs

import uvicorn

from tests.fakes import anthropic_wire, gemini_wire, openai_wire
from tests.fakes.wire import ParsedRequest

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

PROVIDERS = ("anthropic", "openai", "gemini")
WIRES: dict[str, ModuleType] = {
    "anthropic": anthropic_wire,
    "openai": openai_wire,
    "gemini": gemini_wire,
}
STREAM_FAULTS = frozenset(
    {"mid_stream_error", "stall", "malformed_chunk", "unexpected_event", "disconnect"}
)
# The error each provider really sends in the middle of a stream when nothing else is said.
MID_STREAM_STATUS = {"anthropic": 529, "openai": 500, "gemini": 503}
DEFAULT_MESSAGES = {
    400: "Invalid request: messages: field required",
    401: "invalid x-api-key",
    403: "Permission denied",
    404: "model: not found",
    429: "Rate limit exceeded, please slow down",
    500: "Internal server error",
    503: "The service is currently unavailable",
    529: "Overloaded",
}
_GEMINI_PATH = re.compile(
    r"^/(v1|v1beta|v1alpha)/models/([^/:]+):(streamGenerateContent|generateContent)$"
)


@dataclass(frozen=True)
class Reply:
    """One scripted answer: its text, its pace, and optionally a fault."""

    text: str
    tokens: tuple[str, ...]
    token_delay: float = 0.0
    first_token_delay: float = 0.0
    fault: str | None = None
    fault_after: int = 0
    retry_after: float | None = None
    error_status: int | None = None
    error_message: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    usage: bool = True
    stop_reason: str | None = None


@dataclass(frozen=True)
class Rule:
    """Reply with ``reply`` to any request whose system text or messages contain ``contains``."""

    contains: str
    reply: Reply
    provider: str | None = None


@dataclass(frozen=True)
class RecordedRequest:
    provider: str
    method: str
    path: str
    query: dict[str, str]
    body: Any
    headers: dict[str, str]
    started: float  # time.monotonic(): comparable across processes on one machine
    ended: float | None = None
    fault: str | None = None

    @property
    def model(self) -> str | None:
        if self.provider == "gemini":
            match = _GEMINI_PATH.match(self.path)
            return match.group(2) if match else None
        return self.body.get("model") if isinstance(self.body, dict) else None


def split_tokens(text: str) -> tuple[str, ...]:
    """Words with their trailing spaces, so the tokens join back to exactly ``text``."""
    return tuple(re.findall(r"\s*\S+\s*", text)) or ((text,) if text else ())


def make_reply(
    reply: str,
    *,
    tokens: Iterable[str] | None = None,
    token_delay: float = 0.0,
    first_token_delay: float = 0.0,
    fault: str | None = None,
    fault_after: int = 0,
    retry_after: float | None = None,
    error_status: int | None = None,
    error_message: str | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    usage: bool = True,
    stop_reason: str | None = None,
) -> Reply:
    if fault is not None and fault not in STREAM_FAULTS and _http_status(fault) is None:
        raise ValueError(f"unknown fault {fault!r}")
    return Reply(
        text="".join(tokens) if tokens is not None else reply,
        tokens=tuple(tokens) if tokens is not None else split_tokens(reply),
        token_delay=token_delay,
        first_token_delay=first_token_delay,
        fault=fault,
        fault_after=fault_after,
        retry_after=retry_after,
        error_status=error_status,
        error_message=error_message,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        usage=usage,
        stop_reason=stop_reason,
    )


def default_reply_text(request: ParsedRequest) -> str:
    """Deterministic text derived from the last user message."""
    words = request.last_user_text.split()[:8]
    return f"Fake {request.provider} reply about: {' '.join(words) or 'nothing'}."


def closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens: connecting is refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _http_status(fault: str) -> int | None:
    match = re.fullmatch(r"http_(\d{3})", fault)
    return int(match.group(1)) if match else None


def _route(method: str, path: str) -> tuple[str, str, str | None] | None:
    """(provider, action, model from the path) for a provider URL."""
    if path == "/v1/messages" and method == "POST":
        return "anthropic", "generate", None
    if path == "/v1/chat/completions" and method == "POST":
        return "openai", "generate", None
    if match := _GEMINI_PATH.match(path):
        return "gemini", match.group(3), match.group(2)
    if method == "GET" and path in ("/v1beta/models", "/v1alpha/models"):
        return "gemini", "models", None
    if method == "GET" and path == "/v1/models":
        return "models", "models", None  # shared by all three: decided by headers
    return None


def _models_provider(headers: dict[str, str]) -> str:
    if "x-api-key" in headers or "anthropic-version" in headers:
        return "anthropic"
    if "x-goog-api-key" in headers:
        return "gemini"
    return "openai"


class _Script:
    """Queues, rules and the request log; shared by the server thread and the tests."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._queues: dict[str | None, deque[Reply]] = {p: deque() for p in (*PROVIDERS, None)}
        self._rules: list[Rule] = []
        self._requests: list[RecordedRequest] = []
        self.models: dict[str, list[str]] = {name: list(w.MODELS) for name, w in WIRES.items()}
        self.default_token_delay = 0.0

    def reset(self) -> None:
        with self._lock:
            for queue in self._queues.values():
                queue.clear()
            self._rules.clear()
            self._requests.clear()
            self.models = {name: list(w.MODELS) for name, w in WIRES.items()}
            self.default_token_delay = 0.0

    def enqueue(self, provider: str | None, reply: Reply, times: int) -> None:
        if provider is not None and provider not in PROVIDERS:
            raise ValueError(f"unknown provider {provider!r}")
        with self._lock:
            self._queues[provider].extend([reply] * times)

    def add_rule(self, rule: Rule) -> None:
        with self._lock:
            self._rules.append(rule)

    def next_reply(self, request: ParsedRequest) -> Reply:
        """The provider's queue first, then the shared queue, then the first matching rule."""
        with self._lock:
            for key in (request.provider, None):
                if self._queues[key]:
                    return self._queues[key].popleft()
            for rule in self._rules:
                if rule.provider in (None, request.provider) and rule.contains in request.all_text:
                    return rule.reply
            delay = self.default_token_delay
        return make_reply(default_reply_text(request), token_delay=delay)

    def pending(self) -> int:
        with self._lock:
            return sum(len(q) for q in self._queues.values())

    def record(self, request: RecordedRequest) -> int:
        with self._lock:
            self._requests.append(request)
            self._lock.notify_all()
            return len(self._requests) - 1

    def update(self, index: int, **changes: Any) -> None:
        with self._lock:
            if index < len(self._requests):  # a reset may have cleared the log meanwhile
                self._requests[index] = replace(self._requests[index], **changes)
                self._lock.notify_all()

    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def wait_for(self, predicate: Callable[[list[RecordedRequest]], bool], timeout: float) -> bool:
        with self._lock:
            return self._lock.wait_for(lambda: predicate(self._requests), timeout)


class _App:
    """The ASGI application: routes a request, picks its reply, and plays it on the wire."""

    def __init__(self, script: _Script, stopping: threading.Event) -> None:
        self.script = script
        self.stopping = stopping

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = await _read_body(receive)
        method, path = scope["method"], scope["path"]
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        query = {k: v[-1] for k, v in parse_qs(scope.get("query_string", b"").decode()).items()}
        if path.startswith("/_fake/"):
            await self._control(method, path, body, send)
            return
        route = _route(method, path)
        if route is None:
            await _send_json(send, 404, {"error": {"message": f"no route {method} {path}"}})
            return
        provider, action, path_model = route
        if provider == "models":
            provider = _models_provider(headers)
        try:
            parsed_body: Any = json.loads(body) if body else None
        except ValueError:
            parsed_body = body.decode(errors="replace")
        index = self.script.record(
            RecordedRequest(
                provider=provider,
                method=method,
                path=path,
                query=query,
                body=parsed_body,
                headers=headers,
                started=time.monotonic(),
            )
        )
        wire = WIRES[provider]
        try:
            if action == "models":
                await _send_json(send, 200, wire.models(self.script.models[provider]))
                return
            request = wire.parse(
                parsed_body if isinstance(parsed_body, dict) else {}, path_model, action
            )
            reply = self.script.next_reply(request)
            self.script.update(index, fault=reply.fault)
            await _Playback(wire, request, reply, receive, send, self.stopping).run()
        finally:
            self.script.update(index, ended=time.monotonic())

    async def _control(self, method: str, path: str, body: bytes, send: Send) -> None:
        data = json.loads(body) if body else {}
        if path == "/_fake/requests" and method == "GET":
            await _send_json(send, 200, [asdict(r) for r in self.script.requests()])
            return
        if path == "/_fake/reset" and method == "POST":
            self.script.reset()
        elif path == "/_fake/script" and method == "POST":
            provider, times = data.pop("provider", None), data.pop("times", 1)
            self.script.enqueue(provider, make_reply(data.pop("reply", ""), **data), times)
        elif path == "/_fake/rule" and method == "POST":
            provider, contains = data.pop("provider", None), data.pop("contains")
            rule = Rule(contains, make_reply(data.pop("reply", ""), **data), provider)
            self.script.add_rule(rule)
        else:
            await _send_json(send, 404, {"error": f"no control {method} {path}"})
            return
        await _send_json(send, 200, {"ok": True})


class _Playback:
    """Plays one reply (or its fault) on the wire, watching for the client going away."""

    def __init__(
        self,
        wire: ModuleType,
        request: ParsedRequest,
        reply: Reply,
        receive: Receive,
        send: Send,
        stopping: threading.Event,
    ) -> None:
        self.wire, self.request, self.reply = wire, request, reply
        self.receive, self.send, self.stopping = receive, send, stopping
        self.gone = asyncio.Event()

    async def run(self) -> None:
        watcher = asyncio.create_task(self._watch_disconnect())
        try:
            await self._play()
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher

    async def _watch_disconnect(self) -> None:
        while (await self.receive())["type"] != "http.disconnect":
            pass
        self.gone.set()

    async def _pause(self, seconds: float) -> bool:
        """Wait ``seconds``; True if the client went away meanwhile."""
        if seconds <= 0:
            return self.gone.is_set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.gone.wait(), seconds)
        return self.gone.is_set()

    async def _hang(self) -> None:
        # The thread-side stop flag cannot wake an asyncio wait, so look at it a few times a second.
        while not self.stopping.is_set() and not await self._pause(0.05):
            pass

    async def _play(self) -> None:
        reply, request, wire = self.reply, self.request, self.wire
        status = _http_status(reply.fault) if reply.fault else None
        if status is not None:
            await self._pause(reply.first_token_delay)
            await self._send_error(status)
            return
        input_tokens = reply.input_tokens
        if input_tokens is None:
            input_tokens = max(1, len(request.all_text) // 4)
        output_tokens = (
            reply.output_tokens if reply.output_tokens is not None else len(reply.tokens)
        )
        stop = reply.stop_reason or wire.DEFAULT_STOP
        usage = reply.usage and request.include_usage
        if not request.stream:
            await self._play_whole(input_tokens, output_tokens, stop, usage)
            return
        await self.send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream"),
                    (b"cache-control", b"no-cache"),
                ],
            }
        )
        for frame in wire.stream_start(request.model, input_tokens):
            await self._chunk(frame)
        if await self._pause(reply.first_token_delay):
            return
        for i, token in enumerate(reply.tokens):
            if reply.fault in STREAM_FAULTS and i == reply.fault_after:
                await self._stream_fault()
                return
            if i > 0 and await self._pause(reply.token_delay):
                return
            await self._chunk(wire.stream_token(request.model, token))
        if reply.fault in STREAM_FAULTS:
            await self._stream_fault()
            return
        for frame in wire.stream_end(request.model, input_tokens, output_tokens, stop, usage):
            await self._chunk(frame)
        await self.send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _play_whole(
        self, input_tokens: int, output_tokens: int, stop: str, usage: bool
    ) -> None:
        reply = self.reply
        if await self._pause(reply.first_token_delay + reply.token_delay * len(reply.tokens)):
            return
        if reply.fault == "stall":
            await self._hang()
            return
        if reply.fault in STREAM_FAULTS:
            await self._send_error(reply.error_status or 500)
            return
        body = self.wire.complete(
            self.request.model, reply.text, input_tokens, output_tokens, stop, usage
        )
        await _send_json(self.send, 200, body)

    async def _stream_fault(self) -> None:
        reply = self.reply
        if reply.fault == "stall":
            await self._hang()
        elif reply.fault == "mid_stream_error":
            status = reply.error_status or MID_STREAM_STATUS[self.request.provider]
            message = reply.error_message or DEFAULT_MESSAGES.get(status, "Error")
            await self._chunk(self.wire.stream_error(status, message))
        elif reply.fault == "malformed_chunk":
            await self._chunk(self.wire.malformed())
        elif reply.fault == "unexpected_event":
            await self._chunk(self.wire.unexpected_event(self.request.model))
        elif reply.fault == "disconnect":
            # Ending the app without finishing the body makes the server drop the connection.
            return
        await self.send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _send_error(self, status: int) -> None:
        reply = self.reply
        message = reply.error_message or DEFAULT_MESSAGES.get(status, f"Error {status}")
        headers: list[tuple[bytes, bytes]] = []
        if reply.retry_after is not None:
            headers.append((b"retry-after", f"{reply.retry_after:g}".encode()))
        body = self.wire.error_body(status, message, reply.retry_after)
        await _send_json(self.send, status, body, headers)

    async def _chunk(self, data: bytes) -> None:
        await self.send({"type": "http.response.body", "body": data, "more_body": True})


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    return b"".join(chunks)


async def _send_json(
    send: Send, status: int, obj: Any, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    payload = json.dumps(obj).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *(headers or [])],
        }
    )
    await send({"type": "http.response.body", "body": payload, "more_body": False})


class _QuietDisconnects(logging.Filter):
    """Drop uvicorn's complaint about the ``disconnect`` fault: the unfinished body is the point."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "returned without completing response" not in record.getMessage()


logging.getLogger("uvicorn.error").addFilter(_QuietDisconnects())


class FakeLLMServer:
    """The fake server, run by uvicorn in a background thread; usable from sync and async tests."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self._script = _Script()
        self._stopping = threading.Event()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((host, port))
        self.host, self.port = self._sock.getsockname()[:2]
        config = uvicorn.Config(
            _App(self._script, self._stopping),
            lifespan="off",
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=2,
        )
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> FakeLLMServer:
        # The socket listens before uvicorn runs, so early connections wait in the backlog.
        self._sock.listen(128)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True, name="fake-llm"
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("fake LLM server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        self._sock.close()

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- addresses ---------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def gemini_base_url(self) -> str:
        return self.url

    # -- scripting ---------------------------------------------------------------------------
    def script(
        self, *, provider: str | None = None, reply: str = "", times: int = 1, **options: Any
    ) -> Reply:
        """Queue the reply to the next call (of ``provider``, or of any provider when None).

        ``options`` are :func:`make_reply`'s: tokens, token_delay, first_token_delay, fault,
        fault_after, retry_after, error_status, error_message, input_tokens, output_tokens,
        usage, stop_reason.
        """
        made = make_reply(reply, **options)
        self._script.enqueue(provider, made, times)
        return made

    def rule(
        self, *, contains: str, reply: str, provider: str | None = None, **options: Any
    ) -> Rule:
        """Whenever a request's system text or messages contain ``contains``, reply ``reply``."""
        made = Rule(contains, make_reply(reply, **options), provider)
        self._script.add_rule(made)
        return made

    def set_models(self, provider: str, names: list[str]) -> None:
        self._script.models[provider] = list(names)

    def set_default_token_delay(self, seconds: float) -> None:
        self._script.default_token_delay = seconds

    def reset(self) -> None:
        """Forget scripts, rules and recorded requests."""
        self._script.reset()

    @property
    def pending(self) -> int:
        """Scripted replies not yet used."""
        return self._script.pending()

    # -- what happened -----------------------------------------------------------------------
    @property
    def requests(self) -> list[RecordedRequest]:
        return self._script.requests()

    def requests_for(self, provider: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.provider == provider]

    @property
    def timeline(self) -> list[tuple[str, float, float | None]]:
        return [(r.provider, r.started, r.ended) for r in self.requests]

    def max_concurrency(self) -> int:
        """The most requests that were in flight at one moment."""
        edges: list[tuple[float, int]] = []
        for r in self.requests:
            edges += [(r.started, 1), (r.ended if r.ended is not None else float("inf"), -1)]
        running = peak = 0
        for _, step in sorted(edges, key=lambda e: (e[0], e[1])):
            running += step
            peak = max(peak, running)
        return peak

    def wait_for_requests(
        self, count: int, *, timeout: float = 5.0, finished: bool = False
    ) -> bool:
        """Block until ``count`` requests arrived (and, if ``finished``, all of them ended)."""

        def ready(requests: list[RecordedRequest]) -> bool:
            if len(requests) < count:
                return False
            return not finished or all(r.ended is not None for r in requests)

        return self._script.wait_for(ready, timeout)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve the fake LLM APIs with default replies.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--token-delay", type=float, default=0.0, help="seconds between tokens")
    args = parser.parse_args(argv)
    server = FakeLLMServer(host=args.host, port=args.port)
    server.set_default_token_delay(args.token_delay)
    server.start()
    print(f"fake LLM server on {server.url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()


__all__ = [
    "FakeLLMServer",
    "RecordedRequest",
    "Reply",
    "Rule",
    "closed_port_url",
    "default_reply_text",
    "make_reply",
    "split_tokens",
]
