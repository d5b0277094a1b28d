"""The figures people read: a table of measured values beside their targets (PASS/MISS),
and the whole result written as JSON.

For a cluster run (``--cluster W``) the table adds what the cluster costs: CPU seconds per
1,000 tokens of the workers and of the web nodes, measured per process over the latency
window, and the debates one core carries at that pace (1 / the CPU seconds per second one
debate takes); the workers' side of the latency (token to Redis stream, ``bench.stream_tap``);
with ``--compare``, the in-process latency beside the cluster's; with ``--repeat N``, the
differences of the N pairs and the target judged on their median (``repeated_comparison``).
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Row:
    figure: str
    value: str
    target: str = ""
    passed: bool | None = None

    @property
    def verdict(self) -> str:
        return "" if self.passed is None else ("PASS" if self.passed else "MISS")


# The cluster's token->viewer p99 may be at most this much above the in-process app's.
REDIS_EXTRA_TARGET_MS = 15


def _fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        value = f"{value:.3f}".rstrip("0").rstrip(".") if abs(value) < 10 else f"{value:.1f}"
    return f"{value}{unit}"


def _le(value: Any, limit: float) -> bool | None:
    return None if value is None else bool(value <= limit)


@dataclass(frozen=True)
class CpuCost:
    """What a load step's debates cost in CPU, split between a cluster's workers and web
    nodes (the in-process app is all "web": its web process and provider worker)."""

    debates: int
    seconds: float
    tokens: int
    worker_cpu: dict[str, float]  # CPU seconds in the window, by worker process
    web_cpu: dict[str, float]

    @classmethod
    def of(cls, step: dict[str, Any]) -> CpuCost | None:
        by_process: dict[str, float] = step.get("cpu_seconds_by_process") or {}
        if not by_process or not step.get("window_seconds"):
            return None
        return cls(
            debates=int(step["debates"]),
            seconds=float(step["window_seconds"]),
            tokens=int(step["tokens_streamed_in_window"]),
            worker_cpu={k: v for k, v in by_process.items() if k.startswith("worker")},
            web_cpu={k: v for k, v in by_process.items() if not k.startswith("worker")},
        )

    def per_1000_tokens(self, cpu_seconds: float) -> float | None:
        return cpu_seconds / self.tokens * 1000 if self.tokens else None

    def debates_per_core(self, cpu_seconds: float) -> float | None:
        """1 / (CPU seconds one debate takes per second), at the measured pace."""
        return self.debates * self.seconds / cpu_seconds if cpu_seconds > 0 else None

    @property
    def tokens_per_second_per_debate(self) -> float:
        return self.tokens / self.seconds / self.debates


def _cores_row(result: dict[str, Any], latency: dict[str, Any], shape: str) -> Row | None:
    """How busy the machine's cores were over the window, and who kept them busy: full
    cores, not the app's own work, are what a latency past its target then measures."""
    busy = latency.get("machine_cores_busy")
    if busy is None:
        return None
    services = latency.get("services_cpu_utilisation") or {}
    parts = [
        ("app", latency.get("app_cpu_utilisation")),
        ("fakes", latency.get("fake_cpu_utilisation")),
        ("viewers", latency.get("clients_cpu_utilisation")),
        *((name, services.get(name)) for name in ("Redis", "PostgreSQL")),
    ]
    cpus = (result.get("machine") or {}).get("cpus", "?")
    return Row(
        f"cores busy of {cpus} ({' / '.join(name for name, _ in parts)}), {shape}",
        f"{_fmt(busy)} ({' / '.join(_fmt(value) for _, value in parts)})",
    )


