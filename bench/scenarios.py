"""The scenarios, each a bounded run against the started stack that returns its figures:

- ``history_page``: ``GET /debates`` over the stored debates, from a few concurrent clients.
- ``overhead``: one debate alone; its wall time (POST sent → ``end`` received) over the
  critical path of its provider calls, taken from the fake's own request log (monotonic
  start/end of every call, ``GET /_fake/requests``).
- ``load``: N debates at once with M viewers each; token-to-viewer latency, app CPU per
  1,000 tokens, inside a measuring window after a warm-up; then every debate is cancelled.
- ``memory``: the app's resident memory per running debate and per viewer.
- ``lifecycle``: what one debate's whole life costs in CPU (started, watched, ended), by
  process and shared service, with replies too short for streaming to count.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import os
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import httpx

from bench import processes
from bench.clients import (
    LoopLag,
    Samples,
    ViewResult,
    cancel_debate,
    debate_status,
    start_debate,
    watch,
)
from bench.fake_providers import Pace, recorded_requests, script_paces
from bench.stack import Stack
from bench.stats import (
    batches,
    by_stream_age,
    critical_path,
    latency_summary,
    ms,
    p99_by_second,
    percentile,
)

T = TypeVar("T")
_topics = itertools.count(1)


def _topic(tag: str) -> str:
    return f"Bench {tag} #{next(_topics)}: is a modular monolith better than microservices?"


async def _start_debate(
    http: httpx.AsyncClient, stack: Stack, *, topic: str, format: str = "duel", rounds: int = 4
) -> str:
    """A debate started on the stack's app, a duel's seats on the providers it was told."""
    return await start_debate(
        http,
        stack.app_url,
        topic=topic,
        format=format,
        rounds=rounds,
        duel_providers=stack.options.duel_providers,
    )


def _views(
    stack: Stack,
    watchers: aiohttp.ClientSession,
    samples: Samples,
    debate_id: str,
    viewers: int,
) -> list[Coroutine[Any, Any, ViewResult]]:
    """A watch of the debate to its end for each of ``viewers``, the first its primary."""
    return [
        watch(
            watchers,
            stack.viewer_url(debate_id),
            debate_id,
            samples,
            primary=viewer == 0,
            stream=stack.options.viewer_stream,
        )
        for viewer in range(viewers)
    ]


async def _bounded(limit: int, jobs: list[Callable[[], Awaitable[T]]]) -> list[T | BaseException]:
    gate = asyncio.Semaphore(limit)

    async def run(job: Callable[[], Awaitable[T]]) -> T:
        async with gate:
            return await job()

    return list(await asyncio.gather(*(run(job) for job in jobs), return_exceptions=True))


# -- history page --------------------------------------------------------------------------


async def history_page(
    stack: Stack, http: httpx.AsyncClient, *, requests: int, concurrency: int
) -> dict[str, Any]:
    url = f"{stack.app_url}/debates"
    latencies: list[float] = []
    failures = 0
    remaining = iter(range(requests))

    async def worker() -> None:
        nonlocal failures
        for _ in remaining:
            started = time.monotonic()
            response = await http.get(url)
            latencies.append(time.monotonic() - started)
            if response.status_code != 200:
                failures += 1

    for _ in range(min(10, requests)):  # warm the templates and the page cache
        await http.get(url)
    before = stack.app_usage()
    started = time.monotonic()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.monotonic() - started
    after = stack.app_usage()
    return {
        "stored_debates": stack.options.history_debates,
        "requests": requests,
        "concurrency": concurrency,
        "failures": failures,
        "requests_per_second": round(requests / elapsed, 1),
        "app_cpu_seconds_per_request": round(
            (after.cpu_seconds - before.cpu_seconds) / requests, 4
        ),
        **latency_summary(latencies),
    }


# -- overhead ------------------------------------------------------------------------------


async def overhead(
    stack: Stack,
    http: httpx.AsyncClient,
    watchers: aiohttp.ClientSession,
    *,
    format: str,
    rounds: int,
    paces: dict[str, Pace],
    tokens: int,
    limit: float,
) -> dict[str, Any]:
    await script_paces(http, stack.fake_url, paces, tokens)
    samples = Samples()
    posted = time.monotonic()
    debate_id = await _start_debate(http, stack, topic=_topic(format), format=format, rounds=rounds)
    view = await asyncio.wait_for(
        watch(
            watchers,
            stack.app_url,
            debate_id,
            samples,
            primary=True,
            stream=stack.options.viewer_stream,
        ),
        limit,
    )
    if view.ended_at is None:
        raise RuntimeError(f"{format} {debate_id} did not end: {view.error}")
    wall = view.ended_at - posted
    calls = [
        (float(r["started"]), float(r["ended"]))
        for r in await recorded_requests(http, stack.fake_url)
        if r.get("ended") is not None and r["path"] != "/v1/models"
    ]
    path = critical_path(calls)
    debate = await debate_status(http, stack.app_url, debate_id)
    groups = batches(calls)
    return {
        "format": format,
        "rounds": rounds,
        "status": debate["status"],
        "provider_calls": len(calls),
        "batches": len(groups),
        "wall_seconds": round(wall, 3),
        "critical_path_seconds": round(path, 3),
        "overhead_ratio": round(wall / path, 4) if path else None,
        "overhead_seconds_per_batch": round((wall - path) / len(groups), 4) if groups else None,
        "from_post_to_first_call_ms": ms(min(s for s, _ in calls) - posted) if calls else None,
        "from_last_call_to_end_ms": ms(view.ended_at - max(e for _, e in calls)) if calls else None,
        # Between one batch's slowest call ending and the next batch's first call starting:
        # the app's own time per step (saving the turn, planning, opening the next stream).
        "gaps_between_batches_ms": [
            ms(min(s for s, _ in nxt) - max(e for _, e in prev))
            for prev, nxt in itertools.pairwise(groups)
        ],
        "app_turn_latency_minus_call_ms": _turn_vs_call(debate["turns"], calls),
        "token_to_viewer": latency_summary(samples.latencies),
    }


def _turn_vs_call(turns: list[dict[str, Any]], calls: list[tuple[float, float]]) -> float | None:
    """The runner's own per-turn latency (stream opened → text complete, the API's
    ``latency_ms``) minus the fake's call duration, on average: what the SDK adds."""
    if not turns or len(turns) != len(calls):
        return None
    app_ms = sum(int(t["latency_ms"]) for t in turns)
    fake_ms = sum((end - start) * 1000 for start, end in calls)
    return round((app_ms - fake_ms) / len(turns), 1)


