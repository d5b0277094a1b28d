"""Retries and stall detection around any provider's stream, and how failures are classed.

The adapters switch their SDKs' own retries off: this module is the one place that decides
whether a failure is worth another try, how long to wait (exponential backoff, never less than
the server's ``retry-after``), and when a silent stream counts as stalled. An exception nobody
expected is a bug, told apart from the provider's failures: an ``internal`` error, logged with
its traceback and never retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence

from app.config import Settings
from app.providers.base import (
    ErrorKind,
    Finished,
    Message,
    Provider,
    ProviderError,
    Retrying,
    StreamEvent,
    TextDelta,
)

Sleep = Callable[[float], Awaitable[None]]

log = logging.getLogger(__name__)


def internal_error(error: Exception, *, provider: str) -> ProviderError:
    """The ``ProviderError`` for an exception nobody expected: a bug in Argue's code for
    ``provider``, not a failure of the provider. Logged here, once, with its traceback."""
    log.error(
        "bug in the %s adapter: %s: %s", provider, type(error).__name__, error, exc_info=error
    )
    return ProviderError(
        kind=ErrorKind.INTERNAL,
        provider=provider,
        message=(
            f"internal error in Argue (a bug, not a failure of {provider}): "
            f"{type(error).__name__}: {error}"
        ),
        retryable=False,
    )


def kind_for_status(status: int) -> ErrorKind:
    """The error kind an HTTP status means, the same for every provider."""
    if status in (401, 403):
        return ErrorKind.AUTH
    if status == 404:
        return ErrorKind.NOT_FOUND
    if status == 408:
        return ErrorKind.TIMEOUT
    if status == 429:
        return ErrorKind.RATE_LIMIT
    if status in (503, 529):
        return ErrorKind.OVERLOADED
    if status >= 500:
        return ErrorKind.SERVER
    if status >= 400:
        return ErrorKind.BAD_REQUEST
    # An error reported inside a 200 stream: the server failed after it started answering.
    return ErrorKind.SERVER


def transport_error_kind(error: BaseException) -> ErrorKind | None:
    """TIMEOUT or CONNECTION for a network failure below the SDK, else None.

    Matched by class name because the SDKs raise either ``httpx`` or its fork ``httpx2``.
    """
    names = {cls.__name__ for cls in type(error).__mro__}
    if names & {"TimeoutException", "TimeoutError"}:
        return ErrorKind.TIMEOUT
    if names & {"TransportError", "NetworkError", "ConnectError", "OSError"}:
        return ErrorKind.CONNECTION
    return None


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date)."""
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        with contextlib.suppress(ValueError):
            return max(0.0, float(millis) / 1000)
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    with contextlib.suppress(TypeError, ValueError):
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time())
    return None


def backoff_delay(*, attempt: int, retry_after: float | None, settings: Settings) -> float:
    """Wait before retry number ``attempt`` (1-based): doubling, capped, at least retry-after."""
    delay = min(settings.retry_base_delay * 2.0 ** (attempt - 1), settings.retry_max_delay)
    return max(delay, retry_after or 0.0)


class _StallWatch:
    """Whether a stream has been waited on for ``stall_after`` seconds with nothing arriving.

    One timer per stream, moved on only when it fires: each event just notes the time. An
    ``asyncio.timeout`` around each wait armed and cancelled a timer per event, 6 to 9 µs an
    event on a two-core server (``python -m bench.stall_watch``), with one event per token.
    Only the waits count: time the consumer spends between events does not. When the watch
    fires during a wait it cancels the waiting task, as ``asyncio.timeout`` does, and
    ``withdraw`` takes that cancellation back."""

    def __init__(self, stall_after: float) -> None:
        self._loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None, "a stream is read by a task"
        self._task = task
        self._cancelling = task.cancelling()
        self._stall_after = stall_after
        self._waiting_since: float | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._fired = False

    def waiting(self) -> None:
        self._waiting_since = self._loop.time()
        if self._timer is None:
            self._timer = self._loop.call_at(self._waiting_since + self._stall_after, self._check)

    def received(self) -> None:
        self._waiting_since = None
        self.withdraw()  # fired as the event came: the stream goes on

    def withdraw(self) -> bool:
        """Take back the cancellation this watch made, if it made one; True when that was the
        task's only one (a stall, then, and not a cancel from outside)."""
        if not self._fired:
            return False
        self._fired = False
        return self._task.uncancel() <= self._cancelling

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _check(self) -> None:
        self._timer = None
        if self._waiting_since is None:
            return  # between events: the next wait arms the timer again
        due = self._waiting_since + self._stall_after
        if self._loop.time() < due:
            self._timer = self._loop.call_at(due, self._check)
        else:
            self._fired = True
            self._task.cancel()


async def guard_stalls(
    stream: AsyncIterator[TextDelta | Finished], *, stall_after: float, provider: str
) -> AsyncGenerator[TextDelta | Finished, None]:
    """Pass events through; raise a retryable timeout when none comes for ``stall_after`` s,
    and an internal error for anything the stream raises that is not a ``ProviderError``.

    The wrapped stream is closed however this ends, so its HTTP response is released.
    """
    watch = _StallWatch(stall_after)
    try:
        while True:
            watch.waiting()
            try:
                event = await anext(stream)
            except StopAsyncIteration:
                return
            except asyncio.CancelledError:
                if watch.withdraw():
                    raise ProviderError(
                        kind=ErrorKind.TIMEOUT,
                        provider=provider,
                        message=f"the stream stalled: nothing received for {stall_after:g} seconds",
                    ) from None
                raise
            except ProviderError:
                watch.withdraw()
                raise
            except Exception as unexpected:  # the adapter broke its own contract: a bug
                watch.withdraw()
                raise internal_error(unexpected, provider=provider) from unexpected
            watch.received()
            yield event
    finally:
        watch.stop()
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()


async def stream_with_retries(
    provider: Provider,
    *,
    model: str,
    system: str,
    messages: Sequence[Message],
    max_tokens: int,
    settings: Settings,
    sleep: Sleep = asyncio.sleep,
) -> AsyncIterator[StreamEvent]:
    """The provider's stream, retried on retryable errors; ``Retrying`` precedes each retry.

    A consumer discards the text it received in the failed attempt when it sees ``Retrying``.
    Non-retryable errors raise at once; when attempts or the total wait run out, the last
    error is raised.
    """
    waited = 0.0
    attempt = 1
    while True:
        events = guard_stalls(
            provider.stream(model=model, system=system, messages=messages, max_tokens=max_tokens),
            stall_after=settings.stall_timeout,
            provider=provider.name,
        )
        try:
            async with contextlib.aclosing(events):
                async for event in events:
                    yield event
            return
        except ProviderError as raised:
            # Some providers quote the key they were given in their message; what reaches
            # a turn, a page or a log never holds it.
            error = raised.redacted(settings.secret_values())
            delay = backoff_delay(attempt=attempt, retry_after=error.retry_after, settings=settings)
            out_of_attempts = attempt >= settings.retry_max_attempts
            out_of_time = waited + delay > settings.retry_max_total_wait
            if not error.retryable or out_of_attempts or out_of_time:
                raise error from None
            yield Retrying(attempt=attempt, delay=delay, error=error)
        await sleep(delay)
        waited += delay
        attempt += 1