def _cluster_rows(result: dict[str, Any], latency: dict[str, Any]) -> list[Row]:
    out: list[Row] = []
    shape = f"{latency['debates']} duels x {latency['viewers_per_debate']} viewers"
    in_process = (result.get("in_process") or {}).get("latency", {})
    there = in_process.get("token_to_viewer", {})
    if there:
        out.append(Row(f"in-process token->viewer p99, {shape}", _fmt(there.get("p99_ms"), " ms")))
        cores = _cores_row(result, in_process, f"in-process, {shape}")
        if cores is not None:
            out.append(cores)
        extra = _redis_extra_ms(result)
        out.append(
            Row(
                f"token->viewer p99 through Redis minus in-process, {shape}",
                _fmt(extra, " ms"),
                f"<= {REDIS_EXTRA_TARGET_MS} ms",
                _le(extra, REDIS_EXTRA_TARGET_MS),
            )
        )
    stream = latency.get("token_to_stream") or {}
    if stream:
        out.append(
            Row(
                f"token->Redis stream p50 / p99 (workers' side), {shape}",
                f"{_fmt(stream.get('p50_ms'))} / {_fmt(stream.get('p99_ms'), ' ms')}",
            )
        )
    if ages := latency.get("token_to_stream_by_stream_age"):
        out.append(_by_age_row("token->Redis stream", ages, shape))
    cost = CpuCost.of(latency)
    if cost is None:
        return out
    workers = sum(cost.worker_cpu.values())
    web = sum(cost.web_cpu.values())
    pace = f"{cost.tokens_per_second_per_debate:.0f} tokens/s per duel"
    out.append(
        Row(
            f"workers' CPU s per 1,000 tokens (all workers' CPU / tokens), {shape}",
            _fmt(cost.per_1000_tokens(workers)),
        )
    )
    for name, seconds in cost.worker_cpu.items():
        share = seconds / workers * 100 if workers else None
        out.append(
            Row(
                f"  {name}: CPU utilisation, share of the workers' CPU",
                f"{_fmt(seconds / cost.seconds)}, {_fmt(share, '%')}",
            )
        )
    out.append(
        Row(
            f"web nodes' CPU s per 1,000 tokens ({latency['viewers_per_debate']} viewers each)",
            _fmt(cost.per_1000_tokens(web)),
        )
    )
    for name, seconds in cost.web_cpu.items():
        out.append(Row(f"  {name}: CPU utilisation", _fmt(seconds / cost.seconds)))
    out.append(
        Row(f"debates per core, workers only ({pace})", _fmt(cost.debates_per_core(workers)))
    )
    return out


def _lifecycle_rows(life: dict[str, Any], in_process: dict[str, Any] | None) -> list[Row]:
    """A debate's whole life in CPU: the app's processes, then the shared services; beside
    the in-process app's figure when it was run to compare."""
    shape = (
        f"{life['debates_per_batch']} one-round duels at once x "
        f"{life['viewers_per_debate']} viewers"
    )
    services = life.get("services_cpu_ms_per_debate") or {}
    total = _life_total(life)
    out = [
        Row(f"lifecycle: how the debates ended, {shape}", _ends(life["stream_ends"])),
        Row(
            f"CPU ms per debate's life, app processes, {shape}", _fmt(life["app_cpu_ms_per_debate"])
        ),
    ]
    out.extend(
        Row(f"  {name}", _fmt(value))
        for name, value in life["cpu_ms_per_debate_by_process"].items()
    )
    out.extend(Row(f"  {name} (the machine's)", _fmt(value)) for name, value in services.items())
    out.append(Row("CPU ms per debate's life, app processes and services", _fmt(total)))
    if in_process:
        there = _life_total(in_process)
        out.append(Row("  the same, in-process", _fmt(there)))
        out.append(Row("  cluster minus in-process", _fmt(total - there)))
    return out


def _life_total(life: dict[str, Any]) -> float:
    """CPU ms per debate of the app's processes and the shared services together."""
    services = life.get("services_cpu_ms_per_debate") or {}
    return float(life["app_cpu_ms_per_debate"] + sum(services.values()))


def _ends(ends: dict[str, int]) -> str:
    return ", ".join(f"{count} {status}" for status, count in sorted(ends.items()))


