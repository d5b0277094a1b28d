"""The benchmark's side of the wire: starting debates over the JSON API (httpx) and watching
them with real server-sent-event clients (aiohttp, whose C parser keeps the viewers' own CPU
low: they share the machine's cores with the app), as many per debate as asked.

A viewer turns every time stamp it finds in a ``delta`` into one latency sample: its own
``time.monotonic()`` on receipt minus the fake's at sending. Stamps sent before the viewer
connected are replayed history, not live tokens, and are skipped.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import re
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import httpx

from bench.fake_providers import stamps_in

DUEL_PROVIDERS = ("anthropic", "gemini")  # the two seats' providers unless told otherwise


def duel_seats(providers: tuple[str, str] = DUEL_PROVIDERS) -> dict[str, dict[str, str]]:
    """A duel's two seats (the format names them ``claude`` and ``gemini`` whoever answers
    in them) on ``providers``."""
    return {
        seat: {"provider": provider, "model": f"bench-{provider}"}
        for seat, provider in zip(("claude", "gemini"), providers, strict=True)
    }


def client(*, connections: int = 4000) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    timeout = httpx.Timeout(60.0, read=None)  # a stream may be quiet for a long first token
    return httpx.AsyncClient(limits=limits, timeout=timeout, trust_env=False)


def viewer_session(*, connections: int = 4000) -> aiohttp.ClientSession:
    connector = aiohttp.TCPConnector(limit=connections)
    # A stream may be quiet for a long first token: no read timeout.
    timeout = aiohttp.ClientTimeout(total=None, connect=60.0, sock_read=None)
    return aiohttp.ClientSession(connector=connector, timeout=timeout, trust_env=False)


@dataclass
class Samples:
    """Latency samples (seconds) kept only while ``open``, with when each was received and
    how long its viewer had been connected by then; counts of tokens seen."""

    open: bool = True
    latencies: list[float] = field(default_factory=list)
    received: list[float] = field(default_factory=list)  # monotonic, one per latency
    stream_ages: list[float] = field(default_factory=list)  # seconds connected, one per latency
    primary_tokens: int = 0  # tokens seen by the first viewer of each debate: each token once

    def add(
        self, received: float, stamps: list[float], *, primary: bool, connected_at: float
    ) -> None:
        if not self.open:
            return
        self.latencies.extend(received - stamp for stamp in stamps)
        self.received.extend([received] * len(stamps))
        self.stream_ages.extend([received - connected_at] * len(stamps))
        if primary:
            self.primary_tokens += len(stamps)


@dataclass
class ViewResult:
    debate_id: str
    connected_at: float = 0.0
    first_event_at: float | None = None
    ended_at: float | None = None
    end_status: str | None = None
    events: int = 0
    error: str | None = None


async def start_debate(
    http: httpx.AsyncClient,
    base_url: str,
    *,
    topic: str,
    format: str = "duel",
    rounds: int = 4,
    duel_providers: tuple[str, str] = DUEL_PROVIDERS,
) -> str:
    body: dict[str, Any] = {"topic": topic, "format": format, "rounds": rounds}
    if format == "duel":
        body["seats"] = duel_seats(duel_providers)
    response = await http.post(f"{base_url}/api/debates", json=body)
    if response.status_code != 201:
        raise RuntimeError(f"POST /api/debates: {response.status_code} {response.text[:300]}")
    debate_id: str = response.json()["id"]
    return debate_id


async def cancel_debate(http: httpx.AsyncClient, base_url: str, debate_id: str) -> None:
    with contextlib.suppress(httpx.HTTPError):
        await http.post(f"{base_url}/api/debates/{debate_id}/cancel")


# The two live streams of a debate: the page's (HTML fragments, what a browser watching the
# debate gets; every event rendered by the app) and the JSON API's (what scripts get).
STREAM_PATHS = {"page": "/debates/{id}/stream", "json": "/api/debates/{id}/events"}


async def watch(
    viewers: aiohttp.ClientSession,
    base_url: str,
    debate_id: str,
    samples: Samples,
    *,
    primary: bool,
    stream: str = "page",
    first_event: asyncio.Event | None = None,
) -> ViewResult:
    """Read the debate's event stream to its end, sampling every stamped token the first
    time it shows (a completed turn's HTML repeats the stamps its deltas already brought).

    The bytes are scanned as they arrive, not parsed into events line by line: the app does
    the same work either way, and the viewers share the machine's cores with it. A stamp is
    a whole word, so one split between two reads is found whole in the overlap kept from the
    previous read (and counted once, by the set of stamps seen)."""
    result = ViewResult(debate_id)
    url = base_url + STREAM_PATHS[stream].format(id=debate_id)
    seen: set[float] = set()
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    overlap = ""
    ending: list[str] = []  # what came after ``event: end``: the final page or status
    try:
        async with viewers.get(url, headers={"Accept": "text/event-stream"}) as response:
            response.raise_for_status()
            result.connected_at = time.monotonic()
            async for chunk in response.content.iter_any():
                received = time.monotonic()
                text = overlap + decoder.decode(chunk)
                already = overlap.count(_EVENT_FIELD)  # counted with the previous read
                overlap = text[-_OVERLAP:]
                if ending:
                    ending.append(text)
                    continue
                result.events += text.count(_EVENT_FIELD) - already
                if result.first_event_at is None:
                    result.first_event_at = received
                    if first_event is not None:
                        first_event.set()
                before, marker, after = text.partition(_END_MARKER)
                fresh = [s for s in stamps_in(before) if s not in seen]
                seen.update(fresh)
                live = [s for s in fresh if s >= result.connected_at]
                samples.add(received, live, primary=primary, connected_at=result.connected_at)
                if marker:
                    ending.append(after)
            if ending:
                result.ended_at = time.monotonic()
                result.end_status = _end_status(stream, "".join(ending))
    except (aiohttp.ClientError, RuntimeError, ValueError) as error:
        result.error = f"{type(error).__name__}: {error}"
    return result


# Long enough to hold a stamp cut in two, or the end marker.
_OVERLAP = 32
_END_MARKER = "event: end"
_EVENT_FIELD = "event: "


def _end_status(stream: str, data: str) -> str:
    """The debate's final status: in the JSON end event's body, or the page's status badge."""
    pattern = _JSON_STATUS if stream == "json" else _PAGE_STATUS
    match = pattern.search(data)
    return match.group(1) if match else "unknown"


_JSON_STATUS = re.compile(r'"status":\s*"([a-z]+)"')
_PAGE_STATUS = re.compile(r'id="status" class="badge badge-([a-z]+)"')


async def debate_status(http: httpx.AsyncClient, base_url: str, debate_id: str) -> dict[str, Any]:
    response = await http.get(f"{base_url}/api/debates/{debate_id}")
    response.raise_for_status()
    payload: dict[str, Any] = response.json()
    return payload


class LoopLag:
    """How late this process's own event loop wakes up: if the benchmark's clients are
    starved, their latency samples are too, and the report says so."""

    def __init__(self, interval: float = 0.01) -> None:
        self.interval = interval
        self.lags: list[float] = []
        self._task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        while True:
            before = time.monotonic()
            await asyncio.sleep(self.interval)
            self.lags.append(max(0.0, time.monotonic() - before - self.interval))

    def start(self) -> None:
        self.lags.clear()
        self._task = asyncio.create_task(self._tick())

    async def stop(self) -> list[float]:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        return list(self.lags)
