"""The lifecycle scenario measures what whole debates cost in CPU: every measured debate is
watched to its end, and its CPU is split by process; the report sets the cluster's figure
beside the in-process one."""

from __future__ import annotations

from bench import clients, scenarios
from bench.__main__ import LIFECYCLE_PACE, LIFECYCLE_TOKENS
from bench.report import rows
from bench.stack import Stack, StackOptions


async def test_every_measured_debate_ends_completed_and_its_cpu_is_split_by_process() -> None:
    paces = dict.fromkeys(("anthropic", "gemini", "openai"), LIFECYCLE_PACE)
    stack = Stack(
        StackOptions(paces=paces, tokens=LIFECYCLE_TOKENS, history_debates=0, provider_worker=False)
    )
    try:
        stack.start()
        async with clients.client() as http, clients.viewer_session() as watchers:
            result = await scenarios.lifecycle(
                stack,
                http,
                watchers,
                debates=3,
                viewers=2,
                batches=2,
                paces=paces,
                tokens=LIFECYCLE_TOKENS,
                limit=60,
            )
            debates = (await http.get(f"{stack.app_url}/api/debates")).json()["total"]
    finally:
        stack.stop()

    assert result["stream_ends"] == {"completed": 6}  # the warm-up batch is not counted
    assert debates == 9  # ... but it ran
    by_process = result["cpu_ms_per_debate_by_process"]
    assert set(by_process) == {"web"}  # no provider worker asked for
    assert by_process["web"] > 0
    assert result["app_cpu_ms_per_debate"] == by_process["web"]
    assert set(result["services_cpu_ms_per_debate"]) == {"Redis", "PostgreSQL"}


def _lifecycle(app_ms: float, services: dict[str, float]) -> dict[str, object]:
    return {
        "debates_per_batch": 50,
        "viewers_per_debate": 3,
        "stream_ends": {"completed": 200},
        "app_cpu_ms_per_debate": app_ms,
        "cpu_ms_per_debate_by_process": {"web a": app_ms / 2, "worker 1": app_ms / 2},
        "services_cpu_ms_per_debate": services,
    }


def test_the_report_adds_the_services_to_a_debates_life_and_compares_it_in_process() -> None:
    result = {
        "lifecycle": _lifecycle(40.0, {"PostgreSQL": 10.0, "Redis": 4.5}),
        "in_process": {"lifecycle": _lifecycle(30.0, {"PostgreSQL": 0.0, "Redis": 2.0})},
    }
    values = {row.figure.strip(): row.value for row in rows(result)}
    key = "CPU ms per debate's life, app processes, 50 one-round duels at once x 3 viewers"
    assert values[key] == "40.0"
    assert values["worker 1"] == "20.0"
    assert values["PostgreSQL (the machine's)"] == "10.0"
    assert values["CPU ms per debate's life, app processes and services"] == "54.5"
    assert values["the same, in-process"] == "32.0"
    assert values["cluster minus in-process"] == "22.5"
