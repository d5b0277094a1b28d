"""The load scenario can keep its debates running the way an outside harness does: all
started at once, and each one that ends replaced at once by a new duel with its viewers,
so debates end and start inside the measuring window; every replacement is counted, and
every debate still running when the window closes is cancelled."""

from __future__ import annotations

import pytest

from bench import clients, scenarios
from bench.__main__ import FULL, latency_shape, parse_args
from bench.fake_providers import Pace
from bench.stack import Stack, StackOptions
from bench.stats import by_stream_age, p99_by_second
from tests.bench.test_cluster_figures import latency_step, row_value

FAST = Pace(first_token_delay=0.05, tokens_per_second=100.0, tokens_per_chunk=1)
TOKENS = 12


async def test_ended_debates_are_replaced_counted_and_the_rest_cancelled() -> None:
    stack = Stack(
        StackOptions(
            paces=dict.fromkeys(("anthropic", "gemini", "openai"), FAST),
            tokens=TOKENS,
            history_debates=0,
            provider_worker=False,
        )
    )
    shape = scenarios.LoadShape(
        debates=2,
        viewers=1,
        rounds=1,
        warmup=0.5,
        window=3.0,
        spread_starts=False,
        replace_ended=True,
    )
    try:
        stack.start()
        async with clients.client() as http, clients.viewer_session() as watchers:
            result = await scenarios.load(
                stack, http, watchers, shape, paces=stack.options.paces, tokens=TOKENS
            )
            idle = await scenarios.app_idle(stack, http, limit=20)
    finally:
        stack.stop()

    assert result["start_errors"] == 0, result["start_error_examples"]
    assert result["debates_started"] > shape.debates
    assert result["debates_ended_in_window"] >= 1
    ends = result["stream_ends"]
    # One viewer each: every debate started, replacements included, was watched to its end:
    # completed, or cancelled when the window closed (at most one per slot).
    assert sum(ends.values()) == result["debates_started"], ends
    assert ends.get("completed", 0) >= result["debates_started"] - shape.debates, ends
    assert set(ends) <= {"completed", "cancelled"}, ends
    assert idle  # no queued or running debate left
    assert len(result["token_to_viewer_p99_by_second_ms"]) == 3
    ages = result["token_to_viewer_by_stream_age"]
    # Every sample is in one of the two parts; the replacements' streams are young ones.
    assert ages["young_samples"] + ages["older_samples"] == result["token_to_viewer"]["samples"]
    assert ages["young_samples"] > 0
    assert result["tokens_streamed_in_window"] > 0


def test_p99_by_second_buckets_samples_by_when_they_arrived() -> None:
    received = [10.1, 10.5, 11.2, 12.9, 13.0, 9.9]
    latencies = [0.010, 0.030, 0.020, 0.200, 0.5, 0.7]
    # 13.0 and 9.9 are outside a 3-second window from 10.0.
    assert p99_by_second(received, latencies, start=10.0, seconds=3.0) == [30.0, 20.0, 200.0]
    assert p99_by_second([], [], start=0.0, seconds=2.0) == [None, None]


def test_samples_split_by_stream_age_say_where_the_slowest_tokens_are() -> None:
    # 200 samples: 190 quick ones from old streams, 10 slow ones, 2 of them from streams
    # younger than the split.
    latencies = [0.05] * 190 + [0.3] * 8 + [0.4, 0.5]
    ages = [10.0] * 190 + [5.0] * 8 + [0.5, 1.5]
    split = by_stream_age(latencies, ages, young_seconds=2.0)
    assert split["young_samples"] == 2 and split["older_samples"] == 198
    assert split["young_p99_ms"] == 500.0
    assert split["older_p99_ms"] == 300.0
    # The slowest 1% (two samples) are both the young streams'.
    assert split["young_share_of_slowest_1_percent"] == 1.0
    assert by_stream_age([], [], young_seconds=2.0)["young_share_of_slowest_1_percent"] is None


def test_the_report_shows_the_young_and_older_streams_p99_and_the_young_share() -> None:
    split = {
        "young_seconds": 2.0,
        "young_p99_ms": 126.7,
        "older_p99_ms": 70.2,
        "young_share_of_slowest_1_percent": 0.845,
    }
    latency = latency_step(
        debates_started=150,
        debates_ended_in_window=100,
        token_to_viewer_p99_by_second_ms=[68.0, 190.0],
        token_to_viewer_by_stream_age=split,
    )
    value, verdict = row_value(
        {"latency": latency}, "token->viewer p99, streams in their first 2 s"
    )
    assert (value, verdict) == ("126.7 ms / 70.2 ms (0.845)", "")


def test_samples_remember_how_long_their_viewer_had_been_connected() -> None:
    samples = clients.Samples()
    samples.add(12.0, [11.95, 11.9], primary=True, connected_at=10.5)
    assert samples.stream_ages == [1.5, 1.5]
    assert samples.latencies == pytest.approx([0.05, 0.1])


@pytest.mark.parametrize(
    ("argv", "spread", "replace", "rounds"),
    [
        ([], False, True, 4),
        (["--no-replace-ended"], False, False, 8),
        (["--spread-starts", "--latency-rounds", "6"], True, True, 6),
    ],
)
def test_the_latency_scenario_starts_at_once_and_replaces_ended_debates_by_default(
    argv: list[str], spread: bool, replace: bool, rounds: int
) -> None:
    shape = latency_shape(parse_args(argv), FULL)
    assert (shape.spread_starts, shape.replace_ended, shape.rounds) == (spread, replace, rounds)
    assert shape.window == 20.0
    assert (shape.debates, shape.viewers) == (50, 3)
