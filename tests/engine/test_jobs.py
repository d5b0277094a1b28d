"""The job manager: a slot limit with a first-come queue, a crash that leaves the debate
failed and resumable, and cancel and resume that leave a consistent state however they
interleave (either a live job runs the debate, or it is cancelled or failed and resumable).

The provider here follows our own protocol (it is not an SDK double): each call waits at a
gate the test opens, so the test decides exactly when a turn streams, ends, or lingers after
being cancelled.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session

from app import store
from app.config import Settings
from app.db import session_scope
from app.debates import DebateRequest, SeatChoice, create, prepare, save_new
from app.events import Event, EventHub
from app.jobs import JobManager
from app.ledger import Ledger
from app.models import Debate
from app.providers.base import Finished, Message, ProviderStatus, TextDelta, Usage
from app.providers.registry import provider_statuses
from tests.conftest import fake_settings
from tests.fakes.llm_server import FakeLLMServer

# Each test runs on SQLite and on PostgreSQL (tests/conftest.py).
pytestmark = pytest.mark.both_databases

WAIT_SECONDS = 10.0
ALPHA, BRAVO, CHARLIE = "Alpha question", "Bravo question", "Charlie question"


class GatedProvider:
    """Answers every call with a short reply, once the gate of the call's topic is open."""

    name = "openai"

    def __init__(self) -> None:
        self.prompts: list[str] = []
        self.cancelled_calls = 0
        # While set to an unset event, a cancelled call holds on until it is set: the job is
        # "stopping, not yet stopped", the window where a resume can arrive.
        self.linger_after_cancel: asyncio.Event | None = None
        # From this call number on (1-based), ``Finished`` carries no usage: a protocol break
        # the runner does not expect.
        self.break_from_call: int | None = None
        self._gates: dict[str, asyncio.Event] = {}
        self._changed = asyncio.Condition()

    def hold(self, *topics: str) -> None:
        for topic in topics:
            self._gates[topic] = asyncio.Event()

    def release(self, topic: str) -> None:
        self._gates[topic].set()

    def calls_for(self, topic: str) -> int:
        return sum(topic in prompt for prompt in self.prompts)

    def topics_in_call_order(self, topics: Sequence[str]) -> list[str]:
        seen: list[str] = []
        for prompt in self.prompts:
            for topic in topics:
                if topic in prompt and topic not in seen:
                    seen.append(topic)
        return seen

    async def until(self, condition: Callable[[], bool]) -> None:
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(condition), WAIT_SECONDS)

    def status(self) -> ProviderStatus:
        return ProviderStatus(self.name, True, "a test provider", "gated")

    async def list_models(self) -> list[str]:
        return ["gated"]

    async def stream(
        self, *, model: str, system: str, messages: Sequence[Message], max_tokens: int
    ) -> AsyncIterator[TextDelta | Finished]:
        prompt = "\n".join([system, *(message.content for message in messages)])
        self.prompts.append(prompt)
        number = len(self.prompts)
        await self._notify()
        gate = next((gate for topic, gate in self._gates.items() if topic in prompt), None)
        try:
            if gate is not None:
                await gate.wait()
        except asyncio.CancelledError:
            self.cancelled_calls += 1
            await self._notify()
            if self.linger_after_cancel is not None:
                await self.linger_after_cancel.wait()
            raise
        yield TextDelta("A short reply.")
        broken = self.break_from_call is not None and number >= self.break_from_call
        yield Finished(None if broken else Usage(3, 2))  # type: ignore[arg-type]

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()


@pytest.fixture
def provider() -> GatedProvider:
    return GatedProvider()


def manager(
    engine: Engine, hub: EventHub, settings: Settings, provider: GatedProvider
) -> JobManager:
    return JobManager(engine=engine, hub=hub, providers={"openai": provider}, settings=settings)


def new_debate(engine: Engine, settings: Settings, topic: str, rounds: int = 1) -> str:
    seats = {role: SeatChoice(provider="openai") for role in ("claude", "gemini")}
    request = DebateRequest(topic=topic, rounds=rounds, seats=seats)
    prepared = prepare(request, statuses=provider_statuses(settings))
    return create(engine, prepared=prepared, settings=settings).id


def debate_row(engine: Engine, debate_id: str) -> Any:
    with session_scope(engine) as session:
        debate = store.get_debate(session, debate_id=debate_id)
        assert debate is not None
        session.expunge(debate)
        return debate


