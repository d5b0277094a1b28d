"""The cluster's latency split in two: a reader of the debates' Redis streams from outside the
app, timing each token from the fake provider's stamp to its arrival in its debate's stream.

A cluster's token->viewer latency is this (the workers' side: the provider call, the runner's
delta window, publishing) plus the web nodes' side (their reads of the streams, rendering,
the viewers' sockets). The tap runs as a process of its own for the measuring window
(``StreamTap``), reading every stream under the run's key prefix as soon as its entries
arrive, and writes what it measured as JSON: ``python -m bench.stream_tap --help``.

A token's arrival is the instant Redis wrote its entry, read from the entry's id (the
server's clock in milliseconds, on this machine), not the instant the tap read it: the tap
finds the debates started meanwhile by a scan every ``SCAN_SECONDS`` and reads each from its
first entry, so a new debate's first tokens are timed like the rest, however late the scan
found them, and the tap's own delays are not counted. Only tokens written while the tap
reads are counted. Each token's stream age is the time from its stream's first entry (its
debate's first event) to the token's: split by it as the viewers' latencies are
(``bench.stats.by_stream_age``), it shows whether a turnover's new debates are slow already
in the workers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

import redis

from bench import processes
from bench.fake_providers import stamps_in
from bench.stats import by_stream_age, latency_summary, p99_by_second

DELTA = b"delta"
# Debates started meanwhile are found by a scan of the prefix this often.
SCAN_SECONDS = 0.5
READ_BLOCK_MS = 100
# The bus's other keys under the prefix: each stream's live turns and writers, and the
# web nodes' wake streams.
NOT_DEBATE_STREAMS = (":live", ":writers", "wake:")


def debate_streams(client: redis.Redis, prefix: str) -> list[str]:
    found = []
    for raw in client.scan_iter(match=f"{prefix}*", count=1000, _type="stream"):
        key = raw.decode()
        if not any(part in key for part in NOT_DEBATE_STREAMS):
            found.append(key)
    return found


def written_at(entry_id: bytes, *, wall_minus_monotonic: float) -> float:
    """When Redis wrote the entry, on ``time.monotonic()``'s clock (the stamps' clock): its
    id starts with the server's wall-clock milliseconds."""
    return int(entry_id.partition(b"-")[0]) / 1000 - wall_minus_monotonic


def first_entry_at(client: redis.Redis, key: str, *, wall_minus_monotonic: float) -> float:
    """When the stream's first entry (its debate's first event) was written; now when the
    stream is already gone."""
    first = client.xrange(key, count=1)
    if not first:
        return time.monotonic()
    return written_at(first[0][0], wall_minus_monotonic=wall_minus_monotonic)


def tap(redis_url: str, prefix: str, seconds: float) -> dict[str, Any]:
    """Token->stream latencies of every delta written under ``prefix`` from now on, for
    ``seconds`` (the streams already there are read from their end, those found later from
    their start)."""
    client = redis.Redis.from_url(redis_url)
    positions: dict[str, str] = {}
    started: dict[str, float] = {}  # each stream's first entry, on the stamps' clock
    latencies: list[float] = []
    arrivals: list[float] = []
    ages: list[float] = []
    wall_minus_monotonic = time.time() - time.monotonic()
    began = time.monotonic()
    deadline = began + seconds
    cpu_before = time.process_time()
    scanned = 0.0
    try:
        while (now := time.monotonic()) < deadline:
            if now - scanned >= SCAN_SECONDS:
                start = "0-0" if scanned else "$"
                for key in debate_streams(client, prefix):
                    if key not in positions:
                        positions[key] = start
                        started[key] = first_entry_at(
                            client, key, wall_minus_monotonic=wall_minus_monotonic
                        )
                scanned = now
            if not positions:
                time.sleep(READ_BLOCK_MS / 1000)
                continue
            reply = client.xread(positions, block=READ_BLOCK_MS)  # type: ignore[arg-type]
            for key, entries in reply or []:
                name = key.decode()
                for entry_id, fields in entries:
                    positions[name] = entry_id.decode()
                    if fields.get(b"type") != DELTA:
                        continue
                    arrived = written_at(entry_id, wall_minus_monotonic=wall_minus_monotonic)
                    if not began <= arrived < deadline:
                        continue
                    age = arrived - started[name]
                    for stamp in stamps_in(fields[b"data"].decode()):
                        latencies.append(arrived - stamp)
                        arrivals.append(arrived)
                        ages.append(age)
    finally:
        client.close()
    return {
        "streams": len(positions),
        "token_to_stream": latency_summary(latencies),
        "token_to_stream_p99_by_second_ms": p99_by_second(
            arrivals, latencies, start=began, seconds=seconds
        ),
        # Split by the time since the debate's first event: whether a turnover's new
        # debates are slow already in the workers, before any web node reads them.
        "token_to_stream_by_stream_age": by_stream_age(latencies, ages),
        # The tap shares the cores with the app: what it took of them.
        "cpu_utilisation": round((time.process_time() - cpu_before) / seconds, 3),
    }


class StreamTap:
    """``tap`` in a process of its own (the viewers' event loop is not to share the
    interpreter with it), for one measuring window."""

    def __init__(self, *, redis_url: str, prefix: str, seconds: float, home: Path) -> None:
        self.out = home / "stream-tap.json"
        args = [
            *("--redis-url", redis_url, "--prefix", prefix),
            *("--seconds", str(seconds), "--out", str(self.out)),
        ]
        self.process = processes.spawn(
            processes.python("-m", "bench.stream_tap", *args), log=home / "stream-tap.log"
        )

    async def result(self, *, limit: float = 30.0) -> dict[str, Any] | None:
        """What the tap measured; None if it failed or outlived the window by ``limit``."""
        try:
            await asyncio.wait_for(asyncio.to_thread(self.process.wait), limit)
        except TimeoutError:
            processes.stop(self.process)
            return None
        if self.process.returncode != 0 or not self.out.exists():
            return None
        result: dict[str, Any] = json.loads(self.out.read_text())
        return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.stream_tap", description=__doc__)
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--prefix", required=True, help="the run's ARGUE_REDIS_KEY_PREFIX")
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--out", type=Path, required=True, help="where the JSON result goes")
    args = parser.parse_args(argv)
    args.out.write_text(json.dumps(tap(args.redis_url, args.prefix, args.seconds)))


if __name__ == "__main__":
    main()
