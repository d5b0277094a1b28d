"""A society debate through the API against the fake providers: it runs its rounds, the page
groups them by round, and both exports carry it (every round; the final answer and agreement)."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.fakes.llm_server import FakeLLMServer
from tests.web.conftest import wait_for_debate

QUESTION = "What is 17 * 3?"


def test_a_society_debate_runs_its_rounds_and_exports_the_majority(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    fake_llm.rule(contains=QUESTION, provider="anthropic", reply="17 threes.\nAnswer: 51")
    fake_llm.rule(contains=QUESTION, provider="openai", reply="Fifty-one.\n**Answer:** 51.")
    fake_llm.rule(contains=QUESTION, provider="gemini", reply="I think 50.\nAnswer: 50")
    response = client.post(
        "/api/debates", json={"topic": QUESTION, "format": "society", "rounds": 1}
    )
    assert response.status_code == 201, response.text
    debate_id = response.json()["id"]
    assert wait_for_debate(client, debate_id) == "completed"

    prompts = [request for request in fake_llm.requests if QUESTION in str(request)]
    assert len(prompts) == 6

    page = client.get(f"/debates/{debate_id}").text
    assert "Round 1 · Answers" in page
    assert "Round 2 · Updates" in page
    assert "The agents&#39; final answer" in page or "The agents' final answer" in page
    assert "Final answer: 51 (2 of 3 agents agree)" in page

    transcript = client.get(f"/debates/{debate_id}/transcript.md").text
    assert "## Round 1" in transcript
    assert "## Round 2" in transcript
    assert transcript.count("I think 50.") == 2

    finals = client.get(f"/debates/{debate_id}/finals.md").text
    assert "Final answer: 51 (2 of 3 agents agree)" in finals
    assert "## Last answers (round 2)" in finals
    assert "I think 50." in finals


def test_the_form_offers_the_society_with_a_seat_per_agent(client: TestClient) -> None:
    page = client.get("/").text
    assert 'name="format" value="society"' in page
    for role in ("agent_1", "agent_2", "agent_3"):
        assert f'<select id="seat-society-{role}" name="seat-society-{role}"' in page


def test_the_form_starts_a_society_with_the_chosen_seats(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    fake_llm.rule(contains=QUESTION, reply="Answer: 51")
    response = client.post(
        "/debates",
        data={
            "topic": QUESTION,
            "format": "society",
            "rounds": "1",
            "seat-society-agent_1": "openai",
            "seat-society-agent_2": "openai",
            "seat-society-agent_3": "anthropic",
        },
        follow_redirects=False,
    )
    assert response.status_code in (302, 303), response.text
    debate_id = response.headers["location"].rstrip("/").split("/")[-1]
    assert wait_for_debate(client, debate_id) == "completed"
    finals = client.get(f"/debates/{debate_id}/finals.md").text
    assert "Final answer: 51 (3 of 3 agents agree)" in finals
