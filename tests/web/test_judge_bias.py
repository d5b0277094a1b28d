"""The judge's bias controls end to end: a panel runs on the real SDK adapters against the fake
LLM server, started from the API or the form. A blind judge's recorded prompts name no side or
model, and its marks land in the Pro/Con columns; a judge asked twice with the sides swapped
leaves an agreement line on the page, in the HTML report and in the Markdown finals; a judge
on a debater's provider is a warning in the API answer, on the page and in the reports."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from fastapi.testclient import TestClient

from tests.fakes.llm_server import FakeLLMServer
from tests.formats.judgements import SIDE_ONE_AHEAD
from tests.web.conftest import wait_for_debate
from tests.web.test_report import JUDGE_ASK, scorecard_rows

NAMES = re.compile(r"\b(pro|con|claude|gemini|codex|openai|gpt|anthropic)\b", re.IGNORECASE)
DEBATERS = ("pro_claude", "pro_gemini", "pro_codex", "con_claude", "con_gemini", "con_codex")
PRO_CLAIM = "Reviews catch defects before release."
CON_CLAIM = "Reviews stall delivery for days."
PRO_SUMMARY = "This side: reviews catch defects early; Debater 2 brings numbers."
CON_SUMMARY = "This side: reviews stall delivery; Debater 1 measured queue times."
# Side 1 is the side shown first: pro in the first judgement, con in the swapped one.
FIRST = SIDE_ONE_AHEAD
# Con shown first gets 5, pro shown second 7: pro is ahead again.
SECOND_AGREES = FIRST.replace("Side 1: A 8/10 | Side 2: B 6/10", "Side 1: B 5/10 | Side 2: A 7/10")
AGREEMENT = (
    "The two judgements agree: Pro ahead in both (Pro shown first: Pro 8.0/10, Con 6.0/10; "
    "Con shown first: Pro 7.0/10, Con 5.0/10)."
)
DISAGREEMENT = (
    "The two judgements disagree: Pro ahead with Pro shown first, Con ahead with Con shown "
    "first (Pro shown first: Pro 8.0/10, Con 6.0/10; Con shown first: Pro 6.0/10, Con 8.0/10)."
)


def script_panel(fake_llm: FakeLLMServer, *, swapped_reply: str) -> None:
    """Claims and summaries with known words; each judgement scripted by the order shown."""
    fake_llm.rule(contains="Your stance: PRO", reply=PRO_CLAIM)
    fake_llm.rule(contains="Your stance: CON", reply=CON_CLAIM)
    fake_llm.rule(contains=f"## Side 1 summary\n\n{PRO_SUMMARY}", reply=FIRST)
    fake_llm.rule(contains=f"## Side 1 summary\n\n{CON_SUMMARY}", reply=swapped_reply)
    fake_llm.rule(contains=PRO_CLAIM, reply=PRO_SUMMARY)
    fake_llm.rule(contains=CON_CLAIM, reply=CON_SUMMARY)


def seats(debaters: str, judge: str) -> dict[str, dict[str, str]]:
    chosen = {role: {"provider": debaters} for role in DEBATERS}
    for role in ("pro_summarizer", "con_summarizer", "judge"):
        chosen[role] = {"provider": judge}
    return chosen


def start_panel(client: TestClient, **fields: Any) -> dict[str, Any]:
    body = {"topic": "Is code review worth the time", "format": "panel", **fields}
    response = client.post("/api/debates", json=body)
    assert response.status_code == 201, response.text
    started: dict[str, Any] = response.json()
    assert wait_for_debate(client, started["id"]) == "completed"
    return started


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def judge_prompts(fake_llm: FakeLLMServer) -> list[str]:
    """What each judgement request said to the model (its system text and messages)."""
    prompts = []
    for request in fake_llm.requests:
        body = request.body if isinstance(request.body, dict) else {}
        said = "\n".join(strings([body.get("system"), body.get("messages")]))
        if JUDGE_ASK in said:
            prompts.append(said)
    return prompts


def test_a_blind_judge_judged_twice_names_no_one_and_its_verdicts_agree_everywhere(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    script_panel(fake_llm, swapped_reply=SECOND_AGREES)
    started = start_panel(
        client, blind_judge=True, swap_judge=True, seats=seats("anthropic", "anthropic")
    )
    debate_id = started["id"]

    prompts = judge_prompts(fake_llm)
    assert len(prompts) == 2
    for prompt in prompts:
        assert NAMES.findall(prompt) == []
    assert (started["blind_judge"], started["swap_judge"]) == (True, True)

    page = client.get(f"/debates/{debate_id}").text
    report = client.get(f"/debates/{debate_id}/report.html").text
    for html in (page, report):
        rows = scorecard_rows(html)
        assert rows[0] == ["Criterion", "Pro", "Con"]
        assert rows[4] == ["Originality", "B familiar", "A new angle"]
        assert rows[5] == ["Overall", "A 8.0/10", "B 6.0/10"]
        assert AGREEMENT in html
    assert "Phase 3 · Judgement, sides swapped (con shown first)" in page

    finals = client.get(f"/debates/{debate_id}/finals.md").text
    assert f"**Judged twice, sides swapped**: {AGREEMENT}" in finals
    assert "**Blind judge**: the judge saw the sides as Side 1 and Side 2" in finals
    assert "| Overall | A (8.0/10) | B (6.0/10) |" in finals


def test_a_judge_that_favours_the_side_it_reads_first_is_shown_to_disagree(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    script_panel(fake_llm, swapped_reply=FIRST)
    debate_id = start_panel(
        client, blind_judge=True, swap_judge=True, seats=seats("anthropic", "anthropic")
    )["id"]

    assert DISAGREEMENT in client.get(f"/debates/{debate_id}").text
    finals = client.get(f"/debates/{debate_id}/finals.md").text
    assert f"**Judged twice, sides swapped**: {DISAGREEMENT}" in finals


def test_a_judge_on_the_debaters_provider_is_a_warning_in_the_api_page_and_reports(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    script_panel(fake_llm, swapped_reply=FIRST)
    started = start_panel(client, blind_judge=True, seats=seats("anthropic", "anthropic"))

    (warning,) = started["warnings"]
    assert warning.startswith("Judge (the judge) runs on anthropic, the same provider as Pro")
    assert "Con · Codex, whose arguments it judges" in warning
    debate_id = started["id"]
    assert client.get(f"/api/debates/{debate_id}").json()["warnings"] == [warning]
    assert f"Warning: {warning}" in client.get(f"/debates/{debate_id}").text
    assert warning in client.get(f"/debates/{debate_id}/report.html").text
    assert f"**Warning**: {warning}" in client.get(f"/debates/{debate_id}/finals.md").text
    assert f"- **Warning**: {warning}" in client.get(f"/debates/{debate_id}/transcript.md").text


def test_a_judge_on_a_provider_no_debater_uses_gets_no_warning(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    script_panel(fake_llm, swapped_reply=FIRST)
    started = start_panel(client, blind_judge=True, seats=seats("openai", "anthropic"))

    assert started["warnings"] == []
    debate_id = started["id"]
    assert "Warning:" not in client.get(f"/debates/{debate_id}").text
    assert "**Warning**" not in client.get(f"/debates/{debate_id}/finals.md").text


def test_the_form_has_both_options_and_starts_a_panel_with_them(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    form = client.get("/").text
    assert 'name="blind_judge"' in form and 'name="swap_judge"' in form
    script_panel(fake_llm, swapped_reply=SECOND_AGREES)
    fields = {
        "topic": "Is code review worth the time",
        "format": "panel",
        "topic_type": "general",
        "rounds": "1",
        "blind_judge": "on",
        "swap_judge": "on",
        **{f"seat-panel-{role}": "anthropic" for role in DEBATERS},
    }

    response = client.post("/debates", data=fields, follow_redirects=False)

    assert response.status_code == 303, response.text
    debate_id = response.headers["location"].rsplit("/", 1)[-1]
    assert wait_for_debate(client, debate_id) == "completed"
    saved = client.get(f"/api/debates/{debate_id}").json()
    assert (saved["blind_judge"], saved["swap_judge"]) == (True, True)
    assert AGREEMENT in client.get(f"/debates/{debate_id}").text


def test_the_api_refuses_an_option_that_is_not_a_yes_or_no(client: TestClient) -> None:
    response = client.post(
        "/api/debates", json={"topic": "Code review", "format": "panel", "swap_judge": "twice"}
    )
    assert response.status_code == 422
    assert "swap_judge" in response.text
