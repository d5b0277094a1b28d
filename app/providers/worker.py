"""Provider calls in a worker process.

A server streaming hundreds of debates spends about half of its one core (Python runs one
thread at a time) inside the providers' SDKs: their HTTP clients and their parsing of every
streamed event. So the Claude, Gemini and OpenAI adapters run in a child process instead, on
another core, and the parent keeps the debates, the database and the viewers (or, in an
``argue worker``, the debates and their event stream): by default whenever the process runs
debates itself and has a second core (``provider_worker_wanted``); ``ARGUE_PROVIDER_WORKER=1``
or ``0`` decides it outright.
``RemoteProvider`` stands in for an adapter: same ``Provider`` protocol, so the runner and the
retries do not know the difference.

The two processes talk over the child's stdin and stdout: length-prefixed pickles of tuples
(the child is this same program, so nothing untrusted is unpickled).

    parent → child   ("settings", Settings)            once, first
                     ("stream", call, provider, model, system, [(role, content)…], max_tokens)
                     ("cancel", call)
    child → parent   ("ready",)                        once, first, its SDKs imported
                     then a list of messages per write:
                     ("delta", call, text)             the call's text since its last delta
                     ("finished", call, input_tokens, output_tokens, estimated, stop_reason)
                     ("error", call, kind, provider, message, status, retry_after, retryable)

The child gathers what arrives into one write, joining each call's text: everything of one
turn of its event loop, and writes at most once every ``SEND_SPACING_SECONDS`` (5 ms), so
that a write carries every call's text of the interval. Written at once, at fifty debates
streaming one token per event, nearly every write carried one token, and each woke the
parent's event loop, which a cluster's worker shares with the writes to Redis and its
database threads. A few milliseconds more for a token buy far fewer wake-ups; the figures are
in ``bench/HISTORY.md``.

The child exits when its stdin closes (the parent stopped, or died); when
it dies, every open call fails with a retryable connection error and the next call starts a
new child. The server waits for "ready" before it resumes any debate: importing the SDKs takes
seconds on a busy machine, and a call waiting for that would count it as the provider's
silence, and retry a turn that never stalled.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import pickle
import signal
import struct
import sys
from collections.abc import AsyncIterator, Sequence
from typing import Any

from app import collector, event_loop
from app.config import Settings
from app.pacing import Spacing
from app.providers.base import (
    ErrorKind,
    Finished,
    Message,
    Provider,
    ProviderError,
    ProviderStatus,
    TextDelta,
    Usage,
)
from app.providers.resilience import internal_error

log = logging.getLogger(__name__)

# The adapters whose work is worth moving: HTTP APIs parsed by an SDK. The local model has
# its own threads, and the CLI providers are child processes already.
WORKER_PROVIDERS = frozenset({"anthropic", "gemini", "openai"})

_HEADER = struct.Struct("!I")
_STOP_SECONDS = 5.0
# The least time between two writes to the parent: text arriving meanwhile waits for the
# next write, which brings every call's (module docstring).
SEND_SPACING_SECONDS = 0.005
_READY_SECONDS = 60.0

Wire = tuple[Any, ...]


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, where the system tells it)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def provider_worker_wanted(settings: Settings, *, runs_debates: bool) -> bool:
    """Whether a process with these settings moves its provider calls to a worker: as
    set, or, unset, when it runs debates itself and another core is there to take them."""
    if settings.provider_worker is not None:
        return settings.provider_worker
    return runs_debates and usable_cpus() > 1


def _frame(message: object) -> bytes:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(body)) + body


async def _read_frame(reader: asyncio.StreamReader) -> Any:
    """The next message, or None at the end of the stream."""
    try:
        header = await reader.readexactly(_HEADER.size)
        return pickle.loads(await reader.readexactly(_HEADER.unpack(header)[0]))
    except asyncio.IncompleteReadError:
        return None


def _error_message(call: int, error: ProviderError) -> Wire:
    return (
        "error",
        call,
        error.kind.value,
        error.provider,
        error.message,
        error.status,
        error.retry_after,
        error.retryable,
    )


def _error_from(message: Wire) -> ProviderError:
    _, _, kind, provider, text, status, retry_after, retryable = message
    return ProviderError(
        kind=ErrorKind(kind),
        provider=provider,
        message=text,
        status=status,
        retry_after=retry_after,
        retryable=retryable,
    )


# -- the parent's side ----------------------------------------------------------------------


class ProviderWorker:
    """The child process, started on the first call and again after it dies."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._process: asyncio.subprocess.Process | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reading: asyncio.Task[None] | None = None
        self._starting = asyncio.Lock()
        self._ready = asyncio.Event()
        self._calls: dict[int, asyncio.Queue[Wire]] = {}
        self._ids = itertools.count(1)

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def ready(self) -> bool:
        """Whether the child runs and has imported the SDKs."""
        return self._process is not None and self._ready.is_set()

    async def start(self) -> None:
        """Start the child now (it imports the SDKs while the server starts) rather than on
        the first call, which would wait for that."""
        await self._ensure_started("worker")

    async def wait_ready(self) -> bool:
        """Wait until the child has imported the SDKs; False when it stopped first or took
        over a minute (the calls then go on as they can)."""
        if self._process is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ready.wait(), _READY_SECONDS)
        if self.ready:
            return True
        log.warning("the provider worker process is not ready; calls go on without waiting")
        return False

    async def stream(
        self,
        provider: str,
        *,
        model: str,
        system: str,
        messages: Sequence[Message],
        max_tokens: int,
    ) -> AsyncIterator[TextDelta | Finished]:
        await self._ensure_started(provider)
        call = next(self._ids)
        inbox: asyncio.Queue[Wire] = asyncio.Queue()
        self._calls[call] = inbox
        turns = [(m.role, m.content) for m in messages]
        self._send(("stream", call, provider, model, system, turns, max_tokens))
        if self._process is None:  # it died while starting: nothing will answer
            self._calls.pop(call, None)
            raise ProviderError(
                kind=ErrorKind.CONNECTION,
                provider=provider,
                message="the provider worker process stopped",
            )
        answered = False
        try:
            while True:
                message = await inbox.get()
                if message[0] == "delta":
                    yield TextDelta(message[2])
                elif message[0] == "finished":
                    answered = True
                    _, _, input_tokens, output_tokens, estimated, stop_reason = message
                    yield Finished(Usage(input_tokens, output_tokens, estimated), stop_reason)
                    return
                else:
                    answered = True
                    raise _error_from(message)
        finally:
            self._calls.pop(call, None)
            if not answered:  # the consumer gave up (a stall, a cancelled debate)
                self._send(("cancel", call))

    async def aclose(self) -> None:
        """Close the child's stdin (it finishes and exits), then wait for it."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), _STOP_SECONDS)
        except TimeoutError:
            process.kill()
            await process.wait()
        if self._reading is not None:
            self._reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reading

    async def _ensure_started(self, provider: str) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            # Another event loop (tests run several): that loop's child cannot be read here.
            self._abandon()
            self._loop, self._starting = loop, asyncio.Lock()
        async with self._starting:
            if self._process is not None and self._process.returncode is None:
                return
            try:
                self._process = await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-m",
                    "app.providers.worker",
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                )
            except OSError as error:
                raise ProviderError(
                    kind=ErrorKind.CONNECTION,
                    provider=provider,
                    message=f"could not start the provider worker process: {error}",
                ) from error
            self._ready = asyncio.Event()
            self._send(("settings", self._settings))
            self._reading = asyncio.create_task(self._read(self._process, self._ready))

    def _send(self, message: Wire) -> None:
        process = self._process
        if process is None or process.stdin is None or process.stdin.is_closing():
            return
        process.stdin.write(_frame(message))

    async def _read(self, process: asyncio.subprocess.Process, ready: asyncio.Event) -> None:
        assert process.stdout is not None
        try:
            if await _read_frame(process.stdout) == ("ready",):
                ready.set()
            while (batch := await _read_frame(process.stdout)) is not None:
                for message in batch:
                    inbox = self._calls.get(message[1])
                    if inbox is not None:
                        inbox.put_nowait(message)
        except (pickle.UnpicklingError, EOFError, ValueError, IndexError, TypeError) as error:
            log.error("provider worker: unreadable output (%s); stopping it", error)
        finally:
            # Its output ended or cannot be read: it is of no more use either way.
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            code = await process.wait()
            if self._process is process:
                self._process = None
            ready.set()  # nobody waits for a child that is gone
            self._fail_open_calls(f"the provider worker process stopped (exit status {code})")

    def _fail_open_calls(self, why: str) -> None:
        stopped = ProviderError(kind=ErrorKind.CONNECTION, provider="worker", message=why)
        for call, inbox in list(self._calls.items()):
            inbox.put_nowait(_error_message(call, stopped))

    def _abandon(self) -> None:
        """Forget a child started on another (finished) loop; it exits on its own when its
        stdin closes, and is killed here in case it does not."""
        process, self._process = self._process, None
        self._reading = None
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGKILL)


class RemoteProvider:
    """An adapter whose calls run in the worker process; its status and model list, which
    need no streaming, are answered here by the adapter itself."""

    def __init__(self, local: Provider, worker: ProviderWorker) -> None:
        self.name = local.name
        self._local = local
        self._worker = worker

    def status(self) -> ProviderStatus:
        return self._local.status()

    async def list_models(self) -> list[str]:
        return await self._local.list_models()

    def stream(
        self,
        *,
        model: str,
        system: str,
        messages: Sequence[Message],
        max_tokens: int,
    ) -> AsyncIterator[TextDelta | Finished]:
        return self._worker.stream(
            self.name, model=model, system=system, messages=messages, max_tokens=max_tokens
        )

    async def aclose(self) -> None:
        close = getattr(self._local, "aclose", None)
        if close is not None:
            await close()
        await self._worker.aclose()


def in_worker_process(
    providers: dict[str, Provider], worker: ProviderWorker
) -> dict[str, Provider]:
    """The same providers, the HTTP adapters among them answered by the worker process."""
    return {
        name: RemoteProvider(provider, worker) if name in WORKER_PROVIDERS else provider
        for name, provider in providers.items()
    }


async def moved_to_worker(
    providers: dict[str, Provider], settings: Settings
) -> tuple[dict[str, Provider], ProviderWorker | None]:
    """The same providers, the HTTP adapters among them answered by a worker process started
    here (it imports the SDKs meanwhile: see ``wait_ready``); as they are, with no worker,
    when there is no such adapter among them."""
    if not WORKER_PROVIDERS & providers.keys():
        return providers, None
    worker = ProviderWorker(settings)
    try:
        await worker.start()
    except ProviderError as error:  # the first call tries again
        log.warning("%s", error)
    return in_worker_process(providers, worker), worker


# -- the child's side -----------------------------------------------------------------------


class _Outbox:
    """Messages to the parent: what a turn of the event loop brought, in one write, no
    sooner than ``spacing`` after the one before."""

    def __init__(
        self, transport: asyncio.WriteTransport, *, spacing: float = SEND_SPACING_SECONDS
    ) -> None:
        self._transport = transport
        self._spacing = Spacing(spacing)
        self._text: dict[int, list[str]] = {}
        self._messages: list[Wire] = []
        self._scheduled = False

    def delta(self, call: int, text: str) -> None:
        self._text.setdefault(call, []).append(text)
        self._schedule()

    def send(self, message: Wire) -> None:
        """A call's last message, after the text it still has waiting."""
        parts = self._text.pop(message[1], None)
        if parts:
            self._messages.append(("delta", message[1], "".join(parts)))
        self._messages.append(message)
        self._schedule()

    def _schedule(self) -> None:
        if self._scheduled:
            return
        self._scheduled = True
        self._spacing.call(self._flush)

    def _flush(self) -> None:
        self._scheduled = False
        self._spacing.begin()
        batch = [("delta", call, "".join(parts)) for call, parts in self._text.items()]
        batch += self._messages
        self._text, self._messages = {}, []
        if batch and not self._transport.is_closing():
            self._transport.write(_frame(batch))


