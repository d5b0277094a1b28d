"""The figures people read: a table of measured values beside their targets (PASS/MISS),
and the whole result written as JSON."""

from __future__ import annotations

import json
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


def _fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        value = f"{value:.3f}".rstrip("0").rstrip(".") if abs(value) < 10 else f"{value:.1f}"
    return f"{value}{unit}"


def _le(value: Any, limit: float) -> bool | None:
    return None if value is None else bool(value <= limit)


def rows(result: dict[str, Any]) -> list[Row]:
    out: list[Row] = []
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


def write_json(result: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, default=str) + "\n")