def status(engine: Engine, debate_id: str) -> str:
    return str(debate_row(engine, debate_id).status)


def completed_keys(engine: Engine, debate_id: str) -> list[str]:
    with session_scope(engine) as session:
        return [turn.key for turn in store.completed_turns(session, debate_id=debate_id)]


async def final_status(jobs: JobManager, debate_id: str) -> str | None:
    async with asyncio.timeout(WAIT_SECONDS):
        return await jobs.wait(debate_id)


async def events_so_far(hub: EventHub, debate_id: str) -> list[Event]:
    """Every event of an ended debate (the replay stops at its terminal event)."""
    async with asyncio.timeout(WAIT_SECONDS):
        return [event async for event in hub.subscribe(debate_id)]


def assert_consistent(jobs: JobManager, engine: Engine, debate_id: str) -> None:
    """Either a live job runs the debate, or it has stopped and says so."""
    current = status(engine, debate_id)
    if jobs.is_running(debate_id):
        assert current in ("queued", "running"), current
    else:
        assert current in ("cancelled", "failed", "completed"), current


# -- the slot limit and the queue ------------------------------------------------------------


async def test_a_third_debate_waits_queued_until_one_of_two_slots_frees(
    engine: Engine, hub: EventHub, fake_llm: FakeLLMServer, tmp_path: Path, provider: GatedProvider
) -> None:
    settings = fake_settings(fake_llm, tmp_path / "argue-home", max_concurrent_debates=2)
    jobs = manager(engine, hub, settings, provider)
    alpha, bravo, charlie = (new_debate(engine, settings, t) for t in (ALPHA, BRAVO, CHARLIE))
    provider.hold(ALPHA, BRAVO, CHARLIE)
    for debate_id in (alpha, bravo, charlie):
        jobs.submit(debate_id)

    await provider.until(lambda: provider.calls_for(ALPHA) == 2 and provider.calls_for(BRAVO) == 2)
    await asyncio.sleep(0.1)  # time enough for a third debate to start, were it allowed to
    assert (status(engine, alpha), status(engine, bravo)) == ("running", "running")
    assert status(engine, charlie) == "queued"
    assert provider.calls_for(CHARLIE) == 0

    provider.release(ALPHA)
    assert await final_status(jobs, alpha) == "completed"
    await provider.until(lambda: provider.calls_for(CHARLIE) == 2)
    assert (status(engine, bravo), status(engine, charlie)) == ("running", "running")

    provider.release(BRAVO)
    provider.release(CHARLIE)
    assert [await final_status(jobs, d) for d in (bravo, charlie)] == ["completed"] * 2


async def test_queued_debates_start_in_the_order_they_were_submitted(
    engine: Engine, hub: EventHub, fake_llm: FakeLLMServer, tmp_path: Path, provider: GatedProvider
) -> None:
    settings = fake_settings(fake_llm, tmp_path / "argue-home", max_concurrent_debates=1)
    jobs = manager(engine, hub, settings, provider)
    # Created in one order, submitted in another: the submission order is the one kept.
    charlie, bravo, alpha = (new_debate(engine, settings, t) for t in (CHARLIE, BRAVO, ALPHA))
    provider.hold(ALPHA)
    for debate_id in (alpha, bravo, charlie):
        jobs.submit(debate_id)
    await provider.until(lambda: provider.calls_for(ALPHA) == 2)
    provider.release(ALPHA)

    assert [await final_status(jobs, d) for d in (alpha, bravo, charlie)] == ["completed"] * 3
    assert provider.topics_in_call_order((ALPHA, BRAVO, CHARLIE)) == [ALPHA, BRAVO, CHARLIE]


# -- a crash inside a run --------------------------------------------------------------------


