"""A ``Last-Event-ID`` this server never issued (malformed, non-ASCII digits, thousands of
digits, negative, past the end of the log) is treated like an earlier process's id: the page
is told to reload (it then renders afresh, with a stream id that is valid), and the JSON
stream says ``reload`` and replays the debate from the start. Never an error mid-stream.

Not a 400: a browser's EventSource gives up for good on an error status, so the page would
silently stop updating instead of catching up.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from app.events import EventHub, UnknownEventId, parse_event_id
from tests.web.conftest import start_duel, wait_for_debate
from tests.web.sse import Message, parse

# Each made with the server's real epoch in place of "{epoch}".
MALFORMED = [
    "{epoch}-²",
    "{epoch}-١٢٣",
    "{epoch}-１",
    "{epoch}-" + "9" * 5_000,
    "{epoch}-" + "9" * 40,
    "{epoch}--3",
    "{epoch}-+3",
    "{epoch}- 3",
    "{epoch}-3 ",
    "{epoch}-0x1",
    "{epoch}-",
    "{epoch}-9999",
    "garbage",
    "²",
    "9" * 5_000,
    "-",
    "--",
    " ",
    "\x00",
    "😀-1",
]


def stream(client: TestClient, path: str, last_id: str, *, as_header: bool) -> list[Message]:
    if as_header:
        # Header bytes are read as Latin-1; send the id's UTF-8 bytes as a client might.
        headers = {"Last-Event-ID": last_id.encode("utf-8")}
        response = client.get(path, headers=headers)  # type: ignore[dict-item]
    else:
        response = client.get(f"{path}?last_event_id={quote(last_id)}")
    assert response.status_code == 200, response.text[:300]
    assert response.headers["content-type"].startswith("text/event-stream")
    return parse(response.text)


@pytest.fixture
def finished(client: TestClient) -> tuple[str, str]:
    """A duel run to its end in this process: (its id, the hub's epoch)."""
    debate_id = start_duel(client)
    wait_for_debate(client, debate_id)
    return debate_id, client.app.state.hub.epoch  # type: ignore[attr-defined]


@pytest.mark.parametrize("as_header", [True, False], ids=["header", "query"])
def test_a_malformed_last_event_id_makes_the_page_reload(
    client: TestClient, finished: tuple[str, str], as_header: bool
) -> None:
    debate_id, epoch = finished
    for template in MALFORMED:
        last_id = template.replace("{epoch}", epoch)
        messages = stream(client, f"/debates/{debate_id}/stream", last_id, as_header=as_header)
        assert [m.event for m in messages] == ["reload"], (last_id[:40], messages[:2])


@pytest.mark.parametrize("as_header", [True, False], ids=["header", "query"])
def test_a_malformed_last_event_id_on_the_api_says_reload_and_replays_everything(
    client: TestClient, finished: tuple[str, str], as_header: bool
) -> None:
    debate_id, epoch = finished
    path = f"/api/debates/{debate_id}/events"
    everything = parse(client.get(path).text)
    assert everything[-1].event == "end"
    for template in MALFORMED:
        last_id = template.replace("{epoch}", epoch)
        messages = stream(client, path, last_id, as_header=as_header)
        assert messages[0].event == "reload", (last_id[:40], messages[:2])
        assert messages[1:] == everything, last_id[:40]


def test_the_ids_a_server_issues_still_resume_where_they_left_off(
    client: TestClient, finished: tuple[str, str]
) -> None:
    debate_id, epoch = finished
    path = f"/api/debates/{debate_id}/events"
    everything = parse(client.get(path).text)
    assert stream(client, path, f"{epoch}-0", as_header=True) == everything
    last = everything[-1].id
    assert last is not None
    assert stream(client, path, last, as_header=False) == []
    assert stream(client, path, str(everything[2].id), as_header=True) == everything[3:]


@pytest.mark.parametrize(
    "raw", ["abc-²", "abc-١٢٣", "abc-" + "9" * 5_000, "abc--1", "abc-1 ", "abc-", "", None]
)
def test_parse_event_id_takes_only_ascii_digits_of_a_sane_length(raw: str | None) -> None:
    assert parse_event_id(raw) is None


async def test_the_hub_refuses_an_id_past_the_end_of_its_log() -> None:
    hub = EventHub()
    first = hub.publish("d1", "status", {"status": "running"})
    batches = hub.subscribe_batches("d1", last_event_id=f"{hub.epoch}-2")
    with pytest.raises(UnknownEventId):
        await anext(batches)
    replay = hub.subscribe_batches("d1", last_event_id=f"{hub.epoch}-0")
    assert await anext(replay) == [first]
    await replay.aclose()
