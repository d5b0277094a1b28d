"""Re-running a finished debate with other models, through the API and the page's form: the
new debate keeps the topic, format, options and context, changes only the seats asked,
names the debate it re-runs (and that one lists it), and the compare page shows both
syntheses side by side."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.fakes.llm_server import FakeLLMServer
from tests.web.conftest import wait_for_debate

CONTEXT = [{"name": "notes.md", "text": "We deploy on a single VM.\nBackups are nightly.\n"}]


def _debate(client: TestClient, debate_id: str) -> dict[str, Any]:
    response = client.get(f"/api/debates/{debate_id}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _finished_duel(client: TestClient, fake_llm: FakeLLMServer) -> str:
    fake_llm.rule(
        contains="Write the final synthesis",
        reply="Positions not fully reconciled after 2 round(s). Key tension: SYNTH-A",
        provider="anthropic",
    )
    response = client.post(
        "/api/debates",
        json={
            "topic": "SQLite or Postgres for a small app?",
            "topic_type": "tech",
            "rounds": 2,
            "history": True,
            "context": CONTEXT,
        },
    )
    assert response.status_code == 201, response.text
    debate_id: str = response.json()["id"]
    assert wait_for_debate(client, debate_id) == "completed"
    return debate_id


def test_a_rerun_keeps_the_request_changes_the_seat_asked_and_links_both_ways(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    original_id = _finished_duel(client, fake_llm)

    response = client.post(
        f"/api/debates/{original_id}/rerun",
        json={"seats": {"claude": {"provider": "openai", "model": "gpt-test"}}},
    )

    assert response.status_code == 202, response.text
    rerun_id = response.json()["id"]
    assert rerun_id != original_id and response.json()["rerun_of"] == original_id
    assert wait_for_debate(client, rerun_id) == "completed"
    original, rerun = _debate(client, original_id), _debate(client, rerun_id)
    same = ("topic", "format", "topic_type", "rounds", "seed", "history", "context")
    assert {name: rerun[name] for name in same} == {name: original[name] for name in same}
    seats = {seat["role"]: seat for seat in rerun["seats"]}
    assert (seats["claude"]["provider"], seats["claude"]["model"]) == ("openai", "gpt-test")
    assert seats["gemini"] == {s["role"]: s for s in original["seats"]}["gemini"]
    assert {t["provider"] for t in rerun["turns"] if t["role"] == "claude"} == {"openai"}
    assert original["reruns"] == [rerun_id]
    # The re-run's debaters read the same context file.
    opening = next(r for r in fake_llm.requests_for("openai"))
    assert "We deploy on a single VM." in str(opening.body)


def test_a_rerun_without_a_body_runs_the_same_seats_again(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    original_id = _finished_duel(client, fake_llm)

    response = client.post(f"/api/debates/{original_id}/rerun")

    assert response.status_code == 202, response.text
    # The answer is the debate as saved, whether or not its job has started since.
    assert response.json()["status"] == "queued"
    assert response.json()["seats"] == _debate(client, original_id)["seats"]
    wait_for_debate(client, response.json()["id"])


def test_a_rerun_is_refused_while_running_for_an_unknown_seat_and_an_unknown_debate(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    original_id = _finished_duel(client, fake_llm)
    unknown_seat = client.post(
        f"/api/debates/{original_id}/rerun", json={"seats": {"judge": {"provider": "openai"}}}
    )
    unknown_provider = client.post(
        f"/api/debates/{original_id}/rerun", json={"seats": {"claude": {"provider": "nope"}}}
    )
    fake_llm.set_default_token_delay(0.2)
    running = client.post("/api/debates", json={"topic": "Still going", "rounds": 1}).json()["id"]

    while_running = client.post(f"/api/debates/{running}/rerun", json={})

    assert unknown_seat.status_code == 422 and "duel has no seat judge" in unknown_seat.text
    assert unknown_provider.status_code == 422 and "unknown provider" in unknown_provider.text
    assert while_running.status_code == 409
    assert "once it has finished" in while_running.json()["detail"]
    assert client.post("/api/debates/nope/rerun", json={}).status_code == 404
    assert _debate(client, original_id)["reruns"] == []
    client.post(f"/api/debates/{running}/cancel")


def test_the_page_form_reruns_with_a_changed_seat_and_the_pages_link_each_other(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    original_id = _finished_duel(client, fake_llm)
    page = client.get(f"/debates/{original_id}").text
    assert f'action="/debates/{original_id}/rerun"' in page
    assert 'name="seat-gemini"' in page and 'name="model-claude"' in page

    response = client.post(
        f"/debates/{original_id}/rerun",
        data={"seat-claude": "openai", "model-claude": "", "seat-gemini": "gemini"},
        follow_redirects=False,
    )

    assert response.status_code == 303
    rerun_id = response.headers["location"].rsplit("/", 1)[-1]
    assert wait_for_debate(client, rerun_id) == "completed"
    rerun_page = client.get(f"/debates/{rerun_id}").text
    assert f'href="/debates/{original_id}"' in rerun_page and "Re-run of" in rerun_page
    assert f"/debates/{original_id}/compare/{rerun_id}" in rerun_page
    original_page = client.get(f"/debates/{original_id}").text
    assert f'href="/debates/{rerun_id}"' in original_page
    bad = client.post(
        f"/debates/{original_id}/rerun", data={"seat-claude": "openai", "model-claude": "-x"}
    )
    assert bad.status_code == 422 and "Claude:" in bad.text


def test_the_compare_page_shows_both_syntheses_sanitized(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    original_id = _finished_duel(client, fake_llm)
    fake_llm.reset()
    fake_llm.rule(
        contains="Write the final synthesis",
        reply="Positions not fully reconciled after 2 round(s). Key tension: SYNTH-B "
        "<script>alert(1)</script>",
    )
    rerun_id = client.post(f"/api/debates/{original_id}/rerun", json={}).json()["id"]
    assert wait_for_debate(client, rerun_id) == "completed"

    response = client.get(f"/debates/{original_id}/compare/{rerun_id}")

    assert response.status_code == 200
    page = response.text
    assert "SYNTH-A" in page and "SYNTH-B" in page
    assert page.index("SYNTH-A") < page.index("SYNTH-B")
    assert "<script>alert(1)</script>" not in page
    assert client.get(f"/debates/{original_id}/compare/nope").status_code == 404