# -- many debates at once -------------------------------------------------------------------


@dataclass(frozen=True)
class LoadShape:
    debates: int
    viewers: int
    rounds: int
    warmup: float
    window: float
    # Spread the starts over one provider call (real debates are not in step), or issue
    # them all at once, as an outside load harness does.
    spread_starts: bool = True
    # Keep ``debates`` running: when a debate's primary viewer sees ``event: end``, start a
    # new duel with its viewers at once (until the window closes), so debates end and start
    # throughout the run and their cost (the final page, new streams) is measured too.
    replace_ended: bool = False


class Profiler:
    """py-spy sampling the app for the measuring window (collapsed stacks, idle excluded)."""

    def __init__(self, pid: int, out: Path, seconds: float) -> None:
        self.out = out
        self.process = processes.spawn(
            [
                "py-spy",
                "record",
                "--pid",
                str(pid),
                "--duration",
                str(max(1, round(seconds))),
                "--rate",
                "100",
                "--format",
                "raw",
                "--nonblocking",
                "--gil",
                "--output",
                str(out),
            ],
            log=out.with_suffix(".log"),
        )

    async def wait(self) -> bool:
        try:
            await asyncio.wait_for(asyncio.to_thread(self.process.wait), 60)
        except TimeoutError:
            processes.stop(self.process)
        return self.out.exists()