async def test_a_crash_inside_a_run_fails_the_debate_with_its_reason_and_keeps_it_resumable(
    engine: Engine,
    hub: EventHub,
    settings: Settings,
    provider: GatedProvider,
    caplog: pytest.LogCaptureFixture,
) -> None:
    jobs = manager(engine, hub, settings, provider)
    debate_id = new_debate(engine, settings, ALPHA, rounds=2)
    provider.break_from_call = 3  # the openings complete; the first rebuttal breaks the runner
    jobs.submit(debate_id)

    with caplog.at_level(logging.ERROR, logger="app.jobs"):
        assert await final_status(jobs, debate_id) == "failed"

    debate = debate_row(engine, debate_id)
    assert debate.status_reason.startswith("internal error: AttributeError")
    assert completed_keys(engine, debate_id) == ["r1.opening.claude", "r1.opening.gemini"]
    end = (await events_so_far(hub, debate_id))[-1]
    assert (end.type, end.data["status"]) == ("end", "failed")
    crash = [record for record in caplog.records if record.name == "app.jobs"]
    assert crash and crash[0].exc_info is not None

    provider.break_from_call = None
    assert jobs.resume(debate_id)
    assert await final_status(jobs, debate_id) == "completed"
    assert provider.calls_for(ALPHA) == 2 + 1 + 4  # openings, the broken call, the rest again


# -- cancel and resume, interleaved ----------------------------------------------------------


async def running_debate(
    engine: Engine, hub: EventHub, settings: Settings, provider: GatedProvider
) -> tuple[JobManager, str]:
    """A debate whose two openings are streaming (held at the gate)."""
    jobs = manager(engine, hub, settings, provider)
    debate_id = new_debate(engine, settings, ALPHA)
    provider.hold(ALPHA)
    jobs.submit(debate_id)
    await provider.until(lambda: provider.calls_for(ALPHA) == 2)
    return jobs, debate_id


async def test_cancel_and_resume_at_once_leave_a_running_job(
    engine: Engine, hub: EventHub, settings: Settings, provider: GatedProvider
) -> None:
    jobs, debate_id = await running_debate(engine, hub, settings, provider)
    provider.linger_after_cancel = asyncio.Event()

    cancelling = asyncio.create_task(jobs.cancel(debate_id))
    await provider.until(lambda: provider.cancelled_calls == 2)  # stopping, not yet stopped
    assert jobs.resume(debate_id)  # the debate already says cancelled: it may be resumed
    provider.linger_after_cancel.set()
    assert await cancelling

    assert jobs.is_running(debate_id)
    assert not hub.has_ended(debate_id)  # the cancel's end must not close the resumed run
    await provider.until(lambda: provider.calls_for(ALPHA) == 4)  # the openings, asked again
    assert status(engine, debate_id) == "running"
    provider.release(ALPHA)
    assert await final_status(jobs, debate_id) == "completed"


async def test_a_resume_then_a_cancel_before_the_job_starts_leave_it_cancelled_and_resumable(
    engine: Engine, hub: EventHub, settings: Settings, provider: GatedProvider
) -> None:
    jobs, debate_id = await running_debate(engine, hub, settings, provider)
    assert await jobs.cancel(debate_id)

    assert jobs.resume(debate_id)
    assert await jobs.cancel(debate_id)

    assert not jobs.is_running(debate_id)
    assert status(engine, debate_id) == "cancelled"
    assert hub.has_ended(debate_id)
    provider.release(ALPHA)
    assert jobs.resume(debate_id)
    assert await final_status(jobs, debate_id) == "completed"


async def test_cancel_resume_cancel_while_the_first_job_stops_leave_it_cancelled_and_resumable(
    engine: Engine, hub: EventHub, settings: Settings, provider: GatedProvider
) -> None:
    jobs, debate_id = await running_debate(engine, hub, settings, provider)
    provider.linger_after_cancel = asyncio.Event()

    first_cancel = asyncio.create_task(jobs.cancel(debate_id))
    await provider.until(lambda: provider.cancelled_calls == 2)
    assert jobs.resume(debate_id)
    assert await jobs.cancel(debate_id)
    provider.linger_after_cancel.set()
    assert await first_cancel

    assert not jobs.is_running(debate_id)
    assert status(engine, debate_id) == "cancelled"
    ends = [event for event in await events_so_far(hub, debate_id) if event.type == "end"]
    assert [event.data["status"] for event in ends] == ["cancelled"]
    provider.linger_after_cancel = None
    provider.release(ALPHA)
    assert jobs.resume(debate_id)
    assert await final_status(jobs, debate_id) == "completed"


