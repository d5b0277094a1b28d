"""A server killed with SIGKILL in the middle of a turn loses nothing and repeats nothing.

The real ``argue serve`` runs as a child process against the fake LLM server, whose replies
stream slowly. While a turn is streaming the process is killed (no shutdown hook runs), then
started again on the same data folder. The debate resumes by itself and completes; every
turn saved before the kill keeps its id, text and order; only the turns that were in flight
are asked for again, each once, with the very same request; and a viewer reconnecting with
its old event id is told to reload instead of being replayed the wrong events.

Every scripted reply carries a marker (``[openai-3]`` = the third request to OpenAI), so a
saved turn names the one request that produced it.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.llm_server import FakeLLMServer, RecordedRequest
from tests.reliability.server_process import ServerProcess, fake_provider_env
from tests.web.sse import Message, parse_lines

pytestmark = pytest.mark.timeout(60)

STREAM_DEADLINE = 20.0
MARKER = re.compile(r"\[(anthropic|gemini|openai)-(\d+)\]")
DUEL_KEYS = {
    "r1.opening.claude",
    "r1.opening.gemini",
    *(f"r{n}.{phase}" for n in (2, 3) for phase in ("rebuttal.claude", "response.gemini")),
    "r2.convergence.claude",
    "r3.convergence.claude",
    "r3.synthesis.claude",
}
CODEX_CLAIMS = {"r1.claim.pro_codex", "r1.claim.con_codex"}
PANEL_KEYS = {
    *(f"r1.claim.{side}_{name}" for side in ("pro", "con") for name in ("claude", "gemini")),
    *CODEX_CLAIMS,
    "r2.summary.pro_summarizer",
    "r2.summary.con_summarizer",
    "r3.judgement.judge",
}


# -- scripting and reading the fake ------------------------------------------------------------


def script_marked(fake: FakeLLMServer, provider: str, delays: list[float]) -> None:
    """One reply per delay, in order, each with its own marker and ten tokens (the fake
    starts with no script and no request, so the n-th reply is the n-th request's)."""
    for n, delay in enumerate(delays, start=1):
        words = " ".join(f"{provider}-word{i}" for i in range(9))
        fake.script(provider=provider, reply=f"[{provider}-{n}] {words}.", token_delay=delay)


def generations(fake: FakeLLMServer) -> list[RecordedRequest]:
    return [r for r in fake.requests if r.method == "POST"]


def marker_of(requests: list[RecordedRequest], index: int) -> str:
    """The marker of the reply ``requests[index]`` was given: replies are handed out per
    provider in the order requests arrive."""
    provider = requests[index].provider
    n = sum(1 for r in requests[: index + 1] if r.provider == provider)
    return f"[{provider}-{n}]"


def request_index_of(text: str, requests: list[RecordedRequest]) -> int:
    markers = MARKER.findall(text)
    assert len(markers) == 1, f"one marker per turn text, got {markers} in {text!r}"
    wanted = "[{}-{}]".format(*markers[0])
    found = [i for i in range(len(requests)) if marker_of(requests, i) == wanted]
    assert len(found) == 1, wanted
    return found[0]


# -- talking to the server ---------------------------------------------------------------------


def start_debate(server: ServerProcess, body: dict[str, Any]) -> str:
    response = httpx.post(f"{server.url}/api/debates", json=body, timeout=10)
    assert response.status_code == 201, response.text
    debate_id: str = response.json()["id"]
    return debate_id


def get_debate(server: ServerProcess, debate_id: str) -> dict[str, Any]:
    response = httpx.get(f"{server.url}/api/debates/{debate_id}", timeout=10)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


@dataclass
class Watched:
    """What a viewer of the JSON event stream saw."""

    messages: list[Message] = field(default_factory=list)
    completed: dict[str, int] = field(default_factory=dict)  # key -> turn id
    text: dict[str, str] = field(default_factory=dict)  # key -> deltas joined

    def add(self, message: Message) -> None:
        self.messages.append(message)
        if message.event == "delta":
            data = message.json()
            self.text[data["key"]] = self.text.get(data["key"], "") + data["text"]
        elif message.event == "turn_completed":
            data = message.json()
            self.completed[data["key"]] = data["turn_id"]

    @property
    def streaming(self) -> set[str]:
        """Turns with streamed text that have not completed."""
        return {key for key, text in self.text.items() if text and key not in self.completed}

    @property
    def last_id(self) -> str:
        ids = [m.id for m in self.messages if m.id]
        assert ids
        return ids[-1]


def watch(
    server: ServerProcess,
    debate_id: str,
    *,
    until: Callable[[Watched], bool],
    then: Callable[[], None] = lambda: None,
    last_event_id: str | None = None,
) -> Watched:
    """Read the debate's events until ``until`` holds, call ``then`` while still connected
    (the kill lands while the viewer is watching), and return what was seen."""
    seen = Watched()
    headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
    deadline = time.monotonic() + STREAM_DEADLINE
    url = f"{server.url}/api/debates/{debate_id}/events"
    with httpx.stream("GET", url, headers=headers, timeout=STREAM_DEADLINE) as response:
        assert response.status_code == 200
        for message in parse_lines(response.iter_lines()):
            seen.add(message)
            if until(seen):
                then()
                return seen
            assert time.monotonic() < deadline, f"stream deadline; saw {len(seen.messages)}"
    raise AssertionError(f"the stream closed early: {[m.event for m in seen.messages]}")


def ended(seen: Watched) -> bool:
    return seen.messages[-1].event == "end"


# -- reading the database file -----------------------------------------------------------------


@dataclass(frozen=True)
class SavedTurn:
    id: int
    seq: int
    status: str
    text: str


def saved_turns(home: Path, debate_id: str) -> dict[str, SavedTurn]:
    """The turns as the database file holds them (a reader of the WAL, as SQLite recovers it)."""
    connection = sqlite3.connect(home / "argue.db")
    try:
        rows = connection.execute(
            "SELECT key, id, seq, status, text FROM turn WHERE debate_id = ?", (debate_id,)
        ).fetchall()
        (status,) = connection.execute(
            "SELECT status FROM debate WHERE id = ?", (debate_id,)
        ).fetchone()
    finally:
        connection.close()
    assert status == "running"
    return {key: SavedTurn(id, seq, status, text) for key, id, seq, status, text in rows}


# -- the scenario ------------------------------------------------------------------------------


@dataclass
class Crash:
    """One debate killed mid-turn and restarted, with everything observed along the way."""

    debate_id: str
    before: Watched  # the viewer's events until the kill
    saved_at_kill: dict[str, SavedTurn]
    requests_at_kill: list[RecordedRequest]
    after: Watched  # the viewer's events after reconnecting with its old id
    final: dict[str, Any]  # GET /api/debates/{id} once completed
    saved_at_end: dict[str, SavedTurn]
    requests: list[RecordedRequest]
    log: str


def crash_and_restart(
    fake: FakeLLMServer,
    tmp_path: Path,
    body: dict[str, Any],
    *,
    completed_before_kill: int,
    streaming_at_kill: int = 1,
) -> Crash:
    home = tmp_path / "argue-home"
    server = ServerProcess(env=fake_provider_env(fake, home), log_path=tmp_path / "serve.log")
    server.start()
    try:
        debate_id = start_debate(server, body)
        before = watch(
            server,
            debate_id,
            until=lambda seen: (
                len(seen.completed) >= completed_before_kill
                and len(seen.streaming) >= streaming_at_kill
            ),
            then=server.kill,
        )
        requests_at_kill = generations(fake)
        # The point of WAL under a hard kill: the log stays, and the next open replays it.
        assert (home / "argue.db-wal").exists()
        saved_at_kill = saved_turns(home, debate_id)

        server.start()
        after = watch(server, debate_id, until=ended, last_event_id=before.last_id)
        final = get_debate(server, debate_id)
        page = httpx.get(
            f"{server.url}/debates/{debate_id}/stream",
            headers={"Last-Event-ID": before.last_id},
            timeout=10,
        )
    finally:
        server.stop()
    assert [m.event for m in parse_lines(page.text.splitlines())][:1] == ["reload"]
    connection = sqlite3.connect(home / "argue.db")
    try:
        rows = connection.execute(
            "SELECT key, id, seq, status, text FROM turn WHERE debate_id = ?", (debate_id,)
        ).fetchall()
    finally:
        connection.close()
    return Crash(
        debate_id=debate_id,
        before=before,
        saved_at_kill=saved_at_kill,
        requests_at_kill=requests_at_kill,
        after=after,
        final=final,
        saved_at_end={key: SavedTurn(id, seq, st, text) for key, id, seq, st, text in rows},
        requests=generations(fake),
        log=server.log_text(),
    )


def assert_nothing_lost_or_repeated(crash: Crash, expected_keys: set[str]) -> set[str]:
    """The checks every crash must pass; returns the keys of the turns killed in flight."""
    final, turns = crash.final, crash.final["turns"]
    assert final["status"] == "completed", final["status_reason"]
    keys = [turn["key"] for turn in turns]
    assert len(keys) == len(set(keys)) and set(keys) == expected_keys
    assert sorted(turn["seq"] for turn in turns) == list(range(1, len(turns) + 1))
    assert all(turn["status"] == "completed" for turn in turns)
    retried = [turn for turn in turns if turn["attempts"] != 1]
    assert not retried, (retried, [m.data for m in crash.after.messages if m.event == "retrying"])
    assert final["usage"]["input_tokens"] == sum(turn["input_tokens"] for turn in turns)
    assert final["usage"]["output_tokens"] == sum(turn["output_tokens"] for turn in turns)

    # Every turn the viewer saw completed was on disk at the kill, and stays as it was.
    assert crash.before.completed, "no turn completed before the kill"
    saved = crash.saved_at_kill
    for key, turn_id in crash.before.completed.items():
        assert saved[key].id == turn_id and saved[key].status == "completed"
    for key, turn in saved.items():
        assert crash.saved_at_end[key] == turn, f"{key} changed after the restart"
    killed = crash.before.streaming
    assert killed and not killed & saved.keys(), "the kill must land on a streaming turn"

    # Each turn was produced by one request; the turns saved before the kill by requests made
    # before it, the others by requests of the restarted server.
    requests, at_kill = crash.requests, len(crash.requests_at_kill)
    producers = {turn["key"]: request_index_of(turn["text"], requests) for turn in turns}
    assert len(set(producers.values())) == len(producers)
    for key, index in producers.items():
        assert (index < at_kill) == (key in saved), key
    # The only other requests are the ones the kill cut off, each asked again once, the same.
    cut_off = [i for i in range(len(requests)) if i not in producers.values()]
    assert all(i < at_kill for i in cut_off)
    assert len(cut_off) == len(killed)
    assert len(requests) == len(turns) + len(killed)
    for i in cut_off:
        again = [
            producers[key] for key in killed if requests[producers[key]].body == requests[i].body
        ]
        assert len(again) == 1 and again[0] >= at_kill

    # The reconnecting viewer: told to reload, then this process's events, none of them about
    # a turn finished before the kill; its streamed text of each turn is the saved text.
    after = crash.after
    assert after.messages[0].event == "reload"
    old_epoch = crash.before.last_id.rpartition("-")[0]
    new_ids = [m.id for m in after.messages[1:] if m.id]
    assert new_ids and len(set(new_ids)) == len(new_ids)
    assert all(not i.startswith(f"{old_epoch}-") for i in new_ids)
    assert after.messages[-1].json()["status"] == "completed"
    assert set(after.completed) == expected_keys - saved.keys()
    for key in after.completed:
        assert after.text[key] == crash.saved_at_end[key].text
    for key in killed:
        assert crash.saved_at_end[key].text != crash.before.text[key]  # a fresh reply, not glued

    assert "database is locked" not in crash.log
    assert "Traceback" not in crash.log
    return killed


# -- the tests ---------------------------------------------------------------------------------


def test_duel_killed_mid_turn_resumes_on_restart_with_saved_turns_intact_and_none_repeated(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    # ~0.3 s a turn: the kill lands while a turn is streaming.
    script_marked(fake_llm, "anthropic", [0.03] * 10)
    script_marked(fake_llm, "gemini", [0.03] * 10)
    body = {
        "topic": "Should a server survive being killed",
        "format": "duel",
        "rounds": 3,
        "seats": {"claude": {"provider": "anthropic"}, "gemini": {"provider": "gemini"}},
    }

    crash = crash_and_restart(fake_llm, tmp_path, body, completed_before_kill=3)

    killed = assert_nothing_lost_or_repeated(crash, DUEL_KEYS)
    assert len(killed) == 1  # past the openings, one turn runs at a time


def test_panel_killed_with_claims_in_flight_reruns_only_the_unfinished_claims(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    # Claude and Gemini claims are quick; the two Codex claims are slow the first time, so
    # the kill finds four claims saved and those two streaming.
    script_marked(fake_llm, "anthropic", [0.01] * 8)
    script_marked(fake_llm, "gemini", [0.01] * 4)
    script_marked(fake_llm, "openai", [0.3, 0.3, 0.01, 0.01])
    seats = {
        **{f"{side}_claude": {"provider": "anthropic"} for side in ("pro", "con")},
        **{f"{side}_gemini": {"provider": "gemini"} for side in ("pro", "con")},
        **{f"{side}_codex": {"provider": "openai"} for side in ("pro", "con")},
        **{role: {"provider": "anthropic"} for role in ("pro_summarizer", "con_summarizer")},
        "judge": {"provider": "anthropic"},
    }
    body = {"topic": "Should a panel survive a crash", "format": "panel", "seats": seats}

    crash = crash_and_restart(
        fake_llm, tmp_path, body, completed_before_kill=4, streaming_at_kill=2
    )

    killed = assert_nothing_lost_or_repeated(crash, PANEL_KEYS)
    assert killed == CODEX_CLAIMS
    assert Counter(r.provider for r in crash.requests) == {
        "anthropic": 5,
        "gemini": 2,
        "openai": 4,
    }
