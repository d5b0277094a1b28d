"""Follow-up questions as the formats plan them: nothing until one is asked; then, once the
debate itself is done, the chosen seats answer together with the debate in view; each
question in turn, seeing the earlier ones; the debate's outcome is unchanged; a long debate
is cut to the budget, oldest turns first, and the prompt says so."""

from __future__ import annotations

from dataclasses import replace

from app.formats import duel, panel
from app.formats.followups import RECORD_BUDGET_CHARS, followup_number
from app.spec import DebateSpec
from tests.formats.driver import all_text, marker, play

DUEL = DebateSpec(topic="Tabs or spaces?", format="duel", rounds=3)
PANEL = DebateSpec(topic="Should tests run before merge?", format="panel")


def test_no_followup_is_planned_until_one_is_asked() -> None:
    played = play(duel.FORMAT, DUEL, checks=["no", "no"])

    assert not any(plan.phase == "followup" for plan in played.plans)


def test_both_duel_seats_answer_after_the_synthesis_in_one_batch() -> None:
    asked = replace(DUEL, followups=("What about YAML files?",))

    played = play(duel.FORMAT, asked, checks=["no", "no"])

    assert played.batch_keys()[-1] == ["q1.followup.claude", "q1.followup.gemini"]
    synthesis = next(plan for plan in played.plans if plan.phase == "synthesis")
    assert {plan.round for plan in played.batches[-1]} == {synthesis.round + 1}
    for plan in played.batches[-1]:
        prompt = all_text(plan)
        assert "What about YAML files?" in prompt
        assert marker(synthesis) in prompt  # the conclusion
        assert "<<text of r1.opening.claude>>" in prompt  # and the debate itself
        assert "<<text of r2.convergence.claude>>" not in prompt  # private checks stay out


def test_a_followup_leaves_the_outcome_as_it_was() -> None:
    without = play(duel.FORMAT, DUEL, checks=["yes", "yes"]).outcome
    with_one = play(duel.FORMAT, replace(DUEL, followups=("Why?",)), checks=["yes", "yes"]).outcome

    assert with_one == without


def test_each_question_waits_for_the_answers_before_it_and_sees_them() -> None:
    asked = replace(DUEL, rounds=1, followups=("First?", "Second?"))

    played = play(duel.FORMAT, asked)

    assert played.batch_keys()[-2:] == [
        ["q1.followup.claude", "q1.followup.gemini"],
        ["q2.followup.claude", "q2.followup.gemini"],
    ]
    second = all_text(played.plan("q2.followup.gemini"))
    assert "First?" in second and "<<text of q1.followup.claude>>" in second
    assert "Follow-up question 2" in second


def test_a_panel_followup_is_answered_by_a_debater_of_each_side_and_the_judge() -> None:
    played = play(panel.FORMAT, replace(PANEL, followups=("And for hotfixes?",)))

    assert sorted(played.batch_keys()[-1]) == [
        "q1.followup.con_claude",
        "q1.followup.judge",
        "q1.followup.pro_claude",
    ]
    judge = all_text(played.plan("q1.followup.judge"))
    assert "<<text of r3.judgement.judge>>" in judge
    assert "<<text of r1.claim.con_gemini>>" in judge
    assert played.outcome.synthesis == play(panel.FORMAT, PANEL).outcome.synthesis


def test_a_long_debate_is_cut_oldest_first_and_the_prompt_says_so() -> None:
    asked = replace(DUEL, rounds=8, followups=("Still?",))

    def long_reply(plan: object) -> str:
        return marker(plan) + " words" * 1200  # type: ignore[arg-type]

    played = play(duel.FORMAT, asked, long_reply, checks=["no"] * 8)

    prompt = played.plan("q1.followup.claude").messages[-1].content
    assert "left out for length" in prompt
    assert "<<text of r1.opening.claude>>" not in prompt
    assert "<<text of r8.response.gemini>>" in prompt  # the newest turn is kept
    assert len(prompt) < RECORD_BUDGET_CHARS + 12_000


def test_an_answers_key_names_its_question() -> None:
    assert followup_number("q12.followup.judge") == 12
    assert followup_number("r2.rebuttal.claude") is None