@pytest.mark.parametrize("resume_after_steps", range(6))
async def test_any_interleaving_of_cancel_and_resume_leaves_a_consistent_debate(
    engine: Engine,
    hub: EventHub,
    settings: Settings,
    provider: GatedProvider,
    resume_after_steps: int,
) -> None:
    jobs, debate_id = await running_debate(engine, hub, settings, provider)

    async def resume_soon() -> bool:
        for _ in range(resume_after_steps):
            await asyncio.sleep(0)
        return jobs.resume(debate_id)

    cancelled, _ = await asyncio.gather(jobs.cancel(debate_id), resume_soon())
    await asyncio.sleep(0.05)

    assert cancelled
    assert_consistent(jobs, engine, debate_id)
    if not jobs.is_running(debate_id):
        assert jobs.resume(debate_id)  # never stuck: a stopped debate can always go on
    provider.release(ALPHA)
    assert await final_status(jobs, debate_id) == "completed"


async def test_a_new_job_never_runs_beside_an_older_one_still_stopping(
    engine: Engine, hub: EventHub, settings: Settings, provider: GatedProvider
) -> None:
    jobs, debate_id = await running_debate(engine, hub, settings, provider)
    provider.linger_after_cancel = asyncio.Event()
    first_cancel = asyncio.create_task(jobs.cancel(debate_id))
    await provider.until(lambda: provider.cancelled_calls == 2)

    assert jobs.resume(debate_id)
    assert await jobs.cancel(debate_id)  # the job that waited for the first is dropped
    assert jobs.resume(debate_id)
    await asyncio.sleep(0.1)  # time enough to start, were it allowed to
    assert provider.calls_for(ALPHA) == 2  # nothing new while the first job still stops

    provider.linger_after_cancel.set()
    assert await first_cancel
    await provider.until(lambda: provider.calls_for(ALPHA) == 4)
    provider.release(ALPHA)
    assert await final_status(jobs, debate_id) == "completed"


def test_a_job_that_starts_after_its_debate_was_cancelled_leaves_it_cancelled(
    engine: Engine, settings: Settings
) -> None:
    """A job marks its debate running from a worker thread; a cancel that lands first stands
    (before, the job's late ``running`` overwrote it and left a running debate with no job)."""
    debate_id = new_debate(engine, settings, ALPHA)
    with session_scope(engine) as session:
        store.set_status(session, debate_id=debate_id, status="cancelled", reason="by user")

    begun = Ledger(engine).start(debate_id)

    assert begun.running is False
    assert status(engine, debate_id) == "cancelled"
    assert debate_row(engine, debate_id).status_reason == "by user"


def test_a_job_marks_a_queued_or_crash_left_running_debate_running(
    engine: Engine, settings: Settings
) -> None:
    queued = new_debate(engine, settings, ALPHA)
    left_running = new_debate(engine, settings, BRAVO)
    with session_scope(engine) as session:
        store.set_status(session, debate_id=left_running, status="running")

    assert Ledger(engine).start(queued).running is True
    assert Ledger(engine).start(left_running).running is True
    assert status(engine, queued) == status(engine, left_running) == "running"
    assert debate_row(engine, queued).started_at is not None


# -- creating a debate -----------------------------------------------------------------------


async def test_a_debate_whose_request_went_away_while_it_was_saved_still_runs(
    engine: Engine, hub: EventHub, fake_llm: FakeLLMServer, tmp_path: Path, provider: GatedProvider
) -> None:
    settings = fake_settings(fake_llm, tmp_path / "argue-home")
    jobs = manager(engine, hub, settings, provider)
    seats = {role: SeatChoice(provider="openai") for role in ("claude", "gemini")}
    prepared = prepare(
        DebateRequest(topic=ALPHA, rounds=1, seats=seats), statuses=provider_statuses(settings)
    )
    saving, go_on = threading.Event(), threading.Event()
    saved: list[str] = []

    def save_slowly(session: Session) -> Debate:
        saving.set()
        go_on.wait(WAIT_SECONDS)
        debate = save_new(session, prepared=prepared, settings=settings)
        saved.append(debate.id)
        return debate

    request = asyncio.create_task(jobs.create(save_slowly))
    await asyncio.to_thread(saving.wait, WAIT_SECONDS)
    request.cancel()  # the client hung up while its debate was being written
    go_on.set()
    with pytest.raises(asyncio.CancelledError):
        await request

    await provider.until(lambda: len(saved) == 1 and provider.calls_for(ALPHA) >= 1)
    assert await final_status(jobs, saved[0]) == "completed"
