"""The event streams: replay after Last-Event-ID with no gap and no duplicate, the end of a
stream when the debate ends, stale ids, and the HTML fragments the page receives."""

from __future__ import annotations

import httpx
import pytest
from fastapi.testclient import TestClient

from app import store
from app.db import session_scope
from app.events import Event
from app.spec import DebateSpec, Seat
from app.web.stream import Fragments
from app.web.view import dom_id
from tests.fakes.llm_server import FakeLLMServer
from tests.web.conftest import (
    LiveServer,
    save_completed_turn,
    start_duel,
    turn_started_data,
    wait_for_debate,
)
from tests.web.sse import Message, parse, parse_lines


def events(client: TestClient, path: str, **headers: str) -> list[Message]:
    response = client.get(path, headers=headers)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    return parse(response.text)


def test_replay_after_last_event_id_has_no_gap_and_no_duplicate(client: TestClient) -> None:
    debate_id = start_duel(client)
    wait_for_debate(client, debate_id)
    path = f"/api/debates/{debate_id}/events"
    everything = events(client, path)
    ids = [message.id for message in everything]
    assert everything[-1].event == "end" and everything[-1].json()["status"] == "completed"
    assert len(set(ids)) == len(ids) and all(ids)
    for cut in (0, 3, len(everything) - 2):
        rest = events(client, path, **{"Last-Event-ID": str(ids[cut])})
        assert rest == everything[cut + 1 :]
    by_query = events(client, f"{path}?last_event_id={ids[4]}")
    assert by_query == everything[5:]
    # The header is what a browser's own reconnect sends: it wins over the page's query.
    both = events(client, f"{path}?last_event_id={ids[1]}", **{"Last-Event-ID": str(ids[6])})
    assert both == everything[7:]


def test_a_debate_finished_before_this_process_sends_one_end_and_closes(
    client: TestClient,
) -> None:
    engine = client.app.state.engine  # type: ignore[attr-defined]
    spec = DebateSpec(topic="Old one", seats=(Seat("claude", "Claude", "anthropic"),))
    with session_scope(engine) as session:
        debate = store.create_debate(session, spec=spec)
        store.finish_debate(
            session, debate_id=debate.id, status="failed", outcome=None, reason="it broke"
        )
    [end] = events(client, f"/api/debates/{debate.id}/events")
    assert end.event == "end" and end.json() == {"status": "failed", "reason": "it broke"}
    [page_end] = events(client, f"/debates/{debate.id}/stream")
    assert page_end.event == "end" and 'id="debate"' in page_end.data
    assert 'hx-swap-oob="true"' in page_end.data and "it broke" in page_end.data


