"""Follow-up questions through the API and the page's form: a completed debate's seats
answer with the debate in view, as new saved turns that reach the reports; a debate that is
running, failed or unknown is refused with the reason; a question is checked like a topic."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from app.followups import MAX_QUESTION_CHARS
from tests.fakes.llm_server import FakeLLMServer
from tests.web.conftest import start_duel, wait_for_debate

QUESTION = "Would the answer change for a team of one maintaining legacy code?"


def _debate(client: TestClient, debate_id: str) -> dict[str, Any]:
    response = client.get(f"/api/debates/{debate_id}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _request_text(body: Any) -> str:
    """Everything a recorded request asked of the model, whichever wire it came in on."""
    return str(body)


def _completed_duel(client: TestClient, fake_llm: FakeLLMServer) -> str:
    fake_llm.rule(contains="Round 1, your opening", reply="Spaces, for OPENING-MARK-CLAUDE.")
    fake_llm.rule(contains="Form a clear position", reply="Tabs, for OPENING-MARK-GEMINI.")
    debate_id = start_duel(client)
    assert wait_for_debate(client, debate_id) == "completed"
    return debate_id


def test_both_duel_seats_answer_a_followup_as_new_turns_that_saw_the_debate(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    fake_llm.rule(contains="Follow-up question 1", reply="ANSWER-MARK after the debate.")
    debate_id = _completed_duel(client, fake_llm)
    synthesis = _debate(client, debate_id)["synthesis"]
    turns_before = len(_debate(client, debate_id)["turns"])

    response = client.post(f"/api/debates/{debate_id}/followups", json={"question": QUESTION})

    assert response.status_code == 202, response.text
    assert response.json()["status"] in ("queued", "running")
    assert response.json()["followups"][0]["question"] == QUESTION
    assert wait_for_debate(client, debate_id) == "completed"
    debate = _debate(client, debate_id)
    answers = [turn for turn in debate["turns"] if turn["phase"] == "followup"]
    assert sorted(turn["key"] for turn in answers) == [
        "q1.followup.claude",
        "q1.followup.gemini",
    ]
    assert len(debate["turns"]) == turns_before + 2
    last_round = max(t["round"] for t in debate["turns"] if t["phase"] != "followup")
    assert {turn["round"] for turn in answers} == {last_round + 1}
    assert all("ANSWER-MARK" in turn["text"] for turn in answers)
    # The debate's own conclusion is untouched by its follow-up.
    assert debate["synthesis"] == synthesis
    asked = [r for r in fake_llm.requests if QUESTION in _request_text(r.body)]
    assert len(asked) == 2
    for request in asked:
        seen = _request_text(request.body)
        assert "OPENING-MARK-CLAUDE" in seen and "OPENING-MARK-GEMINI" in seen


def test_the_transcript_and_finals_carry_the_question_and_its_answers(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    fake_llm.rule(contains="Follow-up question 1", reply="ANSWER-MARK in the report.")
    debate_id = _completed_duel(client, fake_llm)
    client.post(f"/api/debates/{debate_id}/followups", json={"question": QUESTION})
    assert wait_for_debate(client, debate_id) == "completed"

    transcript = client.get(f"/debates/{debate_id}/transcript.md").text
    finals = client.get(f"/debates/{debate_id}/finals.md").text

    assert "## Follow-up 1" in transcript
    assert f"> {QUESTION}" in transcript
    assert transcript.count("ANSWER-MARK in the report.") == 2
    # The question follows the debate: after its last round.
    assert transcript.index("## Follow-up 1") > transcript.index("## Round 1")
    assert "## Follow-up questions" in finals and f"> {QUESTION}" in finals
    assert finals.count("ANSWER-MARK in the report.") == 2


def test_a_second_followup_sees_the_first_one_and_its_answers(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    fake_llm.rule(contains="Follow-up question 2", reply="SECOND-ANSWER.")
    fake_llm.rule(contains="Follow-up question 1", reply="FIRST-ANSWER-MARK.")
    debate_id = _completed_duel(client, fake_llm)
    client.post(f"/api/debates/{debate_id}/followups", json={"question": "First question?"})
    assert wait_for_debate(client, debate_id) == "completed"

    response = client.post(
        f"/api/debates/{debate_id}/followups", json={"question": "Second question?"}
    )

    assert response.status_code == 202, response.text
    assert wait_for_debate(client, debate_id) == "completed"
    keys = {turn["key"] for turn in _debate(client, debate_id)["turns"]}
    assert {"q2.followup.claude", "q2.followup.gemini"} <= keys
    second = [r for r in fake_llm.requests if "Second question?" in _request_text(r.body)]
    assert second and all("FIRST-ANSWER-MARK" in _request_text(r.body) for r in second)
    assert all("First question?" in _request_text(r.body) for r in second)


def test_a_panel_followup_is_answered_by_a_debater_of_each_side_and_the_judge(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    fake_llm.rule(contains="Follow-up question 1", reply="PANEL-ANSWER.")
    response = client.post(
        "/api/debates", json={"topic": "Should tests run before merge?", "format": "panel"}
    )
    debate_id = response.json()["id"]
    assert wait_for_debate(client, debate_id) == "completed"
    synthesis = _debate(client, debate_id)["synthesis"]
    report_before = client.get(f"/debates/{debate_id}/finals.md").text

    client.post(f"/api/debates/{debate_id}/followups", json={"question": QUESTION})

    assert wait_for_debate(client, debate_id) == "completed"
    debate = _debate(client, debate_id)
    answers = {t["role"]: t for t in debate["turns"] if t["phase"] == "followup"}
    assert sorted(answers) == ["con_claude", "judge", "pro_claude"]
    assert {t["round"] for t in answers.values()} == {4}
    assert debate["synthesis"] == synthesis and debate["rounds_run"] == 3
    # The report's claims and judgement are still the debate's, not the answers.
    report = client.get(f"/debates/{debate_id}/finals.md").text
    assert report.startswith(report_before.rstrip("\n"))
    assert report.count("PANEL-ANSWER.") == 3


def test_a_running_debate_refuses_a_followup_with_409(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    fake_llm.set_default_token_delay(0.2)
    debate_id = start_duel(client)

    response = client.post(f"/api/debates/{debate_id}/followups", json={"question": QUESTION})

    assert response.status_code == 409
    assert "once it has completed" in response.json()["detail"]
    client.post(f"/api/debates/{debate_id}/cancel")
    assert _debate(client, debate_id)["followups"] == []


def test_a_failed_debate_is_resumed_before_it_takes_a_followup(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    fake_llm.script(fault="http_401", error_message="invalid x-api-key", times=4)
    debate_id = start_duel(client)
    assert wait_for_debate(client, debate_id) == "failed"

    response = client.post(f"/api/debates/{debate_id}/followups", json={"question": QUESTION})

    assert response.status_code == 409
    assert "resume it first" in response.json()["detail"]


def test_an_answer_that_fails_is_asked_again_on_resume(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    debate_id = _completed_duel(client, fake_llm)
    # An auth error is not retried: this one reply fails the Gemini seat's answer.
    fake_llm.script(provider="gemini", fault="http_401", error_message="key revoked")
    client.post(f"/api/debates/{debate_id}/followups", json={"question": QUESTION})
    assert wait_for_debate(client, debate_id) == "failed"
    fake_llm.rule(contains="Follow-up question 1", reply="ANSWERED-ON-RESUME.")

    assert client.post(f"/api/debates/{debate_id}/resume").status_code == 200

    assert wait_for_debate(client, debate_id) == "completed"
    answers = [t for t in _debate(client, debate_id)["turns"] if t["phase"] == "followup"]
    assert {t["key"] for t in answers} == {"q1.followup.claude", "q1.followup.gemini"}
    assert all(t["status"] == "completed" for t in answers)
    assert any("ANSWERED-ON-RESUME" in t["text"] for t in answers)


def test_a_question_is_checked_like_a_topic(client: TestClient, fake_llm: FakeLLMServer) -> None:
    debate_id = _completed_duel(client, fake_llm)
    url = f"/api/debates/{debate_id}/followups"

    empty = client.post(url, json={"question": "   "})
    oversized = client.post(url, json={"question": "x" * (MAX_QUESTION_CHARS + 1)})
    extra = client.post(url, json={"question": "Why?", "seats": {}})
    control = client.post(url, json={"question": "Why\u0007?"})

    assert [r.status_code for r in (empty, oversized, extra, control)] == [422] * 4
    assert "the question is empty" in empty.text
    assert empty.json()["detail"][0]["loc"] == ["body", "question"]
    assert _debate(client, debate_id)["followups"] == []
    assert client.post("/api/debates/nope/followups", json={"question": "Why?"}).status_code == 404


def test_the_page_form_asks_a_followup_and_shows_its_errors(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    fake_llm.rule(contains="Follow-up question 1", reply="FORM-ANSWER.")
    debate_id = _completed_duel(client, fake_llm)
    page = client.get(f"/debates/{debate_id}").text
    assert f'action="/debates/{debate_id}/followups"' in page

    empty = client.post(f"/debates/{debate_id}/followups", data={"question": " "})
    asked = client.post(
        f"/debates/{debate_id}/followups", data={"question": QUESTION}, follow_redirects=False
    )

    assert empty.status_code == 422 and "the question is empty" in empty.text
    assert asked.status_code == 303 and asked.headers["location"] == f"/debates/{debate_id}"
    assert wait_for_debate(client, debate_id) == "completed"
    page = client.get(f"/debates/{debate_id}").text
    assert "Follow-up answers" in page and "FORM-ANSWER." in page
    assert 'href="#g-2-followup"' in page