def rows(result: dict[str, Any]) -> list[Row]:
    out: list[Row] = []
    cluster = result.get("cluster")
    if cluster:
        out.append(
            Row(
                "cluster: web nodes x workers (debates each worker runs at once)",
                f"{cluster['web_nodes']} x {cluster['workers']} ({cluster['worker_concurrency']})",
            )
        )
    for item in result.get("overhead", []):
        out.append(
            Row(
                f"overhead, {item['rounds']}-round {item['format']} "
                f"({item['batches']} batches, critical path {item['critical_path_seconds']} s)",
                _fmt(item["overhead_ratio"], "x"),
                "<= 1.03x",
                _le(item["overhead_ratio"], 1.03),
            )
        )
    cold = result.get("overhead_cold")
    if cold:
        out.append(
            Row(
                "cold start: first debate, POST -> first provider call",
                _fmt(cold[0]["from_post_to_first_call_ms"], " ms"),
            )
        )
    latency = result.get("latency")
    if latency:
        t = latency["token_to_viewer"]
        shape = f"{latency['debates']} duels x {latency['viewers_per_debate']} viewers"
        out.append(Row(f"token->viewer p50, {shape}", _fmt(t["p50_ms"], " ms")))
        out.append(
            Row(
                f"token->viewer p99, {shape}",
                _fmt(t["p99_ms"], " ms"),
                "<= 100 ms",
                _le(t["p99_ms"], 100),
            )
        )
        out.append(Row(f"token->viewer max, {shape}", _fmt(t["max_ms"], " ms")))
        if "debates_started" in latency:
            by_second = [v for v in latency.get("token_to_viewer_p99_by_second_ms", []) if v]
            out.append(
                Row(
                    f"debates started (replacements included) / ended in window, {shape}",
                    f"{latency['debates_started']} / {latency['debates_ended_in_window']}",
                )
            )
            out.append(
                Row(
                    f"token->viewer p99 of the worst second of the window, {shape}",
                    _fmt(max(by_second) if by_second else None, " ms"),
                )
            )
            if ages := latency.get("token_to_viewer_by_stream_age"):
                out.append(_by_age_row("token->viewer", ages, shape))
        out.append(
            Row(
                f"app GET /healthz p99 meanwhile (event-loop stalls), {shape}",
                _fmt(latency["app_healthz_p99_ms"], " ms"),
            )
        )
        out.append(
            Row(
                f"app CPU s per 1,000 tokens, {shape}",
                _fmt(latency["app_cpu_seconds_per_1000_tokens"]),
            )
        )
        cores = _cores_row(result, latency, shape)
        if cores is not None:
            out.append(cores)
        cost = CpuCost.of(latency)
        if cost is not None:
            everything = sum(cost.worker_cpu.values()) + sum(cost.web_cpu.values())
            out.append(
                Row(
                    f"debates per core, every app process, {shape} "
                    f"({cost.tokens_per_second_per_debate:.0f} tokens/s per duel)",
                    _fmt(cost.debates_per_core(everything)),
                )
            )
        if cluster:
            out.extend(_cluster_rows(result, latency))
    scale = result.get("scale")
    if scale:
        best = scale.get("largest_passing")
        out.append(
            Row(
                f"scale: most concurrent duels, {scale['viewers_per_debate']} viewers each, "
                f"p99 < {scale['p99_limit_ms']:.0f} ms",
                _fmt(best),
                f">= {scale['target_debates']}",
                None if not scale["steps"] else (best or 0) >= scale["target_debates"],
            )
        )
        for step in scale["steps"]:
            t = step["token_to_viewer"]
            out.append(
                Row(
                    f"  {step['debates']} duels: p50/p99/max ms, CPU app (web)/fake/clients, "
                    "app CPU s/1k tokens",
                    f"{_fmt(t['p50_ms'])}/{_fmt(t['p99_ms'])}/{_fmt(t['max_ms'])}, "
                    f"{_fmt(step['app_cpu_utilisation'])} "
                    f"({_fmt(step.get('web_process_cpu_utilisation'))})/"
                    f"{_fmt(step['fake_cpu_utilisation'])}/"
                    f"{_fmt(step.get('clients_cpu_utilisation'))}, "
                    f"{_fmt(step['app_cpu_seconds_per_1000_tokens'])}",
                )
            )
            cost = CpuCost.of(step) if cluster else None
            if cost is not None:  # in a cluster, "(web)" above is node A alone
                out.append(
                    Row(
                        "    CPU utilisation: workers/web nodes",
                        f"{_fmt(sum(cost.worker_cpu.values()) / cost.seconds)}/"
                        f"{_fmt(sum(cost.web_cpu.values()) / cost.seconds)}",
                    )
                )
    life = result.get("lifecycle")
    if life:
        out.extend(_lifecycle_rows(life, (result.get("in_process") or {}).get("lifecycle")))
    mem = result.get("memory")
    if mem:
        out.append(Row("memory per running debate", _fmt(mem["kib_per_running_debate"], " KiB")))
        out.append(Row("memory per viewer", _fmt(mem["kib_per_viewer"], " KiB")))
    hist = result.get("history")
    if hist:
        label = f"history page GET /debates, {hist['stored_debates']:,} debates"
        out.append(Row(f"{label}: requests/s", _fmt(hist["requests_per_second"])))
        out.append(
            Row(
                f"{label}: p99",
                _fmt(hist["p99_ms"], " ms"),
                "<= 50 ms",
                _le(hist["p99_ms"], 50),
            )
        )
    return out