def test_page_stream_sends_escaped_text_then_the_final_page_and_ends(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    fake_llm.rule(contains="", reply="a <b>bold</b> & claim")
    debate_id = start_duel(client)
    wait_for_debate(client, debate_id)
    messages = events(client, f"/debates/{debate_id}/stream")
    assert all(message.id for message in messages)
    deltas = [m.data for m in messages if "beforeend:#x-" in m.data]
    texts: dict[str, str] = {}
    for delta in deltas:
        target, _, rest = delta.partition('">')
        texts[target] = texts.get(target, "") + rest.removesuffix("</div>")
    assert texts and all(text == "a &lt;b&gt;bold&lt;/b&gt; &amp; claim" for text in texts.values())
    assert not any("<b>bold" in m.data for m in messages)
    assert [m.event for m in messages][-1] == "end"
    assert 'class="badge badge-completed"' in messages[-1].data
    started = [
        m.data for m in messages if 'data-upsert="replace"' in m.data and "turn-live" in m.data
    ]
    assert len(started) == 3  # two openings and the synthesis, each appended once


def test_a_stale_event_id_makes_the_page_reload(client: TestClient) -> None:
    debate_id = start_duel(client)
    wait_for_debate(client, debate_id)
    stale = {"Last-Event-ID": "0ld0ld-7"}
    [reload] = events(client, f"/debates/{debate_id}/stream", **stale)
    assert reload.event == "reload"
    json_messages = events(client, f"/api/debates/{debate_id}/events", **stale)
    assert json_messages[0].event == "reload"
    assert json_messages[1:] == events(client, f"/api/debates/{debate_id}/events")


def test_delta_fragment_appends_escaped_text_to_its_turn(client: TestClient) -> None:
    app = client.app
    state = app.state  # type: ignore[attr-defined]
    fragments = Fragments(state.templates.env, state.engine, "some-id", state.timelines)
    event = Event(3, "abc", "some-id", "delta", {"key": "r2.rebuttal.claude", "text": "<i>x</i>"})
    message = fragments.for_event(event)
    assert message is not None and message.id == "abc-3" and message.event == "html"
    assert (
        message.data
        == '<div hx-swap-oob="beforeend:#x-r2-rebuttal-claude">&lt;i&gt;x&lt;/i&gt;</div>'
    )


def test_a_turn_saved_between_the_snapshot_and_the_page_read_stays_live_for_its_replayed_text(
    client: TestClient,
) -> None:
    # The page takes the live snapshot, then reads the database. A turn can be saved in
    # between: its row is completed, yet its stream continues from the snapshot, so its later
    # text still arrives as fragments that append to the turn's live element.
    state = client.app.state  # type: ignore[attr-defined]
    engine, hub = state.engine, state.hub
    spec = DebateSpec(topic="Racing the page", seats=(Seat("claude", "Claude", "anthropic"),))
    with session_scope(engine) as session:
        debate_id = store.create_debate(session, spec=spec).id
        store.mark_running(session, debate_id=debate_id)
    key = "r1.opening.claude"
    hub.publish(debate_id, "status", {"status": "running"})
    hub.publish(debate_id, "turn_started", turn_started_data(key, "claude", 1, "opening"))
    hub.publish(debate_id, "delta", {"key": key, "text": "Half of "})
    save_completed_turn(engine, debate_id, key, "claude", 1, "opening")
    page = client.get(f"/debates/{debate_id}").text
    later = hub.publish(debate_id, "delta", {"key": key, "text": "the claim."})
    fragments = Fragments(state.templates.env, engine, debate_id, state.timelines)
    message = fragments.for_event(later)
    assert message is not None and f"beforeend:#x-{dom_id(key)}" in message.data
    assert f'id="x-{dom_id(key)}" hidden>Half of </div>' in page
    assert f"last_event_id={later.id}" not in page


@pytest.mark.timeout(60)
def test_reconnecting_mid_debate_with_last_event_id_continues_without_gap_or_duplicate(
    live_server: LiveServer, fake_llm: FakeLLMServer
) -> None:
    fake_llm.set_default_token_delay(0.03)
    with httpx.Client(base_url=live_server.url, timeout=20) as http:
        body = {"topic": "Reconnect me please now", "rounds": 1}
        debate_id = http.post("/api/debates", json=body).json()["id"]
        path = f"/api/debates/{debate_id}/events"
        first: list[Message] = []
        with http.stream("GET", path) as response:
            for message in parse_lines(response.iter_lines()):
                first.append(message)
                if sum(m.event == "delta" for m in first) >= 3:
                    break  # drop the connection mid-turn
        assert first[-1].event == "delta"
        with http.stream("GET", path, headers={"Last-Event-ID": str(first[-1].id)}) as response:
            second = list(parse_lines(response.iter_lines()))
        assert second[-1].event == "end"
        everything = parse(http.get(path).text)
    assert first + second == everything
    texts: dict[str, str] = {}
    for message in everything:
        if message.event == "delta":
            data = message.json()
            texts[data["key"]] = texts.get(data["key"], "") + data["text"]
    with httpx.Client(base_url=live_server.url) as http:
        turns = http.get(f"/api/debates/{debate_id}").json()["turns"]
    assert texts == {turn["key"]: turn["text"] for turn in turns}