class _Child:
    def __init__(self, settings: Settings, outbox: _Outbox) -> None:
        self._settings = settings
        self._outbox = outbox
        self._providers: dict[str, Provider] = {}
        self._calls: dict[int, asyncio.Task[None]] = {}

    def handle(self, message: Wire) -> None:
        if message[0] == "stream":
            _, call, provider, model, system, turns, max_tokens = message
            messages = [Message(role, content) for role, content in turns]
            task = asyncio.create_task(
                self._call(call, provider, model, system, messages, max_tokens)
            )
            self._calls[call] = task
            task.add_done_callback(lambda _: self._calls.pop(call, None))
        elif message[0] == "cancel" and (running := self._calls.get(message[1])) is not None:
            running.cancel()

    async def _call(
        self,
        call: int,
        provider: str,
        model: str,
        system: str,
        messages: list[Message],
        max_tokens: int,
    ) -> None:
        try:
            adapter = self._provider(provider)
            async for event in adapter.stream(
                model=model, system=system, messages=messages, max_tokens=max_tokens
            ):
                if isinstance(event, TextDelta):
                    self._outbox.delta(call, event.text)
                else:
                    usage = event.usage
                    self._outbox.send(
                        (
                            "finished",
                            call,
                            usage.input_tokens,
                            usage.output_tokens,
                            usage.estimated,
                            event.stop_reason,
                        )
                    )
        except ProviderError as error:
            self._outbox.send(_error_message(call, error))
        except Exception as error:  # an adapter bug must not take every other call down
            self._outbox.send(_error_message(call, internal_error(error, provider=provider)))

    def load_adapters(self) -> None:
        """Import the SDKs now, before the first call needs them."""
        for name in WORKER_PROVIDERS:
            try:
                self._provider(name)
            except ImportError as error:
                log.warning("provider worker: %s unavailable: %s", name, error)

    def _provider(self, name: str) -> Provider:
        if name not in self._providers:
            from app.providers.registry import build_provider

            self._providers[name] = build_provider(name, self._settings)
        return self._providers[name]

    async def close(self) -> None:
        for task in list(self._calls.values()):
            task.cancel()
        await asyncio.gather(*self._calls.values(), return_exceptions=True)
        from app.providers.registry import close_providers

        await close_providers(self._providers)


async def _serve_parent() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    # The protocol owns the real stdout; anything else printed goes to stderr.
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    transport, _ = await loop.connect_write_pipe(asyncio.Protocol, protocol_out)
    first = await _read_frame(reader)
    if first is None or first[0] != "settings":
        return
    child = _Child(first[1], _Outbox(transport))
    child.load_adapters()
    transport.write(_frame(("ready",)))
    try:
        # Its streams are the web process's, and so are its collector's pauses.
        async with collector.pauses_kept_short():
            while (message := await _read_frame(reader)) is not None:
                child.handle(message)
    finally:
        await child.close()
        transport.close()


def main() -> None:
    # Ctrl-C in a terminal reaches the whole process group: the parent shuts down in order
    # and closes this process's stdin, which is its signal to stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    event_loop.run(_serve_parent())


if __name__ == "__main__":
    main()
