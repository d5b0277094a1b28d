"""The page stream renders turn events from the debate's timeline in memory: a started turn
reads nothing from the database, a completed one reads only its own row, and the header's
progress is the same as one computed from the database."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from datetime import timedelta
from typing import Any, TypeVar

import pytest
from sqlalchemy.engine import Engine

from app import store
from app.db import session_scope
from app.events import Event, EventHub
from app.models import utcnow
from app.spec import DebateSpec, Seat
from app.status import DebateStatus
from app.web import timelines as timelines_module
from app.web.deps import make_templates
from app.web.stream import Fragments, page_events
from app.web.timelines import Timelines, Watch
from app.web.view import group_turns, merge_turns, progress_of
from tests.databases import statements_sent
from tests.web.conftest import save_completed_turn
from tests.web.conftest import turn_started_data as started

SEATS = (Seat("claude", "Claude", "anthropic"), Seat("gemini", "Gemini", "gemini"))


def progress_from_database(engine: Engine, debate_id: str) -> str | None:
    with session_scope(engine) as session:
        debate = store.get_debate(session, debate_id=debate_id)
        assert debate is not None
        rows = store.turns_of(session, debate_id=debate_id)
        turns = merge_turns(rows, (), include_live=False)
        groups = group_turns(turns, format=debate.format, seat_order=["claude", "gemini"])
        return progress_of(debate, groups).step


def queued_debate(engine: Engine) -> str:
    with session_scope(engine) as session:
        debate = store.create_debate(session, spec=DebateSpec(topic="Tea or coffee?", seats=SEATS))
        return debate.id


def watched_debate(engine: Engine, debate_id: str) -> tuple[str, Timelines, Fragments]:
    timelines = Timelines(engine)
    return debate_id, timelines, Fragments(make_templates().env, engine, debate_id, timelines)


def watched_running_debate(engine: Engine) -> tuple[str, Timelines, Fragments]:
    debate_id = queued_debate(engine)
    with session_scope(engine) as session:
        debate = store.get_debate(session, debate_id=debate_id)
        assert debate is not None
        debate.status = "running"
        debate.started_at = utcnow() - timedelta(seconds=10)
    return watched_debate(engine, debate_id)


T = TypeVar("T")


class FirstCallHeld:
    """``call``, whose first call waits for ``release`` once it has said it is ``reading``."""

    def __init__(self, call: Callable[..., Any]) -> None:
        self._call = call
        self.reading = threading.Event()
        self.release = threading.Event()

    def __call__(self, *args: Any) -> Any:
        if not self.reading.is_set():
            self.reading.set()
            assert self.release.wait(10)
        return self._call(*args)

    @contextmanager
    def first_call_in_a_thread(self, caller: Callable[..., T], *args: Any) -> Iterator[Future[T]]:
        """``caller(*args)`` in another thread, held once it makes the first call; released
        by the test, or on leaving."""
        with ThreadPoolExecutor(1) as other:
            pending = other.submit(caller, *args)
            assert self.reading.wait(10)
            try:
                yield pending
            finally:
                self.release.set()


def viewer(timelines: Timelines, debate_id: str) -> Watch:
    watch = timelines.watch(debate_id)
    assert watch is not None
    return watch


def test_turn_events_render_from_the_timeline_not_the_database(engine: Engine) -> None:
    debate_id, timelines, fragments = watched_running_debate(engine)
    seq = iter(range(1, 100))

    def render(type: str, data: dict[str, Any]) -> str:
        message = fragments.for_event(Event(next(seq), "e", debate_id, type, data))
        assert message is not None
        return str(message.data)

    first = render("turn_started", started("r1.opening.claude", "claude", 1, "opening"))
    assert "Round 1 of up to 4" in first
    with statements_sent(engine, "SELECT") as selects:
        html = render("turn_started", started("r1.opening.gemini", "gemini", 1, "opening"))
    assert selects == [] and "r1-opening-gemini" in html

    save_completed_turn(engine, debate_id, "r1.opening.claude", "claude", 1, "opening")
    with statements_sent(engine, "SELECT") as selects:
        html = render("turn_completed", {"key": "r1.opening.claude"})
    assert len(selects) == 1 and "The text of r1.opening.claude." in html

    save_completed_turn(engine, debate_id, "r1.opening.gemini", "gemini", 1, "opening")
    render("turn_completed", {"key": "r1.opening.gemini"})
    with statements_sent(engine, "SELECT") as selects:
        html = render("turn_started", started("r2.rebuttal.claude", "claude", 2, "rebuttal"))
    assert selects == [] and "Round 2 of up to 4" in html
    # What the timeline holds is what the database holds.
    timeline = timelines.get(debate_id)
    assert timeline is not None
    assert timeline.progress().step == progress_from_database(engine, debate_id)
    assert set(timeline.turns) == {"r1.opening.claude", "r1.opening.gemini"}


def test_a_status_event_puts_its_status_and_start_into_the_timeline_reading_nothing(
    engine: Engine,
) -> None:
    debate_id, timelines, fragments = watched_debate(engine, queued_debate(engine))
    timeline = timelines.get(debate_id)
    assert timeline is not None and timeline.debate.status == "queued"
    began = utcnow() - timedelta(seconds=30)
    running = {"status": "running", "started_at": began.isoformat()}
    with statements_sent(engine, "SELECT") as selects:
        html = fragments.for_event(Event(1, "e", debate_id, "status", running))
    assert selects == []
    assert timeline.debate.status == "running" and timeline.debate.started_at == began
    assert html is not None and "Cancel" in html.data
    assert timeline.progress().started_at == began


def test_a_status_event_this_version_cannot_read_leaves_the_timeline_as_it_was(
    engine: Engine,
) -> None:
    # A newer Argue sharing the bus may send a status or a time this one does not know.
    debate_id, timelines, fragments = watched_debate(engine, queued_debate(engine))
    timeline = timelines.get(debate_id)
    assert timeline is not None
    odd = {"status": "paused", "started_at": "yesterday, about noon"}
    html = fragments.for_event(Event(1, "e", debate_id, "status", odd))
    assert html is not None and "paused" in html.data
    assert timeline.debate.status == "queued" and timeline.debate.started_at is None


def test_a_viewer_opening_a_stream_reads_the_timeline_with_the_status_once(
    engine: Engine,
) -> None:
    debate_id = queued_debate(engine)
    timelines = Timelines(engine)
    first = timelines.watch(debate_id)
    assert first is not None and first.status == "queued"
    with statements_sent(engine, "SELECT") as selects:
        assert timelines.get(debate_id) is not None  # kept: its first event reads nothing
    assert selects == []
    with session_scope(engine) as session:
        store.set_status(session, debate_id=debate_id, status=DebateStatus.RUNNING)
    with statements_sent(engine, "SELECT") as selects:
        # The next viewer, while the first one's stream keeps the timeline: the status only.
        second = timelines.watch(debate_id)
    assert second is not None and second.status == "running"
    assert len(selects) == 1
    del first, second  # both streams end
    with statements_sent(engine, "SELECT") as selects:
        third = timelines.watch(debate_id)  # nothing kept it current: read it whole
    assert third is not None and third.status == "running"
    assert len(selects) == 2
    assert timelines.watch("no-such-debate") is None


def test_a_viewer_of_an_ended_debate_reads_no_timeline(engine: Engine) -> None:
    # Its stream sends the final page, read whole: the turns read for a timeline would be
    # read for nothing.
    debate_id = queued_debate(engine)
    with session_scope(engine) as session:
        store.set_status(session, debate_id=debate_id, status=DebateStatus.COMPLETED)
    timelines = Timelines(engine)
    with statements_sent(engine, "SELECT") as selects:
        watch = timelines.watch(debate_id)
    assert watch is not None and watch.status == "completed"
    assert len(selects) == 1
    with statements_sent(engine, "SELECT") as selects:
        assert timelines.get(debate_id) is not None
    assert selects, "nothing was kept for it"


def test_the_least_recently_used_timeline_is_dropped_past_capacity(engine: Engine) -> None:
    ids = []
    with session_scope(engine) as session:
        for index in range(3):
            ids.append(
                store.create_debate(session, spec=DebateSpec(topic=f"T{index}", seats=SEATS)).id
            )
    timelines = Timelines(engine, capacity=2)
    first = timelines.get(ids[0])
    timelines.get(ids[1])
    assert timelines.get(ids[0]) is first  # used again: now the most recent
    timelines.get(ids[2])  # drops ids[1], the least recently used
    with statements_sent(engine, "SELECT") as selects:
        assert timelines.get(ids[0]) is first
    assert selects == []
    with statements_sent(engine, "SELECT") as selects:
        timelines.get(ids[1])
    assert selects


def test_a_completed_turn_event_carrying_its_saved_turn_reads_nothing(engine: Engine) -> None:
    debate_id, timelines, fragments = watched_running_debate(engine)
    fragments.for_event(
        Event(
            1, "e", debate_id, "turn_started", started("r1.opening.claude", "claude", 1, "opening")
        )
    )
    save_completed_turn(engine, debate_id, "r1.opening.claude", "claude", 1, "opening")
    now = utcnow()
    carried = {
        **started("r1.opening.claude", "claude", 1, "opening"),
        "turn_id": 1,
        "text": "The text of r1.opening.claude.",
        "input_tokens": 10,
        "output_tokens": 20,
        "usage_estimated": False,
        "latency_ms": 3000,
        "attempts": 2,
        "started_at": (now - timedelta(seconds=3)).isoformat(),
        "finished_at": now.isoformat(),
        "verdict": None,
        "ended_early": None,
    }
    with statements_sent(engine, "SELECT") as selects:
        message = fragments.for_event(Event(2, "e", debate_id, "turn_completed", carried))
    assert selects == []
    assert message is not None
    html = str(message.data)
    assert "The text of r1.opening.claude." in html and "2 attempts" in html
    timeline = timelines.get(debate_id)
    assert timeline is not None
    assert timeline.turns["r1.opening.claude"].status == "completed"
    assert timeline.progress().step == progress_from_database(engine, debate_id)


def test_a_debate_read_for_the_first_time_holds_up_no_other_debates_timeline(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    watched, timelines, _ = watched_running_debate(engine)
    assert timelines.get(watched) is not None
    new, _, _ = watched_running_debate(engine)
    read = FirstCallHeld(timelines._read)
    monkeypatch.setattr(timelines, "_read", read)
    with read.first_call_in_a_thread(timelines.get, new) as first_read:
        # The watched debate's timeline answers while the new one is still being read.
        assert timelines.get(watched) is not None
        read.release.set()
        timeline = first_read.result(10)
    assert timeline is not None and timeline.debate.id == new
    assert timelines.get(new) is timeline


async def test_a_viewer_coming_back_sees_the_progress_of_turns_saved_while_none_watched(
    engine: Engine, hub: EventHub
) -> None:
    # The timeline is brought up to date by the events its viewers' streams render: with no
    # viewer in this process, nothing renders the turns saved meanwhile.
    debate_id, timelines, fragments = watched_running_debate(engine)
    hub.publish(debate_id, "turn_started", started("r1.opening.claude", "claude", 1, "opening"))
    stream = page_events(
        hub, fragments, debate_id, watch=viewer(timelines, debate_id), last_event_id=None
    )
    assert "Round 1 of up to 4" in str(await anext(stream))
    await stream.aclose()  # the viewer leaves the page

    for key, role, round, phase in (
        ("r1.opening.claude", "claude", 1, "opening"),
        ("r1.opening.gemini", "gemini", 1, "opening"),
        ("r2.rebuttal.claude", "claude", 2, "rebuttal"),
        ("r2.rebuttal.gemini", "gemini", 2, "rebuttal"),
    ):
        save_completed_turn(engine, debate_id, key, role, round, phase)
    third = started("r3.rebuttal.claude", "claude", 3, "rebuttal")
    hub.publish(debate_id, "turn_started", third)

    back = viewer(timelines, debate_id)  # the viewer comes back
    comeback = page_events(hub, fragments, debate_id, watch=back, last_event_id=None)
    try:
        while "r3-rebuttal-claude" not in (chunk := str(await anext(comeback))):
            pass
    finally:
        await comeback.aclose()
    fresh = Timelines(engine).get(debate_id)
    assert fresh is not None and fresh.progress(third).remaining_seconds is not None
    shown = fresh.progress(third)
    assert f'data-remaining="{shown.remaining_seconds}"' in chunk


def test_a_slow_first_read_does_not_replace_the_timeline_a_later_viewer_already_uses(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    debate_id, timelines, _ = watched_running_debate(engine)
    read = FirstCallHeld(timelines_module._timeline_of)
    monkeypatch.setattr(timelines_module, "_timeline_of", read)
    with read.first_call_in_a_thread(timelines.watch, debate_id) as slow:
        quick = viewer(timelines, debate_id)  # reads and keeps its own, then streams
        in_use = timelines.get(debate_id)
        assert in_use is not None
        save_completed_turn(engine, debate_id, "r1.opening.claude", "claude", 1, "opening")
        timelines.saved_turn(debate_id, "r1.opening.claude")  # its stream renders a turn
        read.release.set()
        assert slow.result(10) is not None
    assert timelines.get(debate_id) is in_use
    assert "r1.opening.claude" in in_use.turns
    del quick
