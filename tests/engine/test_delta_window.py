"""Live text of turns run together goes out at most once a window, all turns at once."""

from __future__ import annotations

import asyncio
from typing import Any

from app.runner import DELTA_WINDOW_SECONDS, _DeltaWindow, _TurnText


class RecordingBus:
    def __init__(self) -> None:
        self.published: list[tuple[float, str, dict[str, Any]]] = []

    def publish(self, debate_id: str, type: str, data: dict[str, Any]) -> None:
        self.published.append((asyncio.get_running_loop().time(), type, data))


def texts(bus: RecordingBus) -> list[tuple[str, str]]:
    return [(data["key"], data["text"]) for _at, _type, data in bus.published]


def test_a_first_token_after_a_quiet_window_goes_out_in_the_same_turn_of_the_loop() -> None:
    async def scenario() -> RecordingBus:
        bus = RecordingBus()
        turn = _TurnText(bus, "d", "r1.opening.a", _DeltaWindow())  # type: ignore[arg-type]
        turn.add("Hello")
        await asyncio.sleep(0)
        return bus

    bus = asyncio.run(scenario())
    assert texts(bus) == [("r1.opening.a", "Hello")]


def test_turns_whose_text_comes_in_together_after_a_quiet_window_go_out_together() -> None:
    async def scenario() -> tuple[list[tuple[str, str]], RecordingBus]:
        bus = RecordingBus()
        window = _DeltaWindow()
        a = _TurnText(bus, "d", "a", window)  # type: ignore[arg-type]
        b = _TurnText(bus, "d", "b", window)  # type: ignore[arg-type]
        a.add("one ")
        b.add("uno ")  # came in the same read: not held for a window
        before = texts(bus)
        await asyncio.sleep(0)
        return before, bus

    before, bus = asyncio.run(scenario())
    assert before == []
    assert texts(bus) == [("a", "one "), ("b", "uno ")]


def test_parallel_turns_tokens_within_a_window_go_out_together_when_it_closes() -> None:
    async def scenario() -> tuple[RecordingBus, list[tuple[str, str]]]:
        bus = RecordingBus()
        window = _DeltaWindow()
        a = _TurnText(bus, "d", "a", window)  # type: ignore[arg-type]
        b = _TurnText(bus, "d", "b", window)  # type: ignore[arg-type]
        a.add("one ")  # out at once (this turn of the loop): the window was quiet
        await asyncio.sleep(0.005)
        b.add("uno ")
        a.add("two ")
        b.add("dos ")
        held = texts(bus)
        await asyncio.sleep(DELTA_WINDOW_SECONDS * 2)
        return bus, held

    bus, held = asyncio.run(scenario())
    assert held == [("a", "one ")]
    assert texts(bus) == [("a", "one "), ("b", "uno dos "), ("a", "two ")]
    # The two turns' gathered text went out in the same instant, one window after the first.
    (first, *_), (second, *_), (third, *_) = bus.published
    assert third - second < 0.005
    assert second - first >= DELTA_WINDOW_SECONDS * 0.9


def test_flushing_a_turn_publishes_its_text_now_and_discarding_drops_it() -> None:
    async def scenario() -> tuple[list[tuple[str, str]], RecordingBus]:
        bus = RecordingBus()
        window = _DeltaWindow()
        a = _TurnText(bus, "d", "a", window)  # type: ignore[arg-type]
        b = _TurnText(bus, "d", "b", window)  # type: ignore[arg-type]
        a.add("x")
        a.add("y")
        b.add("z")
        a.flush()  # the turn completes: its text must not wait
        flushed = texts(bus)
        b.discard()  # cancelled: nothing more from it
        await asyncio.sleep(DELTA_WINDOW_SECONDS * 2)
        return flushed, bus

    flushed, bus = asyncio.run(scenario())
    assert flushed == [("a", "xy")]
    assert texts(bus) == [("a", "xy")]
