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
