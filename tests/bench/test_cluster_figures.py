"""The cluster figures the benchmark prints: CPU per 1,000 tokens of the workers and the web
nodes, debates per core, the Redis latency beside the in-process one, and the workers'
concurrency; and the ``--cluster`` option's checks."""

from __future__ import annotations

from typing import Any

import pytest

from bench.__main__ import parse_args
from bench.cluster import worker_concurrency
from bench.report import CpuCost, repeated_comparison, repeated_table, rows


def latency_step(**overrides: Any) -> dict[str, Any]:
    step: dict[str, Any] = {
        "debates": 10,
        "viewers_per_debate": 3,
        "window_seconds": 10.0,
        "tokens_streamed_in_window": 5000,
        "token_to_viewer": {"samples": 15000, "p50_ms": 40.0, "p99_ms": 90.0, "max_ms": 120.0},
        "app_healthz_p99_ms": 5.0,
        "app_cpu_seconds_per_1000_tokens": 1.4,
        "cpu_seconds_by_process": {"web a": 1.2, "web b": 0.8, "worker 1": 2.0, "worker 2": 3.0},
    }
    step.update(overrides)
    return step


def cluster_result(in_process_p99: float | None) -> dict[str, Any]:
    result: dict[str, Any] = {
        "cluster": {"web_nodes": 2, "workers": 2, "worker_concurrency": 16},
        "latency": latency_step(),
    }
    if in_process_p99 is not None:
        result["in_process"] = {"latency": latency_step(token_to_viewer={"p99_ms": in_process_p99})}
    return result


def row_value(result: dict[str, Any], starts: str) -> tuple[str, str]:
    found = [r for r in rows(result) if r.figure.strip().startswith(starts)]
    assert len(found) == 1, [r.figure for r in rows(result)]
    return found[0].value, found[0].verdict


def test_cpu_is_split_between_workers_and_web_nodes_per_1000_tokens() -> None:
    cost = CpuCost.of(latency_step())
    assert cost is not None
    assert cost.per_1000_tokens(sum(cost.worker_cpu.values())) == pytest.approx(1.0)
    assert cost.per_1000_tokens(sum(cost.web_cpu.values())) == pytest.approx(0.4)
    assert cost.tokens_per_second_per_debate == pytest.approx(50.0)


def test_debates_per_core_is_one_over_the_cpu_seconds_a_debate_takes_each_second() -> None:
    cost = CpuCost.of(latency_step())
    assert cost is not None
    # 10 debates used 5 worker CPU seconds in 10 s: 0.05 CPU s per second each, 20 per core.
    assert cost.debates_per_core(5.0) == pytest.approx(20.0)
    assert cost.debates_per_core(0.0) is None
    assert row_value(cluster_result(None), "debates per core, workers only") == ("20.0", "")
    # Every process (workers 5 s, web nodes 2 s): 10 * 10 / 7.
    assert row_value(cluster_result(None), "debates per core, every app process")[0] == "14.3"


def test_each_worker_shows_its_utilisation_and_share() -> None:
    assert row_value(cluster_result(None), "worker 2:") == ("0.3, 60.0%", "")
    assert row_value(cluster_result(None), "web a:") == ("0.12", "")


def test_redis_latency_passes_within_15_ms_of_the_in_process_figure() -> None:
    assert row_value(cluster_result(80.0), "token->viewer p99 through Redis") == ("10.0 ms", "PASS")
    assert row_value(cluster_result(70.0), "token->viewer p99 through Redis") == ("20.0 ms", "MISS")
    figures = [r.figure for r in rows(cluster_result(None))]
    assert not any("through Redis" in figure for figure in figures)


def test_repeated_comparisons_are_judged_on_the_median_difference() -> None:
    # Cluster p99 90 ms each time; in-process 80, 50 and 85: differences 10, 40 and 5.
    results = {f"run{n}": cluster_result(p99) for n, p99 in enumerate((80.0, 50.0, 85.0))}
    summary = repeated_comparison(results)
    assert [p["difference_ms"] for p in summary["pairs"]] == [10.0, 40.0, 5.0]
    assert summary["median_difference_ms"] == 10.0
    assert summary["pairs_within_target"] == 2
    printed = repeated_table(summary)
    assert "run1: 90.0 - 50.0 = 40.0 ms" in printed
    assert "median difference of 3 pairs: 10.0 ms (target <= 15 ms: PASS; 2 of 3" in printed

    results["run3"] = cluster_result(60.0)  # 30 ms: the median of 5, 10, 30, 40 is 20
    assert "20.0 ms (target <= 15 ms: MISS; 2 of 4" in repeated_table(repeated_comparison(results))


