"""Two web servers sharing one database file and one Redis server (``ARGUE_REDIS_URL``): a
debate run by the first is streamed by the second, and a viewer that read part of it from
the first continues on the second with its ``Last-Event-ID``: no gap, no duplicate, no
``reload``. The second also renders the running debate's page and continues its stream."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from app.config import Settings
from app.redis_bus import RedisBus
from app.web.app import create_app
from tests.bus.conftest import REDIS_URL
from tests.conftest import fake_settings
from tests.fakes.llm_server import FakeLLMServer
from tests.web.conftest import LiveServer, http_providers, serve, stop
from tests.web.sse import Message, parse, parse_lines

TIMEOUT = 30.0


@pytest.fixture
def shared_settings(
    monkeypatch: pytest.MonkeyPatch, redis_prefix: str, fake_llm: FakeLLMServer, tmp_path: Path
) -> Settings:
    monkeypatch.setenv("ARGUE_REDIS_URL", REDIS_URL)
    monkeypatch.setenv("ARGUE_REDIS_KEY_PREFIX", redis_prefix)
    return fake_settings(fake_llm, tmp_path / "argue-home")


@pytest.fixture
def two_servers(shared_settings: Settings) -> Iterator[tuple[LiveServer, LiveServer]]:
    # Both start before any debate exists, so neither resumes the other's at start-up.
    first = serve(create_app(shared_settings, providers=http_providers(shared_settings)))
    try:
        second = serve(create_app(shared_settings, providers=http_providers(shared_settings)))
        try:
            yield first, second
        finally:
            stop(second)
    finally:
        stop(first)


def read_stream(
    url: str, *, last_event_id: str | None = None, until: Callable[[Message], bool]
) -> list[Message]:
    """Messages of a live stream, up to and including the first for which ``until`` holds."""
    # Bytes: a client may send any id, and a header is read as Latin-1.
    headers = {b"Last-Event-ID": last_event_id.encode()} if last_event_id else {}
    got: list[Message] = []
    with (
        httpx.Client(timeout=TIMEOUT) as client,
        client.stream("GET", url, headers=headers) as response,
    ):
        assert response.status_code == 200
        for message in parse_lines(response.iter_lines()):
            got.append(message)
            if until(message):
                break
    return got


def test_a_second_server_continues_the_stream_of_a_debate_the_first_runs(
    two_servers: tuple[LiveServer, LiveServer], fake_llm: FakeLLMServer
) -> None:
    first, second = two_servers
    assert isinstance(first.app.state.hub, RedisBus)
    fake_llm.set_default_token_delay(0.03)  # slow enough to be watched while it runs
    created = httpx.post(
        f"{first.url}/api/debates",
        json={"topic": "Tabs or spaces for Python code", "rounds": 1},
        timeout=TIMEOUT,
    )
    assert created.status_code == 201, created.text
    debate_id = created.json()["id"]
    path = f"/api/debates/{debate_id}/events"

    on_first = read_stream(first.url + path, until=lambda m: m.event == "turn_completed")
    assert on_first[-1].id is not None
    on_second = read_stream(
        second.url + path, last_event_id=on_first[-1].id, until=lambda m: m.event == "end"
    )
    assert "reload" not in [m.event for m in on_second]
    assert on_second[-1].json()["status"] == "completed"

    whole = parse(httpx.get(first.url + path, timeout=TIMEOUT).text)
    assert on_first + on_second == whole
    assert parse(httpx.get(second.url + path, timeout=TIMEOUT).text) == whole
    started = [m.json()["key"] for m in whole if m.event == "turn_started"]
    completed = [m.json()["key"] for m in whole if m.event == "turn_completed"]
    assert sorted(started) == sorted(completed) and len(completed) >= 3
    streamed: dict[str, str] = {}
    for message in whole:
        if message.event == "delta":
            data = message.json()
            streamed[data["key"]] = streamed.get(data["key"], "") + data["text"]
    saved = httpx.get(f"{second.url}/api/debates/{debate_id}", timeout=TIMEOUT).json()["turns"]
    assert {turn["key"]: turn["text"].strip() for turn in saved} == {
        key: text.strip() for key, text in streamed.items()
    }

    # An id the stream does not hold: reload, as without Redis.
    ms, _, seq = str(whole[-1].id).partition("-")
    for unknown in ("garbage", f"{ms}-{int(seq) + 1}", "1-²"):
        replayed = read_stream(
            second.url + path, last_event_id=unknown, until=lambda m: m.event == "end"
        )
        assert replayed[0].event == "reload" and replayed[1:] == whole
        page_stream = httpx.get(
            f"{second.url}/debates/{debate_id}/stream",
            headers={b"Last-Event-ID": unknown.encode()},
            timeout=TIMEOUT,
        )
        assert [m.event for m in parse(page_stream.text)] == ["reload"]


def test_a_second_server_renders_a_running_debate_and_continues_its_page_stream(
    two_servers: tuple[LiveServer, LiveServer], fake_llm: FakeLLMServer
) -> None:
    first, second = two_servers
    fake_llm.set_default_token_delay(0.05)
    created = httpx.post(
        f"{first.url}/api/debates",
        json={"topic": "Is a monorepo worth it?", "rounds": 1},
        timeout=TIMEOUT,
    )
    debate_id = created.json()["id"]
    read_stream(f"{first.url}/api/debates/{debate_id}/events", until=lambda m: m.event == "delta")

    page = httpx.get(f"{second.url}/debates/{debate_id}", timeout=TIMEOUT)
    assert page.status_code == 200
    found = re.search(r'sse-connect="([^"]+)"', page.text)
    assert found is not None, "the page of a running debate connects to its stream"
    stream_url = found.group(1).replace("&amp;", "&")
    assert "last_event_id=" in stream_url  # rendered from the snapshot the second rebuilt
    messages = read_stream(second.url + stream_url, until=lambda m: m.event in ("end", "reload"))
    assert [m.event for m in messages][-1] == "end"
    assert "reload" not in [m.event for m in messages]
    assert any(m.event == "html" for m in messages)
