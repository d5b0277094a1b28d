"""Event payloads are typed: mypy rejects a producer or a consumer that disagrees with an
event type's ``TypedDict``, every type name the code publishes has one, and what the runner
really publishes matches them."""

from __future__ import annotations

import ast
import asyncio
import textwrap
import typing
from pathlib import Path
from typing import Any, get_args, get_type_hints

import pytest
from mypy import api as mypy_api
from sqlalchemy.engine import Engine

from app.bus import EventBus
from app.config import Settings
from app.debates import DebateRequest, SeatChoice, create, prepare
from app.event_types import EventType, Publisher, typed
from app.events import Event, EventHub
from app.providers.registry import build_providers, provider_statuses
from app.runner import Runner
from tests.fakes.llm_server import FakeLLMServer

REPOSITORY = Path(__file__).resolve().parents[2]
APP = REPOSITORY / "app"

# What a consumer and a producer of each event may write; the checks below must accept it,
# or the rejections they report would prove nothing.
WELL_TYPED = """
from app.event_types import Publisher, TypedEvent
from app.status import DebateStatus

def produce(bus: Publisher) -> None:
    bus.publish("d", "delta", {"key": "r1.opening.claude", "text": "Hello"})
    bus.publish("d", "usage", {"input_tokens": 1, "output_tokens": 2})
    bus.publish("d", "end", {"status": DebateStatus.COMPLETED, "reason": None})

def consume(event: TypedEvent) -> str:
    if event.type == "delta":
        return event.data["text"]
    if event.type == "usage":
        return str(event.data["input_tokens"] + event.data["output_tokens"])
    return ""
"""


def mypy_errors(code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """mypy's error lines for ``code``, checked strictly, importing this repository's ``app``."""
    module = tmp_path / "snippet.py"
    module.write_text(textwrap.dedent(code))
    monkeypatch.chdir(REPOSITORY)
    stdout, stderr, _ = mypy_api.run(
        [
            "--strict",
            "--no-incremental",
            "--cache-dir=/dev/null",
            "--follow-imports=silent",
            "--config-file=",
            str(module),
        ]
    )
    assert not stderr, stderr
    return [line for line in stdout.splitlines() if ": error:" in line]


def test_mypy_rejects_producers_and_consumers_that_disagree_with_a_payload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    misuses = {
        # a misspelled field
        "txt": 'bus.publish("d", "delta", {"key": "k", "txt": "Hello"})',
        # one type's data under another type's name
        "usage-as-delta": 'bus.publish("d", "delta", {"input_tokens": 1, "output_tokens": 2})',
        # a field of the wrong type
        "round": 'bus.publish("d", "turn_started", {**STARTED, "round": "one"})',
        # a status that is not a debate status
        "status": 'bus.publish("d", "end", {"status": "not started"})',
        # a consumer reading a field its event does not carry
        "consumer": 'print(event.data["input_tokens"]) if event.type == "delta" else None',
    }
    code = WELL_TYPED + textwrap.dedent(
        """
        from app.event_types import TurnStartedData

        STARTED: TurnStartedData = {
            "key": "k", "role": "claude", "label": "Claude", "provider": "openai",
            "model": "m", "phase": "opening", "round": 1,
        }

        def misuse(bus: Publisher, event: TypedEvent) -> None:
        """
    )
    first_line = code.count("\n") + 1
    code += "".join(f"    {line}\n" for line in misuses.values())

    errors = mypy_errors(code, tmp_path, monkeypatch)

    lines_with_errors = {int(error.split(":")[1]) for error in errors}
    assert lines_with_errors == set(range(first_line, first_line + len(misuses))), errors


def test_well_typed_producers_and_consumers_pass_mypy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert mypy_errors(WELL_TYPED, tmp_path, monkeypatch) == []


def test_every_type_name_has_one_payload_type_for_producers_and_consumers() -> None:
    names = set(get_args(EventType))
    published = {}
    for overload in typing.get_overloads(Publisher.publish):
        hints = get_type_hints(overload)
        (name,) = get_args(hints["type"])
        published[name] = hints["data"]
    read = {}
    for name in names:
        message = typed(name, {})
        assert message is not None and message.type == name
        read[name] = get_type_hints(type(message))["data"]

    assert set(published) == names
    assert published == read
    assert all(typing.is_typeddict(data) for data in published.values())
    assert typed("a_type_from_a_newer_producer", {}) is None


def test_the_event_bus_publishes_through_the_typed_protocol() -> None:
    assert Publisher in EventBus.__mro__
    assert "publish" not in vars(EventBus)  # it would hide the typed overloads


def published_type_names() -> set[str]:
    """Every type name a ``publish(debate_id, "<name>", …)`` call in ``app`` spells out."""
    names = set()
    for path in APP.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "publish"
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
            ):
                names.add(node.args[1].value)
    return names


def test_every_type_name_the_app_publishes_has_a_payload_type() -> None:
    names = published_type_names()

    assert {"turn_started", "delta", "turn_completed", "end"} <= names
    assert names <= set(get_args(EventType))


def start(engine: Engine, settings: Settings, **request: Any) -> str:
    prepared = prepare(DebateRequest(**request), statuses=provider_statuses(settings))
    return create(engine, prepared=prepared, settings=settings).id


def assert_matches_its_payload_type(event: Event) -> None:
    message = typed(event.type, event.data)
    assert message is not None, event.type
    data_type = get_type_hints(type(message))["data"]
    keys = set(event.data)
    assert (
        data_type.__required_keys__
        <= keys
        <= data_type.__required_keys__ | (data_type.__optional_keys__)
    ), (event.type, sorted(keys))


async def test_what_the_runner_publishes_matches_the_payload_types(
    engine: Engine, hub: EventHub, settings: Settings, fake_llm: FakeLLMServer
) -> None:
    seats = {role: SeatChoice(provider="openai") for role in ("claude", "gemini")}
    completed = start(engine, settings, topic="Tabs or spaces?", rounds=1, seats=seats)
    failed = start(engine, settings, topic="Monorepo or polyrepo?", rounds=2, seats=seats)
    runner = Runner(engine=engine, hub=hub, providers=build_providers(settings), settings=settings)

    assert (await runner.run(completed)).status == "completed"
    fake_llm.script(provider="openai", reply="Opening A.")
    fake_llm.script(provider="openai", fault="http_503", error_message="Busy")
    fake_llm.script(provider="openai", reply="Opening B.")
    fake_llm.script(provider="openai", fault="http_401", error_message="Incorrect API key")
    assert (await runner.run(failed)).status == "failed"

    events = []
    for debate_id in (completed, failed):
        async with asyncio.timeout(5):
            events += [event async for event in hub.subscribe(debate_id)]
    for event in events:
        assert_matches_its_payload_type(event)
    assert {event.type for event in events} == set(get_args(EventType))