async def load(
    stack: Stack,
    http: httpx.AsyncClient,
    watchers: aiohttp.ClientSession,
    shape: LoadShape,
    *,
    paces: dict[str, Pace],
    tokens: int,
    profile_to: Path | None = None,
) -> dict[str, Any]:
    """Start ``debates`` duels with ``viewers`` each, measure in a window, cancel them all.

    With ``shape.replace_ended`` a debate whose primary viewer saw its end is replaced at
    once by a new duel with its own viewers, until the window closes."""
    await script_paces(http, stack.fake_url, paces, tokens)
    samples = Samples(open=False)
    views: list[asyncio.Task[ViewResult]] = []
    primaries: dict[str, asyncio.Task[ViewResult]] = {}  # every debate started, by id
    start_errors: list[str] = []
    closing = asyncio.Event()  # the window has closed: no more replacements

    # Spread: starts over one provider call, as real debates are not in step with each
    # other; started together, every turn of every debate ends in the same instant.
    spread = (
        max(p.first_token_delay + tokens / p.tokens_per_second for p in paces.values())
        if shape.spread_starts
        else 0.0
    )
    ramp_started = time.monotonic()

    async def start_one() -> asyncio.Task[ViewResult]:
        debate_id = await _start_debate(
            http, stack, topic=_topic(f"load{shape.debates}"), rounds=shape.rounds
        )
        tasks = [
            asyncio.create_task(view)
            for view in _views(stack, watchers, samples, debate_id, shape.viewers)
        ]
        views.extend(tasks)
        primaries[debate_id] = tasks[0]
        return tasks[0]

    async def begin(index: int) -> asyncio.Task[ViewResult]:
        if spread:
            await asyncio.sleep(ramp_started + spread * index / shape.debates - time.monotonic())
        return await start_one()

    async def keep_running(primary: asyncio.Task[ViewResult]) -> None:
        """One of the ``debates`` slots: each time its debate ends, a new one takes it."""
        closed = asyncio.create_task(closing.wait())
        try:
            while True:
                await asyncio.wait({primary, closed}, return_when=asyncio.FIRST_COMPLETED)
                if closing.is_set() or primary.cancelled() or primary.exception():
                    return
                if primary.result().ended_at is None:  # the viewer failed: not an end
                    return
                try:
                    primary = await start_one()
                except Exception as error:
                    start_errors.append(repr(error))
                    return
        finally:
            closed.cancel()

    firsts = await _bounded(
        shape.debates, [functools.partial(begin, i) for i in range(shape.debates)]
    )
    ramp = time.monotonic() - ramp_started
    start_errors.extend(repr(r) for r in firsts if isinstance(r, BaseException))
    lanes = [
        asyncio.create_task(keep_running(first))
        for first in firsts
        if shape.replace_ended and not isinstance(first, BaseException)
    ]
    await asyncio.sleep(shape.warmup)

    lag = LoopLag()
    lag.start()
    probe = asyncio.create_task(_probe(http, f"{stack.app_url}/healthz"))
    profiler = Profiler(stack.app_pid, profile_to, shape.window) if profile_to else None
    app0, fake0 = stack.app_usage(), processes.usage(stack.fake_pid)
    web0, own0 = processes.usage(stack.app_pid), processes.usage(os.getpid())
    parts0 = stack.process_usages()
    busy0, services0 = processes.cores_busy_seconds(), processes.services_cpu_seconds()
    tap = stack.stream_tap(shape.window)
    samples.open = True
    window_opened = time.monotonic()
    await asyncio.sleep(shape.window)
    samples.open = False
    window_closed = time.monotonic()
    closing.set()
    app1, fake1 = stack.app_usage(), processes.usage(stack.fake_pid)
    web1, own1 = processes.usage(stack.app_pid), processes.usage(os.getpid())
    parts1 = stack.process_usages()
    busy1, services1 = processes.cores_busy_seconds(), processes.services_cpu_seconds()
    lags = await lag.stop()
    probe.cancel()
    probes = (await asyncio.gather(probe, return_exceptions=True))[0]
    probe_times = probes if isinstance(probes, list) else []
    profiled = await profiler.wait() if profiler else False
    tapped = await tap.result() if tap else None

    # A slot may be starting its replacement as the window closes: wait for it, so that
    # debate too is known, and cancelled with every other one still running.
    await asyncio.gather(*lanes, return_exceptions=True)
    ended_at = {d: _ended_at(task) for d, task in primaries.items()}
    running = [d for d, at in ended_at.items() if at is None]
    await _bounded(32, [functools.partial(cancel_debate, http, stack.app_url, d) for d in running])
    results = await _finish(views, limit=60)
    ends = Counter(r.end_status or ("error" if r.error else "open") for r in results)
    elapsed = app1.at - app0.at
    tokens_seen = samples.primary_tokens
    app_cpu = app1.cpu_seconds - app0.cpu_seconds
    return {
        "debates": shape.debates,
        "viewers_per_debate": shape.viewers,
        "rounds": shape.rounds,
        "ramp_seconds": round(ramp, 2),
        "window_seconds": round(elapsed, 2),
        "spread_starts": shape.spread_starts,
        "replace_ended": shape.replace_ended,
        "start_errors": len(start_errors),
        "start_error_examples": start_errors[:3],
        # Every debate started, the replacements of ended ones included, and those whose
        # primary viewer saw the end inside the window (the cancelled ones end after it).
        "debates_started": len(primaries),
        "debates_ended_in_window": sum(
            1 for at in ended_at.values() if at is not None and window_opened <= at < window_closed
        ),
        "stream_ends": dict(ends),
        # Server-sent events (writes, roughly: a batch shares one) each viewer received a
        # second, over its whole connection.
        "events_per_viewer_per_second": _event_rate(results),
        "token_to_viewer": latency_summary(samples.latencies),
        # A cluster's tokens from the fake's stamp to their debate's Redis stream (the
        # workers' side of the latency above), and what reading them took of the cores.
        "token_to_stream": (tapped or {}).get("token_to_stream"),
        "token_to_stream_p99_by_second_ms": (tapped or {}).get("token_to_stream_p99_by_second_ms"),
        "token_to_stream_by_stream_age": (tapped or {}).get("token_to_stream_by_stream_age"),
        "stream_tap_cpu_utilisation": (tapped or {}).get("cpu_utilisation"),
        # The p99 of each second of the window: whether debates ending and starting (a
        # turnover) set the p99.
        "token_to_viewer_p99_by_second_ms": p99_by_second(
            samples.received, samples.latencies, start=window_opened, seconds=shape.window
        ),
        # The same tokens split by their viewer's time connected: whether the p99 is the
        # first seconds of debates just started, or every debate's.
        "token_to_viewer_by_stream_age": by_stream_age(samples.latencies, samples.stream_ages),
        "tokens_streamed_in_window": tokens_seen,
        "tokens_per_second": round(tokens_seen / elapsed, 1) if elapsed else None,
        # The app is the web process plus its provider worker (when it has one).
        "app_cpu_utilisation": round(app_cpu / elapsed, 3) if elapsed else None,
        # Each of the app's processes (web nodes and workers in a cluster), CPU seconds.
        "cpu_seconds_by_process": processes.cpu_seconds_between(parts0, parts1),
        "web_process_cpu_utilisation": round((web1.cpu_seconds - web0.cpu_seconds) / elapsed, 3)
        if elapsed
        else None,
        "fake_cpu_utilisation": round((fake1.cpu_seconds - fake0.cpu_seconds) / elapsed, 3)
        if elapsed
        else None,
        # The viewers and the prober share the machine's cores with the app.
        "clients_cpu_utilisation": round((own1.cpu_seconds - own0.cpu_seconds) / elapsed, 3)
        if elapsed
        else None,
        "app_cpu_seconds_per_1000_tokens": round(app_cpu / tokens_seen * 1000, 4)
        if tokens_seen
        else None,
        # Whether the cores were full, and what besides the app and the bench's own
        # processes took them: the shared services (a cluster's Redis and PostgreSQL).
        "machine_cores_busy": round((busy1 - busy0) / elapsed, 3) if elapsed else None,
        "services_cpu_utilisation": {
            name: round((services1[name] - services0[name]) / elapsed, 3) if elapsed else None
            for name in services0
        },
        "app_rss_mib": round(app1.rss_bytes / 2**20, 1),
        # GET /healthz every 50 ms during the window: when the app's event loop is blocked
        # (synchronous work between awaits), this waits too.
        "app_healthz_p50_ms": ms(percentile(probe_times, 50)),
        "app_healthz_p99_ms": ms(percentile(probe_times, 99)),
        "app_healthz_max_ms": ms(max(probe_times) if probe_times else None),
        "client_loop_lag_p99_ms": ms(percentile(lags, 99)),
        "client_loop_lag_max_ms": ms(max(lags) if lags else None),
        "profiled": profiled,
    }


