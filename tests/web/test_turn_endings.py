"""A turn that ended early says so on the debate page and in the JSON API."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.fakes.llm_server import FakeLLMServer
from tests.web.conftest import start_duel, wait_for_debate
from tests.web.sse import parse

CUT_NOTE = "Cut at the output limit (1,024 tokens)."


def test_a_turn_cut_at_the_output_limit_is_marked_on_the_page_and_in_the_api(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    fake_llm.script(
        provider="anthropic",
        reply="Tabs, because the indentation of",
        stop_reason="max_tokens",
        output_tokens=1024,
    )
    debate_id = start_duel(client)
    assert wait_for_debate(client, debate_id) == "completed"

    page = client.get(f"/debates/{debate_id}").text
    assert page.count(CUT_NOTE) == 1
    assert "Tabs, because the indentation of" in page

    turns = client.get(f"/api/debates/{debate_id}").json()["turns"]
    endings = {
        turn["provider"]: turn["ended_early"] for turn in turns if turn["phase"] == "opening"
    }
    assert endings == {"anthropic": "output_limit", "gemini": None}


def test_turns_that_end_on_their_own_carry_no_mark(client: TestClient) -> None:
    debate_id = start_duel(client)
    assert wait_for_debate(client, debate_id) == "completed"

    page = client.get(f"/debates/{debate_id}").text
    assert "ended-early" not in page and "output limit" not in page
    turns = client.get(f"/api/debates/{debate_id}").json()["turns"]
    assert turns and all(turn["ended_early"] is None for turn in turns)


def test_the_live_page_stream_brings_the_mark_with_the_finished_turn(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    fake_llm.script(
        provider="gemini", reply="Spaces, since", stop_reason="MAX_TOKENS", output_tokens=1024
    )
    debate_id = start_duel(client)
    assert wait_for_debate(client, debate_id) == "completed"

    response = client.get(f"/debates/{debate_id}/stream")
    finished = [
        message.data
        for message in parse(response.text)
        if 'class="turn turn-completed"' in message.data and message.event != "end"
    ]

    marked = [fragment for fragment in finished if CUT_NOTE in fragment]
    assert len(marked) == 1 and "Spaces, since" in marked[0]