def table(result: dict[str, Any]) -> str:
    lines = rows(result)
    widths = [
        max([len(r.figure) for r in lines] + [6]),
        max([len(r.value) for r in lines] + [5]),
        max([len(r.target) for r in lines] + [6]),
    ]
    header = f"{'figure':<{widths[0]}}  {'value':>{widths[1]}}  {'target':<{widths[2]}}  result"
    body = [
        f"{r.figure:<{widths[0]}}  {r.value:>{widths[1]}}  {r.target:<{widths[2]}}  {r.verdict}"
        for r in lines
    ]
    return "\n".join([header, "-" * len(header), *body])


def _redis_extra_ms(result: dict[str, Any]) -> float | None:
    """The cluster's token->viewer p99 minus the in-process app's (``--compare``)."""
    return _difference(*_p99s(result))


def _difference(here: float | None, there: float | None) -> float | None:
    """``here - there``; None when either is missing."""
    return None if here is None or there is None else round(here - there, 1)


def _p99s(result: dict[str, Any]) -> tuple[float | None, float | None]:
    """A ``--compare`` run's token->viewer p99: the cluster's, the in-process app's."""
    in_process = (result.get("in_process") or {}).get("latency") or {}
    return (
        ((result.get("latency") or {}).get("token_to_viewer") or {}).get("p99_ms"),
        (in_process.get("token_to_viewer") or {}).get("p99_ms"),
    )


def repeated_comparison(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``--repeat N``: each pair's p99s and their difference (by the stamp that names its
    results file), and the median difference, on which the target is judged. One pair's
    difference moves by tens of milliseconds from run to run on a machine whose two cores
    are full; the median of pairs run one after another keeps a slow minute of the machine
    from deciding it."""
    pairs = []
    for stamp, result in results.items():
        cluster, in_process = _p99s(result)
        pairs.append(
            {
                "results": stamp,
                "cluster_p99_ms": cluster,
                "in_process_p99_ms": in_process,
                "difference_ms": _difference(cluster, in_process),
            }
        )
    differences = [p["difference_ms"] for p in pairs if p["difference_ms"] is not None]
    median = round(statistics.median(differences), 1) if differences else None
    return {
        "pairs": pairs,
        "median_difference_ms": median,
        "target_ms": REDIS_EXTRA_TARGET_MS,
        "pairs_within_target": sum(1 for d in differences if d <= REDIS_EXTRA_TARGET_MS),
    }


def repeated_table(summary: dict[str, Any]) -> str:
    """The pairs of ``repeated_comparison`` one per line, then the verdict on the median."""
    target = summary["target_ms"]
    lines = [
        "token->viewer p99 through Redis minus in-process, pair by pair "
        "(cluster - in-process = difference):"
    ]
    for pair in summary["pairs"]:
        lines.append(
            f"  {pair['results']}: {_fmt(pair['cluster_p99_ms'])} - "
            f"{_fmt(pair['in_process_p99_ms'])} = {_fmt(pair['difference_ms'], ' ms')}"
        )
    median = summary["median_difference_ms"]
    verdict = {None: "n/a", True: "PASS", False: "MISS"}[_le(median, target)]
    lines.append(
        f"median difference of {len(summary['pairs'])} pairs: {_fmt(median, ' ms')} "
        f"(target <= {target} ms: {verdict}; {summary['pairs_within_target']} of "
        f"{len(summary['pairs'])} pairs within it)"
    )
    return "\n".join(lines)


def write_json(result: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, default=str) + "\n")


def _by_age_row(what: str, ages: dict[str, Any], shape: str) -> Row:
    """A latency's p99 of young and older streams (``bench.stats.by_stream_age``)."""
    return Row(
        f"{what} p99, streams in their first {ages['young_seconds']:g} s"
        f" / older (share of the slowest 1% in the first), {shape}",
        f"{_fmt(ages['young_p99_ms'], ' ms')} / {_fmt(ages['older_p99_ms'], ' ms')}"
        f" ({_fmt(ages['young_share_of_slowest_1_percent'], '')})",
    )