def _ended_at(view: asyncio.Task[ViewResult]) -> float | None:
    """When the viewer saw its debate's end, if it has."""
    if not view.done() or view.cancelled() or view.exception():
        return None
    return view.result().ended_at


def _event_rate(results: list[ViewResult]) -> float | None:
    rates = [
        r.events / (r.ended_at - r.connected_at)
        for r in results
        if r.ended_at is not None and r.ended_at > r.connected_at
    ]
    return round(sum(rates) / len(rates), 1) if rates else None


async def _probe(http: httpx.AsyncClient, url: str) -> list[float]:
    times: list[float] = []
    try:
        while True:
            started = time.monotonic()
            with contextlib.suppress(httpx.HTTPError):
                await http.get(url)
            times.append(time.monotonic() - started)
            await asyncio.sleep(0.05)
    except asyncio.CancelledError:
        return times


async def _finish(tasks: list[asyncio.Task[T]], *, limit: float) -> list[T]:
    if not tasks:
        return []
    _done, pending = await asyncio.wait(tasks, timeout=limit)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    return [t.result() for t in tasks if t.done() and not t.cancelled() and not t.exception()]


async def app_idle(stack: Stack, http: httpx.AsyncClient, *, limit: float = 60) -> bool:
    """Until the app has no queued or running debate (cancelled ones wind down)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        busy = 0
        for status in ("running", "queued"):
            page = await http.get(f"{stack.app_url}/api/debates", params={"status": status})
            busy += int(page.json()["total"])
        if not busy:
            return True
        await asyncio.sleep(0.5)
    return False


# -- a debate's whole life ---------------------------------------------------------------


async def lifecycle(
    stack: Stack,
    http: httpx.AsyncClient,
    watchers: aiohttp.ClientSession,
    *,
    debates: int,
    viewers: int,
    batches: int,
    paces: dict[str, Pace],
    tokens: int,
    limit: float,
) -> dict[str, Any]:
    """CPU milliseconds per debate of batches of ``debates`` one-round duels started at
    once, each watched to its end by ``viewers``. The replies are a few tokens sent at
    once, so what is measured is what a debate costs besides its tokens: the POST, the
    queue, the saves, opening and closing streams, the final pages and the report. One
    batch first, unmeasured, for one-off costs (imports, pools, templates)."""
    await script_paces(http, stack.fake_url, paces, tokens)
    await _lifecycle_batch(stack, http, watchers, debates=debates, viewers=viewers, limit=limit)
    parts0, services0 = stack.process_usages(), processes.services_cpu_seconds()
    fake0, own0 = processes.usage(stack.fake_pid), processes.usage(os.getpid())
    started = time.monotonic()
    ends: Counter[str] = Counter()
    for _ in range(batches):
        ends.update(
            await _lifecycle_batch(
                stack, http, watchers, debates=debates, viewers=viewers, limit=limit
            )
        )
    elapsed = time.monotonic() - started
    parts1, services1 = stack.process_usages(), processes.services_cpu_seconds()
    fake1, own1 = processes.usage(stack.fake_pid), processes.usage(os.getpid())
    measured = debates * batches
    by_process = processes.cpu_seconds_between(parts0, parts1)
    by_service = {name: services1[name] - services0[name] for name in services0}

    def per_debate(seconds: float) -> float:
        return round(seconds * 1000 / measured, 1)

    return {
        "debates_per_batch": debates,
        "viewers_per_debate": viewers,
        "batches": batches,
        "tokens_per_reply": tokens,
        "seconds_per_batch": round(elapsed / batches, 2),
        # How the measured debates' primary viewers saw them end ("completed" for each, or
        # the measure is not of whole lives).
        "stream_ends": dict(ends),
        "app_cpu_ms_per_debate": per_debate(sum(by_process.values())),
        "cpu_ms_per_debate_by_process": {k: per_debate(v) for k, v in by_process.items()},
        # The machine's own PostgreSQL and Redis (a cluster's storage and events; an
        # in-process app on SQLite uses neither).
        "services_cpu_ms_per_debate": {k: per_debate(v) for k, v in by_service.items()},
        "fake_cpu_ms_per_debate": per_debate(fake1.cpu_seconds - fake0.cpu_seconds),
        "clients_cpu_ms_per_debate": per_debate(own1.cpu_seconds - own0.cpu_seconds),
    }


async def _lifecycle_batch(
    stack: Stack,
    http: httpx.AsyncClient,
    watchers: aiohttp.ClientSession,
    *,
    debates: int,
    viewers: int,
    limit: float,
) -> Counter[str]:
    """Start ``debates`` duels at once, watch each with ``viewers`` until it ends; how the
    primary viewers saw them end."""
    samples = Samples(open=False)

    async def one() -> list[ViewResult]:
        debate_id = await _start_debate(http, stack, topic=_topic("lifecycle"), rounds=1)
        return list(await asyncio.gather(*_views(stack, watchers, samples, debate_id, viewers)))

    outcomes = await asyncio.wait_for(_bounded(debates, [one] * debates), limit)
    return Counter(
        repr(o) if isinstance(o, BaseException) else (o[0].end_status or o[0].error or "open")
        for o in outcomes
    )


# -- memory ----------------------------------------------------------------------------------


async def memory(
    stack: Stack,
    http: httpx.AsyncClient,
    watchers: aiohttp.ClientSession,
    *,
    debates: int,
    viewers: int,
    tokens: int,
    limit: float,
) -> dict[str, Any]:
    """RSS with nothing running, with ``debates`` waiting on their first token (every
    provider call open), and with ``viewers`` connected to each."""
    hold = dict.fromkeys(stack.options.paces, Pace(first_token_delay=limit * 3))
    await script_paces(http, stack.fake_url, hold, tokens)
    await asyncio.sleep(1)
    idle = stack.app_usage()
    ids = [
        r
        for r in await _bounded(
            32,
            [lambda: _start_debate(http, stack, topic=_topic("memory"))] * debates,
        )
        if isinstance(r, str)
    ]
    calls_open = await _wait_for_calls(stack, http, 2 * len(ids), limit)
    await asyncio.sleep(1)
    running = stack.app_usage()
    samples = Samples(open=False)
    connected: list[asyncio.Event] = []
    views: list[asyncio.Task[ViewResult]] = []
    for debate_id in ids:
        for _ in range(viewers):
            event = asyncio.Event()
            connected.append(event)
            views.append(
                asyncio.create_task(
                    watch(
                        watchers,
                        stack.app_url,
                        debate_id,
                        samples,
                        primary=False,
                        stream=stack.options.viewer_stream,
                        first_event=event,
                    )
                )
            )
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.gather(*(e.wait() for e in connected)), limit)
    await asyncio.sleep(1)
    watched = stack.app_usage()
    await _bounded(32, [functools.partial(cancel_debate, http, stack.app_url, d) for d in ids])
    await _finish(views, limit=30)
    n_viewers = sum(e.is_set() for e in connected)
    return {
        "debates": len(ids),
        "provider_calls_open": calls_open,
        "viewers": n_viewers,
        "rss_idle_mib": round(idle.rss_bytes / 2**20, 1),
        "rss_running_mib": round(running.rss_bytes / 2**20, 1),
        "rss_watched_mib": round(watched.rss_bytes / 2**20, 1),
        "kib_per_running_debate": round((running.rss_bytes - idle.rss_bytes) / 1024 / len(ids), 1)
        if ids
        else None,
        "kib_per_viewer": round((watched.rss_bytes - running.rss_bytes) / 1024 / n_viewers, 1)
        if n_viewers
        else None,
    }


async def _wait_for_calls(stack: Stack, http: httpx.AsyncClient, count: int, limit: float) -> int:
    deadline = time.monotonic() + limit
    seen = 0
    while time.monotonic() < deadline:
        seen = sum(
            1
            for r in await recorded_requests(http, stack.fake_url)
            if r["path"] != "/v1/models" and r.get("ended") is None
        )
        if seen >= count:
            break
        await asyncio.sleep(0.5)
    return seen
