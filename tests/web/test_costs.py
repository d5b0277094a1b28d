"""Cost in money where people and scripts read a debate: the JSON API (a number, or null for
unknown), the history, the debate page; and the money budget as the form and the API take it,
refused with a clear error when a seat's model has no price."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from app import store
from app.db import session_scope
from app.spec import DebateSpec, Seat
from tests.fakes.llm_server import FakeLLMServer
from tests.web.conftest import start_duel, wait_for_debate

SEATS = {
    "claude": {"provider": "anthropic", "model": "claude-sonnet-4-6"},
    "gemini": {"provider": "gemini", "model": "gemini-2.5-flash"},
}


def script_calls(fake_llm: FakeLLMServer) -> None:
    """Claude: 1000 in / 200 out = $0.006 a call; Gemini: 2000 in / 100 out = $0.00085."""
    fake_llm.script(
        provider="anthropic", reply="Claude says so.", input_tokens=1000, output_tokens=200, times=5
    )
    fake_llm.script(
        provider="gemini", reply="Gemini disagrees.", input_tokens=2000, output_tokens=100, times=5
    )


def finished_duel(client: TestClient, fake_llm: FakeLLMServer, **fields: object) -> str:
    script_calls(fake_llm)
    debate_id = start_duel(client, seats=SEATS, **fields)
    assert wait_for_debate(client, debate_id) == "completed"
    return debate_id


def test_the_api_gives_each_turns_cost_and_the_debates_as_numbers(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    debate_id = finished_duel(client, fake_llm)

    debate = client.get(f"/api/debates/{debate_id}").json()

    assert debate["cost"] == 0.01285
    assert debate["budget_usd"] is None
    costs = {(turn["phase"], turn["model"]): turn["cost"] for turn in debate["turns"]}
    assert costs == {
        ("opening", "claude-sonnet-4-6"): 0.006,
        ("opening", "gemini-2.5-flash"): 0.00085,
        ("synthesis", "claude-sonnet-4-6"): 0.006,
    }
    listed = client.get("/api/debates").json()["items"]
    assert [item["cost"] for item in listed if item["id"] == debate_id] == [0.01285]


def test_the_api_says_null_for_the_cost_of_an_unpriced_model(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    fake_llm.script(reply="Words.", input_tokens=10, output_tokens=10, times=5)
    seats = {**SEATS, "gemini": {"provider": "openai", "model": "house-model-7b"}}
    debate_id = start_duel(client, seats=seats)
    assert wait_for_debate(client, debate_id) == "completed"

    debate = client.get(f"/api/debates/{debate_id}").json()

    assert debate["cost"] is None
    unpriced = [t["cost"] for t in debate["turns"] if t["model"] == "house-model-7b"]
    assert unpriced == [None]


def test_the_api_takes_a_money_budget_and_gives_it_back(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    debate_id = finished_duel(client, fake_llm, budget_usd=0.5)
    assert client.get(f"/api/debates/{debate_id}").json()["budget_usd"] == 0.5


def test_the_api_refuses_a_budget_when_a_seats_model_has_no_price(client: TestClient) -> None:
    seats = {**SEATS, "gemini": {"provider": "openai", "model": "house-model-7b"}}
    response = client.post(
        "/api/debates", json={"topic": "Budget?", "seats": seats, "budget_usd": 1}
    )
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["loc"] == ["body", "budget_usd"]
    assert "Gemini's model house-model-7b (openai) has no price" in error["msg"]


def test_the_api_refuses_a_budget_that_is_no_amount(client: TestClient) -> None:
    response = client.post("/api/debates", json={"topic": "Budget?", "budget_usd": -2})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "budget_usd"]


def test_the_history_shows_what_each_debate_cost(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    finished_duel(client, fake_llm)

    page = client.get("/debates").text

    assert re.search(r"<th[^>]*>Cost</th>", page)
    assert re.search(r'<td class="num cost" data-label="Cost">\$0\.0129</td>', page)


def test_the_history_says_unknown_for_a_debate_on_an_unpriced_model(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    fake_llm.script(reply="Words.", input_tokens=10, output_tokens=10, times=5)
    seats = {role: {"provider": "openai", "model": "house-model-7b"} for role in SEATS}
    debate_id = start_duel(client, seats=seats)
    assert wait_for_debate(client, debate_id) == "completed"

    page = client.get("/debates").text

    assert re.search(r'data-label="Cost">unknown</td>', page)
    assert 'data-label="Cost">$0.00<' not in page


def test_the_debate_page_shows_the_total_and_each_turns_cost(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    debate_id = finished_duel(client, fake_llm, budget_usd=1)

    page = client.get(f"/debates/{debate_id}").text

    assert re.search(r'id="cost-total">\$0\.0129<', page)
    assert re.search(r'id="budget-usd">of a budget of \$1\.00<', page)
    opening = re.search(r'<tr id="cost-r1-opening-claude">(.*?)</tr>', page)
    assert opening is not None
    assert '<td class="num" data-label="Cost">$0.0060</td>' in opening.group(1)


def test_the_form_takes_a_budget_in_dollars(client: TestClient, fake_llm: FakeLLMServer) -> None:
    script_calls(fake_llm)
    form = {
        "topic": "Budget from the form",
        "format": "duel",
        "rounds": "1",
        "budget_usd": "$0.75",
        "seat-duel-claude": "anthropic",
        "model-duel-claude": "claude-sonnet-4-6",
        "seat-duel-gemini": "gemini",
        "model-duel-gemini": "gemini-2.5-flash",
    }
    response = client.post("/debates", data=form, follow_redirects=False)
    assert response.status_code == 303, response.text
    debate_id = response.headers["location"].rsplit("/", 1)[1]
    wait_for_debate(client, debate_id)
    assert client.get(f"/api/debates/{debate_id}").json()["budget_usd"] == 0.75


def test_the_form_says_which_seat_has_no_price_for_a_budget(client: TestClient) -> None:
    form = {
        "topic": "Budget from the form",
        "format": "duel",
        "budget_usd": "2",
        "seat-duel-claude": "anthropic",
        "model-duel-claude": "claude-sonnet-4-6",
        "seat-duel-gemini": "openai",
        "model-duel-gemini": "house-model-7b",
    }
    response = client.post("/debates", data=form)
    assert response.status_code == 422
    error = re.search(r'<p class="field-error" id="budget_usd-error"[^>]*>(.*?)</p>', response.text)
    assert error is not None
    assert "Gemini&#39;s model house-model-7b (openai) has no price" in error.group(1)


def test_the_form_refuses_a_budget_that_is_no_amount(client: TestClient) -> None:
    response = client.post("/debates", data={"topic": "Budget?", "budget_usd": "lots"})
    assert response.status_code == 422
    assert 'id="budget_usd-error"' in response.text
    assert "A budget is an amount of US dollars" in response.text


def test_a_running_debates_cost_block_fetches_itself_until_the_debate_ends(
    client: TestClient,
) -> None:
    engine = client.app.state.engine  # type: ignore[attr-defined]
    spec = DebateSpec(topic="Running", seats=(Seat("claude", "Claude", "anthropic"),))
    with session_scope(engine) as session:
        debate_id = store.create_debate(session, spec=spec).id
        store.set_status(session, debate_id=debate_id, status="running")

    refresh = f'hx-get="/debates/{debate_id}/cost"'
    assert refresh in client.get(f"/debates/{debate_id}").text
    fragment = client.get(f"/debates/{debate_id}/cost").text
    assert refresh in fragment and 'id="cost-total">$0.00<' in fragment

    with session_scope(engine) as session:
        store.finish_debate(session, debate_id=debate_id, status="cancelled", outcome=None)
    assert refresh not in client.get(f"/debates/{debate_id}/cost").text
    assert client.get("/debates/nosuchdebate/cost").status_code == 404


def test_a_debate_stopped_by_its_money_budget_says_so_on_its_page(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    fake_llm.script(
        provider="anthropic", reply="Point.", input_tokens=1000, output_tokens=200, times=9
    )
    seats = {role: SEATS["claude"] for role in SEATS}
    debate_id = start_duel(client, seats=seats, rounds=3, budget_usd=0.01)
    assert wait_for_debate(client, debate_id) == "failed"

    debate = client.get(f"/api/debates/{debate_id}").json()
    assert debate["status_reason"] == "money budget reached: $0.0120 of $0.01 spent"
    page = client.get(f"/debates/{debate_id}").text
    assert 'id="money-budget-stop"' in page
    assert "Stopped: the money budget was reached." in page
