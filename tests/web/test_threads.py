"""The web process runs its blocking work in a few threads, never dozens at once (each one
running takes its share of the interpreter lock from the loop that streams every debate),
and never on the event loop itself."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app import debates
from app.events import Event
from app.ledger import LEDGER_THREADS, Ledger
from app.threads import REQUEST_THREADS, Lane
from app.web import api
from app.web.stream import encoded_chunks, encoded_stream
from tests.concurrency import Concurrency
from tests.fakes.llm_server import FakeLLMServer
from tests.web.conftest import start_duel, wait_for_debate
from tests.web.test_routes import form_fields


def test_a_burst_of_requests_to_plain_handlers_runs_in_at_most_the_request_threads(
    app: FastAPI,
) -> None:
    seen = Concurrency()
    held = seen.wrap(lambda: True, hold=0.1)

    def slow() -> dict[str, bool]:  # a plain def: FastAPI runs it in a thread
        return {"ok": held()}

    app.add_api_route("/slow", slow, methods=["GET"])
    with TestClient(app) as client, ThreadPoolExecutor(16) as senders:
        answers = list(senders.map(lambda _: client.get("/slow").status_code, range(16)))
    assert answers == [200] * 16
    assert seen.most == REQUEST_THREADS
    assert seen.on_loop == 0


def test_a_lane_runs_at_most_its_threads_at_once_and_queues_the_rest() -> None:
    lane = Lane("test", threads=2)
    seen = Concurrency()

    async def burst() -> list[int]:
        slow = seen.wrap(lambda number: number, hold=0.05)
        return list(await asyncio.gather(*(lane.run(slow, n) for n in range(8))))

    assert asyncio.run(burst()) == list(range(8))
    assert seen.most == 2
    assert seen.threads <= {"argue-test_0", "argue-test_1"}


def lane_threads(prefix: str) -> set[str]:
    return {thread.name for thread in threading.enumerate() if thread.name.startswith(prefix)}


def test_a_started_lane_has_every_thread_before_work_comes_and_starts_no_more() -> None:
    lane = Lane("prestart", threads=3)
    assert lane_threads("argue-prestart_") == set()

    lane.start()
    started = lane_threads("argue-prestart_")
    seen = Concurrency()

    async def burst() -> None:
        slow = seen.wrap(lambda: None, hold=0.05)
        await asyncio.gather(*(lane.run(slow) for _ in range(6)))

    asyncio.run(burst())
    assert started == {"argue-prestart_0", "argue-prestart_1", "argue-prestart_2"}
    assert lane_threads("argue-prestart_") == started
    assert seen.threads == started


def test_the_app_starts_its_rendering_and_ledger_threads_as_it_starts(app: FastAPI) -> None:
    with TestClient(app):
        running = lane_threads("argue-")
    assert {"argue-heavy_0", "argue-heavy_1", "argue-final-pages_0"} <= running
    assert {f"argue-ledger_{n}" for n in range(LEDGER_THREADS)} <= running


@pytest.mark.parametrize("started_from", ["api", "form"])
def test_a_new_debate_is_written_from_a_thread_not_the_event_loop(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, started_from: str
) -> None:
    seen = Concurrency()
    monkeypatch.setattr(debates, "save_new", seen.wrap(debates.save_new))
    if started_from == "api":
        debate_id = start_duel(client)
    else:
        response = client.post("/debates", data=form_fields(), follow_redirects=False)
        assert response.status_code == 303, response.text
        debate_id = response.headers["location"].rsplit("/", 1)[-1]
    assert wait_for_debate(client, debate_id) == "completed"
    assert seen.most == 1 and seen.on_loop == 0


def test_the_runner_writes_turns_in_its_ledger_threads(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = Concurrency()
    monkeypatch.setattr(Ledger, "save_turn", seen.wrap(Ledger.save_turn))
    ids = [start_duel(client) for _ in range(4)]
    assert [wait_for_debate(client, debate_id) for debate_id in ids] == ["completed"] * 4
    assert seen.threads and all(name.startswith("argue-ledger_") for name in seen.threads)
    assert seen.most <= LEDGER_THREADS and seen.on_loop == 0


def test_answers_to_cancels_read_the_debate_from_a_request_thread(
    client: TestClient, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    finished = start_duel(client)
    assert wait_for_debate(client, finished) == "completed"
    fake_llm.set_default_token_delay(0.5)
    running = start_duel(client)
    seen = Concurrency()
    monkeypatch.setattr(api, "read_scope", seen.wrap(api.read_scope))

    refused = client.post(f"/api/debates/{finished}/cancel")
    cancelled = client.post(f"/api/debates/{running}/cancel")

    assert refused.status_code == 409 and "completed" in refused.json()["detail"]
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert len(seen.threads) >= 1 and seen.on_loop == 0


def test_final_pages_render_in_a_thread_of_their_own_and_hold_up_no_starting_debate() -> None:
    """Debates that started together end together: their final pages, however many and
    however slow, leave the rendering threads free for the debates starting meanwhile."""
    release = threading.Event()
    rendered_in: dict[str, set[str]] = {"end": set(), "status": set()}

    def encode(event: Event) -> bytes:
        rendered_in[event.type].add(threading.current_thread().name)
        if event.type == "end":
            release.wait(10)
        return f"{event.debate_id}:{event.type};".encode()

    async def chunks(debate_id: str, kind: str) -> bytes:
        batch = [Event(seq=1, epoch="e", debate_id=debate_id, type=kind, data={})]
        return b"".join([chunk async for chunk in encoded_chunks(batch, "page", encode)])

    async def endings_then_a_start() -> tuple[list[bytes], bytes]:
        endings = [asyncio.ensure_future(chunks(f"ended{n}", "end")) for n in range(3)]
        await asyncio.sleep(0.1)
        try:
            started = await asyncio.wait_for(chunks("new", "status"), 5)
        finally:
            release.set()
        return list(await asyncio.gather(*endings)), started

    ended, started = asyncio.run(endings_then_a_start())
    assert started == b"new:status;"
    assert ended == [f"ended{n}:end;".encode() for n in range(3)]
    assert rendered_in["end"] == {"argue-final-pages_0"}
    assert all(name.startswith("argue-heavy_") for name in rendered_in["status"])


def test_live_text_encodes_on_the_loop_turns_in_the_pool_in_order_and_closing_unsubscribes() -> (
    None
):
    encoded_in: list[tuple[str, str]] = []
    closed = asyncio.Event()

    def encode(event: Event) -> bytes:
        encoded_in.append((event.type, threading.current_thread().name))
        return f"{event.seq}:{event.type};".encode()

    def events(*types: str, first: int) -> list[Event]:
        return [
            Event(seq=first + n, epoch="e", debate_id="d", type=kind, data={})
            for n, kind in enumerate(types)
        ]

    async def batches():  # type: ignore[no-untyped-def]
        try:
            yield events("delta", "delta", first=1)
            yield events("turn_completed", "delta", first=3)
            yield events("delta", first=5)
            await asyncio.sleep(10)  # a debate still running
        finally:
            closed.set()

    async def read_three_then_close() -> tuple[list[bytes], bool]:
        chunks = encoded_stream(batches(), "page", encode)
        read = [await chunks.__anext__() for _ in range(3)]
        await chunks.aclose()
        return read, closed.is_set()  # closed by then, not later by the garbage collector

    read, unsubscribed = asyncio.run(read_three_then_close())
    assert read == [b"1:delta;2:delta;", b"3:turn_completed;4:delta;", b"5:delta;"]
    assert unsubscribed
    loop_thread = threading.current_thread().name
    assert encoded_in[0] == ("delta", loop_thread)
    assert ("turn_completed", loop_thread) not in encoded_in
    assert encoded_in[-1] == ("delta", loop_thread)
