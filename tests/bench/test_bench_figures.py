"""The benchmark's arithmetic: the critical path it divides by, the percentiles it reports,
and the paces it gives the fake providers."""

from __future__ import annotations

import argparse

import pytest

from bench.fake_providers import (
    REALISTIC_TOKENS_PER_CHUNK,
    STAMP_PATTERN,
    Pace,
    paces_from,
    parse_pace,
    realistic_paces,
)
from bench.stats import batches, critical_path, latency_summary, percentile


def test_critical_path_sums_the_slowest_call_of_each_batch() -> None:
    calls = [
        (0.0, 2.0),  # opening: two calls together
        (0.1, 3.0),
        (3.2, 4.0),  # rebuttal: one call
        (4.1, 5.0),  # a batch of three
        (4.1, 7.5),
        (4.2, 6.0),
    ]
    assert [len(group) for group in batches(calls)] == [2, 1, 3]
    assert critical_path(calls) == pytest.approx(2.9 + 0.8 + 3.4)


def test_a_call_that_starts_after_the_batch_ended_opens_the_next_batch() -> None:
    assert len(batches([(0.0, 1.0), (1.0, 2.0)])) == 2
    assert len(batches([(0.0, 1.0), (0.99, 2.0)])) == 1


def test_percentiles_are_nearest_rank_and_reported_in_milliseconds() -> None:
    samples = [i / 1000 for i in range(1, 101)]  # 1 … 100 ms
    assert percentile(samples, 50) == 0.05
    assert percentile(samples, 99) == 0.099
    assert percentile([], 99) is None
    assert latency_summary(samples) == {
        "samples": 100,
        "p50_ms": 50.0,
        "p99_ms": 99.0,
        "max_ms": 100.0,
    }


def test_a_pace_names_delay_rate_and_tokens_per_chunk() -> None:
    assert parse_pace("gemini=0.8:40:10") == ("gemini", Pace(0.8, 40.0, 10))
    assert parse_pace("all=0.5:50") == ("all", Pace(0.5, 50.0, 1))
    for wrong in ("gemini", "gemini=0.5", "mistral=0.5:50"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_pace(wrong)


def test_providers_stream_as_their_apis_do_unless_told_otherwise() -> None:
    defaults = realistic_paces(0.5, 50.0)
    assert {name: pace.tokens_per_chunk for name, pace in defaults.items()} == (
        REALISTIC_TOKENS_PER_CHUNK
    )
    one_provider = paces_from([("anthropic", Pace(1.0, 20.0, 2))], defaults)
    assert one_provider["anthropic"] == Pace(1.0, 20.0, 2)
    assert one_provider["gemini"] == defaults["gemini"]
    every_token = paces_from([("all", Pace(0.5, 50.0, 1))], defaults)
    assert {pace.tokens_per_chunk for pace in every_token.values()} == {1}


def test_a_reply_is_cut_into_stamped_chunks_at_the_pace() -> None:
    pace = Pace(0.5, 50.0, 3)
    chunks = pace.chunks(100)
    stamps = [len(STAMP_PATTERN.findall(chunk.replace("@@NOW@@", "1.5"))) for chunk in chunks]
    assert stamps == [3] * 33 + [1]
    assert pace.chunk_delay == pytest.approx(0.06)
