"""Summaries of samples: percentiles (nearest rank) in milliseconds, and the critical path
of a debate's provider calls."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000, 1)


def latency_summary(seconds: Sequence[float]) -> dict[str, Any]:
    return {
        "samples": len(seconds),
        "p50_ms": ms(percentile(seconds, 50)),
        "p99_ms": ms(percentile(seconds, 99)),
        "max_ms": ms(max(seconds) if seconds else None),
    }


def p99_by_second(
    received: Sequence[float], latencies: Sequence[float], *, start: float, seconds: float
) -> list[float | None]:
    """The p99 (ms) of the latencies received in each whole second from ``start``, one per
    second of a ``seconds``-long window (None for a second without samples)."""
    buckets: list[list[float]] = [[] for _ in range(max(1, math.ceil(seconds)))]
    for at, latency in zip(received, latencies, strict=True):
        index = math.floor(at - start)
        if 0 <= index < len(buckets):
            buckets[index].append(latency)
    return [ms(percentile(bucket, 99)) for bucket in buckets]


# A stream this young belongs to a debate just started: its first round, while the turnover
# that started it (every other debate's end and start) still has the cores.
YOUNG_STREAM_SECONDS = 2.0


def by_stream_age(
    latencies: Sequence[float],
    ages: Sequence[float],
    *,
    young_seconds: float = YOUNG_STREAM_SECONDS,
) -> dict[str, Any]:
    """The latencies split by how long their stream had run (a viewer's time connected, or
    the time since a debate's first event): the p99 of streams younger than
    ``young_seconds`` (debates that have just started, whose first seconds share the cores
    with every other debate's start and end) and of the older ones, and what share of the
    slowest 1% of all samples the young streams hold."""
    young = [lat for lat, age in zip(latencies, ages, strict=True) if age < young_seconds]
    older = [lat for lat, age in zip(latencies, ages, strict=True) if age >= young_seconds]
    slowest = sorted(zip(latencies, ages, strict=True), reverse=True)[: len(latencies) // 100]
    return {
        "young_seconds": young_seconds,
        "young_samples": len(young),
        "young_p99_ms": ms(percentile(young, 99)),
        "older_samples": len(older),
        "older_p99_ms": ms(percentile(older, 99)),
        "young_share_of_slowest_1_percent": round(
            sum(1 for _, age in slowest if age < young_seconds) / len(slowest), 3
        )
        if slowest
        else None,
    }


def batches(calls: Sequence[tuple[float, float]]) -> list[list[tuple[float, float]]]:
    """Calls grouped into the batches that ran together: a call that starts before every
    call of the current batch has ended belongs to it (the runner starts a batch only after
    the previous one ended, and all of a batch's calls at once)."""
    groups: list[list[tuple[float, float]]] = []
    batch_end = -math.inf
    for start, end in sorted(calls):
        if groups and start < batch_end:
            groups[-1].append((start, end))
            batch_end = max(batch_end, end)
        else:
            groups.append([(start, end)])
            batch_end = end
    return groups


def critical_path(calls: Sequence[tuple[float, float]]) -> float:
    """The slowest call of each batch, summed: the least time the debate could take."""
    return sum(max(end - start for start, end in group) for group in batches(calls))