def test_a_pair_without_its_in_process_run_is_listed_but_not_counted() -> None:
    summary = repeated_comparison({"a": cluster_result(None), "b": cluster_result(100.0)})
    assert summary["pairs"][0]["difference_ms"] is None
    assert summary["median_difference_ms"] == -10.0
    assert "a: 90.0 - n/a = n/a" in repeated_table(summary)


def test_repeat_needs_a_comparison_to_repeat(capsys: pytest.CaptureFixture[str]) -> None:
    assert parse_args(["--cluster", "1", "--compare", "--repeat", "5"]).repeat == 5
    assert parse_args([]).repeat == 1
    for alone in (["--repeat", "3"], ["--cluster", "1", "--repeat", "3"]):
        with pytest.raises(SystemExit):
            parse_args(alone)
        assert "--repeat needs --cluster and --compare" in capsys.readouterr().err


def test_a_run_without_per_process_cpu_prints_no_cost_rows() -> None:
    result = cluster_result(None)
    del result["latency"]["cpu_seconds_by_process"]
    figures = [r.figure for r in rows(result)]
    assert not any("per core" in figure or "workers' CPU" in figure for figure in figures)


def test_workers_take_a_quarter_more_than_their_share_of_the_largest_step() -> None:
    assert worker_concurrency(600, 2) == 375
    assert worker_concurrency(25, 4) == 8
    assert worker_concurrency(1, 8) == 4  # never fewer than the app's default
    assert worker_concurrency(5000, 1) == 1000  # the most the app accepts


def test_cluster_needs_at_least_one_worker(capsys: pytest.CaptureFixture[str]) -> None:
    assert parse_args(["--cluster", "3"]).cluster == 3
    assert parse_args([]).cluster is None
    for wrong in ("0", "-1", "two"):
        with pytest.raises(SystemExit):
            parse_args(["--cluster", wrong])
        assert "at least 1" in capsys.readouterr().err


def test_a_cluster_scale_step_shows_the_workers_and_the_web_nodes_apart() -> None:
    step = latency_step(
        app_cpu_utilisation=0.7,
        web_process_cpu_utilisation=0.12,
        fake_cpu_utilisation=0.1,
        clients_cpu_utilisation=0.2,
    )
    scale = {
        "viewers_per_debate": 3,
        "p99_limit_ms": 250.0,
        "target_debates": 200,
        "largest_passing": 10,
        "steps": [step],
    }
    result = {**cluster_result(None), "scale": scale}
    assert row_value(result, "CPU utilisation: workers/web nodes") == ("0.5/0.2", "")
    del result["cluster"]
    assert not any("workers/web nodes" in r.figure for r in rows(result))


def test_the_report_says_how_busy_the_cores_were_and_who_kept_them_busy() -> None:
    busy = {
        "machine_cores_busy": 1.93,
        "app_cpu_utilisation": 1.2,
        "fake_cpu_utilisation": 0.15,
        "clients_cpu_utilisation": 0.2,
        "services_cpu_utilisation": {"Redis": 0.11, "PostgreSQL": 0.08},
    }
    result = cluster_result(in_process_p99=60.0)
    result["machine"] = {"cpus": "2"}
    result["latency"].update(busy)
    result["in_process"]["latency"].update(busy, machine_cores_busy=1.4)
    who = "cores busy of 2 (app / fakes / viewers / Redis / PostgreSQL)"
    cluster = row_value(result, f"{who}, 10 duels x 3 viewers")[0]
    assert cluster == "1.93 (1.2 / 0.15 / 0.2 / 0.11 / 0.08)"
    in_process = row_value(result, f"{who}, in-process, 10 duels x 3 viewers")[0]
    assert in_process == "1.4 (1.2 / 0.15 / 0.2 / 0.11 / 0.08)"


def test_a_result_without_the_machine_readings_has_no_cores_row() -> None:
    assert not [r for r in rows(cluster_result(in_process_p99=60.0)) if "cores busy" in r.figure]
