"""The society planner, rule by rule (app/formats/society.py's docstring). No I/O anywhere."""

from __future__ import annotations

from app.evals.answers import parse
from app.formats import get_format
from app.formats.society import FORMAT, consensus, synthesis_text
from app.spec import DebateSpec, TurnPlan

from .driver import Reply, all_text, marker, play

QUESTION = "What is 17 * 3?"
AGENTS = ("agent_1", "agent_2", "agent_3")


def spec(**changes: object) -> DebateSpec:
    values: dict[str, object] = {
        "topic": QUESTION,
        "format": "society",
        "rounds": 2,
        "seats": FORMAT.default_seats(),
    }
    values.update(changes)
    return DebateSpec(**values)  # type: ignore[arg-type]


def answering(by_role: dict[str, str]) -> Reply:
    def reply(plan: TurnPlan) -> str:
        return f"{marker(plan)}\nAnswer: {by_role[plan.role]}"

    return reply


def test_the_society_is_registered_with_three_agents_by_default() -> None:
    fmt = get_format("society")
    assert fmt is FORMAT
    assert [seat.role for seat in fmt.default_seats()] == list(AGENTS)


def test_round_one_is_three_independent_answers_that_see_nothing_of_each_other() -> None:
    played = play(FORMAT, spec(), answering(dict.fromkeys(AGENTS, "51")))
    first = played.batches[0]
    assert [plan.key for plan in first] == [f"r1.answer.{role}" for role in AGENTS]
    for plan in first:
        text = all_text(plan)
        assert QUESTION in text
        assert "<<text of" not in text
        assert 'Answer: X"' in text


def test_each_update_sees_every_other_agents_previous_answer_and_its_own() -> None:
    played = play(FORMAT, spec(), answering(dict.fromkeys(AGENTS, "51")))
    update = played.plan("r2.update.agent_2")
    text = all_text(update)
    for role in AGENTS:
        assert f"<<text of r1.answer.{role}>>" in text
    assert "<<text of r2." not in text
    third = all_text(played.plan("r3.update.agent_1"))
    assert "<<text of r2.update.agent_3>>" in third
    assert "<<text of r1." not in third


def test_it_stops_after_the_given_number_of_further_rounds() -> None:
    played = play(FORMAT, spec(rounds=2), answering(dict.fromkeys(AGENTS, "51")))
    assert len(played.batches) == 3
    assert played.outcome.rounds_run == 3
    once = play(FORMAT, spec(rounds=1), answering(dict.fromkeys(AGENTS, "51")))
    assert len(once.batches) == 2


def test_the_final_answer_is_the_majority_of_the_last_round_after_normalising() -> None:
    answers = {"agent_1": "1,000", "agent_2": "7", "agent_3": "1000.0"}
    played = play(FORMAT, spec(), answering(answers))
    assert "Final answer: 1,000" in played.outcome.synthesis
    assert "2 of 3 agents agree" in played.outcome.synthesis
    assert parse(played.outcome.synthesis) == "1,000"
    assert played.outcome.converged is False


def test_unanimity_says_every_agent_agrees_and_converges() -> None:
    played = play(FORMAT, spec(), answering(dict.fromkeys(AGENTS, "Paris")))
    assert "Final answer: Paris (3 of 3 agents agree)" in played.outcome.synthesis
    assert played.outcome.converged is True


def test_a_tie_goes_to_the_earliest_agent_among_the_tied() -> None:
    result = consensus(["b", "a", "a", "b"])
    assert (result.answer, result.agree, result.agents) == ("b", 2, 4)
    later = consensus(["c", "a", "b", "b", "a"])
    assert later.answer == "a"


def test_all_different_answers_say_there_is_no_majority() -> None:
    result = consensus(["1", "2", "3"])
    assert result.majority is False
    assert "No majority" in synthesis_text(result)
    assert parse(synthesis_text(result)) == "1"
    assert result.answer == "1"


def test_an_unreadable_answer_counts_for_nobody() -> None:
    result = consensus([None, "4", "four"])
    assert result.agree == 1
    assert consensus([None, None]).answer is None
    assert "No agent gave a readable" in synthesis_text(consensus([None, None]))


def test_the_eval_harness_offers_the_society_as_a_condition() -> None:
    from app.evals.conditions import get_condition

    condition = get_condition("society")
    assert condition.is_debate
    assert [seat.role for seat in condition.default_seats()] == list(AGENTS)
