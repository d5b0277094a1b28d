"""Controls for the judge's bias, planned by the panel with no I/O: a blind judge sees no side
or model names and its marks come back as pro/con; a judge asked twice sees the sides in both
orders, and the scorecard says whether both verdicts agree; a judge on the provider of a seat
it judges is a warning. Old saved specs, without these options, still load."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest

from app.formats import format_names
from app.formats.judging import judging_of, same_provider_warnings
from app.formats.panel import FORMAT, JUDGEMENT_KEY, SWAP_JUDGEMENT_KEY
from app.scorecard import scorecard_of
from app.spec import CompletedTurn, DebateSpec, Seat, TurnPlan
from app.store import spec_from_json, spec_to_json
from tests.formats.judgements import SIDE_ONE_AHEAD

from .driver import marker, play

TOPIC = "Is code review worth the time?"
# A word that would tell a blind judge whose side or model it reads.
NAMES = re.compile(r"\b(pro|con|claude|gemini|codex|openai|gpt|anthropic)\b", re.IGNORECASE)

PRO_FIRST = SIDE_ONE_AHEAD


def overall(first: float, second: float) -> str:
    """A judgement whose overall line gives the side shown first ``first`` out of 10."""
    return PRO_FIRST.replace(
        "Overall | Side 1: A 8/10 | Side 2: B 6/10",
        f"Overall | Side 1: B {first:g}/10 | Side 2: B {second:g}/10",
    )


def spec(**changes: Any) -> DebateSpec:
    values: dict[str, Any] = {"topic": TOPIC, "format": "panel", "seats": FORMAT.default_seats()}
    values.update(changes)
    return DebateSpec(**values)


def prompt_text(plan: TurnPlan) -> str:
    return "\n".join([plan.system, *(message.content for message in plan.messages)])


def replies(first: str, second: str) -> Any:
    def reply(plan: TurnPlan) -> str:
        if plan.key == JUDGEMENT_KEY:
            return first
        if plan.key == SWAP_JUDGEMENT_KEY:
            return second
        if plan.phase == "summary":
            return f"This side's case, as Debater 2 put it ({plan.key[-3:]})."
        return marker(plan)

    return reply


@dataclass(frozen=True)
class Row:
    """A saved turn as the scorecard reads it."""

    phase: str
    text: str
    verdict: dict[str, Any] | None
    status: str = "completed"


def rows(done: tuple[CompletedTurn, ...]) -> list[Row]:
    return [Row(turn.phase, turn.text, turn.verdict) for turn in done]


# ------------------------------------------------------------------------------- blind


def test_a_blind_judge_is_shown_no_side_or_model_names() -> None:
    played = play(FORMAT, spec(blind_judge=True), replies(PRO_FIRST, PRO_FIRST))

    judge = prompt_text(played.plan(JUDGEMENT_KEY))
    assert NAMES.findall(judge) == []
    assert "## Side 1 summary" in judge and "## Side 2 summary" in judge
    assert "Overall | Side 1: <A, B or C> <score>/10 | Side 2:" in judge


def test_blind_summaries_number_the_debaters_and_leave_the_side_unnamed() -> None:
    played = play(FORMAT, spec(blind_judge=True), replies(PRO_FIRST, PRO_FIRST))

    summary = played.plan("r2.summary.pro_summarizer")
    request = summary.messages[0].content
    assert [line for line in request.splitlines() if line.startswith("=== Claim")] == [
        "=== Claim 1: Debater 1 ===",
        "=== Claim 2: Debater 2 ===",
        "=== Claim 3: Debater 3 ===",
    ]
    assert "Side:" not in request
    # The labels are blind, the debaters' own words are passed through as written.
    assert "<<text of r1.claim.pro_claude>>" in request
    assert NAMES.findall(summary.system) == []


def test_a_blind_judges_marks_are_read_back_as_pro_and_con() -> None:
    played = play(FORMAT, spec(blind_judge=True), replies(PRO_FIRST, PRO_FIRST))

    verdict = played.turn(JUDGEMENT_KEY).verdict
    assert verdict is not None and verdict["parsed"] is True
    assert verdict["overall"] == {
        "pro_grade": "A", "pro_score": 8.0, "con_grade": "B", "con_score": 6.0,
    }  # fmt: skip
    assert verdict["criteria"][3]["con_grade"] == "A"
    card = scorecard_of(rows(played.done))
    assert card is not None and card.leader == "pro"
    assert card.leader_sentence() == "Pro is ahead: 8.0/10 to 6.0/10."


def test_the_judges_prompt_is_unchanged_without_the_options() -> None:
    played = play(FORMAT, spec(), replies(PRO_FIRST, PRO_FIRST))

    judge = prompt_text(played.plan(JUDGEMENT_KEY))
    assert "## PRO summary" in judge and "## CON summary" in judge
    assert judge.index("## PRO summary") < judge.index("## CON summary")
    assert "Side 1" not in judge
    assert played.keys[-1] == JUDGEMENT_KEY


# ------------------------------------------------------------------------------- swap


def test_swap_judge_plans_a_second_judgement_in_the_same_batch_with_con_shown_first() -> None:
    played = play(FORMAT, spec(swap_judge=True), replies(PRO_FIRST, PRO_FIRST))

    assert played.batch_keys()[-1] == [JUDGEMENT_KEY, SWAP_JUDGEMENT_KEY]
    swapped = played.plan(SWAP_JUDGEMENT_KEY)
    assert (swapped.role, swapped.phase, swapped.round) == ("judge", "swap_judgement", 3)
    text = prompt_text(swapped)
    assert text.index("## CON summary") < text.index("## PRO summary")
    assert "Originality | Con: <A, B or C>" in text
    assert FORMAT.plan(spec(swap_judge=True), played.done) == []


def test_a_resumed_panel_plans_only_the_judgement_it_lacks() -> None:
    played = play(FORMAT, spec(swap_judge=True), replies(PRO_FIRST, PRO_FIRST))
    without_swap = tuple(turn for turn in played.done if turn.key != SWAP_JUDGEMENT_KEY)

    assert [plan.key for plan in FORMAT.plan(spec(swap_judge=True), without_swap)] == [
        SWAP_JUDGEMENT_KEY
    ]


def test_the_swapped_judgements_columns_are_read_in_the_order_shown() -> None:
    table = PRO_FIRST.replace("Side 1: ", "").replace("Side 2: ", "")  # criterion | first | second
    played = play(FORMAT, spec(swap_judge=True), replies(table, table))

    swapped = played.turn(SWAP_JUDGEMENT_KEY).verdict
    assert swapped is not None
    assert swapped["overall"]["con_score"] == 8.0 and swapped["overall"]["pro_score"] == 6.0
    first = played.turn(JUDGEMENT_KEY).verdict
    assert first is not None and first["overall"]["pro_score"] == 8.0


def test_both_judgements_putting_pro_ahead_agree() -> None:
    # Shown second, pro still wins: 7 to 5.
    played = play(FORMAT, spec(swap_judge=True), replies(overall(8, 6), overall(5, 7)))

    card = scorecard_of(rows(played.done))
    assert card is not None
    assert card.agreement_sentence() == (
        "The two judgements agree: Pro ahead in both (Pro shown first: Pro 8.0/10, Con 6.0/10; "
        "Con shown first: Pro 7.0/10, Con 5.0/10)."
    )
    # The scorecard is the first judgement's.
    assert (card.pro_overall.score, card.con_overall.score) == (8.0, 6.0)


def test_a_judge_that_favours_whichever_side_it_reads_first_disagrees_with_itself() -> None:
    played = play(FORMAT, spec(swap_judge=True), replies(overall(8, 6), overall(8, 6)))

    card = scorecard_of(rows(played.done))
    assert card is not None
    assert card.agreement_sentence() == (
        "The two judgements disagree: Pro ahead with Pro shown first, Con ahead with Con shown "
        "first (Pro shown first: Pro 8.0/10, Con 6.0/10; Con shown first: Pro 6.0/10, "
        "Con 8.0/10)."
    )


def test_blind_and_swapped_reads_side_1_as_con_in_the_second_judgement() -> None:
    played = play(
        FORMAT, spec(blind_judge=True, swap_judge=True), replies(overall(8, 6), overall(6, 8))
    )

    swapped = played.plan(SWAP_JUDGEMENT_KEY)
    text = prompt_text(swapped)
    assert NAMES.findall(text) == []
    card = scorecard_of(rows(played.done))
    assert card is not None and card.second is not None
    assert (card.second.pro_overall.score, card.second.con_overall.score) == (8.0, 6.0)
    assert (card.agreement_sentence() or "").startswith("The two judgements agree: Pro ahead")


def test_one_judgement_has_no_agreement_line_and_the_synthesis_is_the_first_judgements() -> None:
    single = play(FORMAT, spec(), replies(PRO_FIRST, PRO_FIRST))
    card = scorecard_of(rows(single.done))
    assert card is not None and card.second is None and card.agreement_sentence() is None

    second = PRO_FIRST.replace("Review small changes fast.", "A different synthesis.")
    both = play(FORMAT, spec(swap_judge=True), replies(PRO_FIRST, second))
    assert both.outcome.synthesis == "Review small changes fast."
    assert both.outcome.rounds_run == 3


# ---------------------------------------------------------------------- same provider


def panel_seats(debaters: str, judge: str) -> tuple[Seat, ...]:
    return tuple(
        Seat(seat.role, seat.label, judge if seat.role.endswith("summarizer") else debaters)
        if seat.role != "judge"
        else Seat(seat.role, seat.label, judge)
        for seat in FORMAT.default_seats()
    )


def test_a_judge_on_every_debaters_provider_is_warned_about() -> None:
    warnings = same_provider_warnings(spec(seats=panel_seats("local", "local")))

    assert warnings == (
        "Judge (the judge) runs on local, the same provider as Pro · Claude, Pro · Gemini, "
        "Pro · Codex, Con · Claude, Con · Gemini and Con · Codex, whose arguments it judges: "
        "it may favour them.",
    )


def test_a_judge_on_a_provider_no_debater_uses_is_not_warned_about() -> None:
    assert same_provider_warnings(spec(seats=panel_seats("openai", "anthropic"))) == ()


def test_the_default_panel_warns_that_its_judge_shares_the_claude_seats_provider() -> None:
    (warning,) = same_provider_warnings(spec())
    assert "the same provider as Pro · Claude and Con · Claude," in warning


def test_the_duels_synthesizer_is_warned_about_only_on_the_other_seats_provider() -> None:
    alike = DebateSpec(
        topic=TOPIC, seats=(Seat("claude", "Claude", "local"), Seat("gemini", "Gemini", "local"))
    )
    apart = DebateSpec(
        topic=TOPIC,
        seats=(Seat("claude", "Claude", "anthropic"), Seat("gemini", "Gemini", "local")),
    )

    assert same_provider_warnings(alike) == (
        "Claude (the synthesizer) runs on local, the same provider as Gemini, whose arguments "
        "it judges: it may favour them.",
    )
    assert same_provider_warnings(apart) == ()


@pytest.mark.parametrize("name", format_names())
def test_every_format_says_who_judges_whom(name: str) -> None:
    # A format missing from the table is a KeyError; only the society, whose peers vote,
    # says that nobody judges.
    assert judging_of(name) or name == "society"


# ------------------------------------------------------------------------------ saved


def test_a_spec_saved_before_the_options_existed_loads_with_both_off() -> None:
    saved = spec_to_json(spec())
    del saved["blind_judge"], saved["swap_judge"]

    loaded = spec_from_json(saved)

    assert (loaded.blind_judge, loaded.swap_judge) == (False, False)
    assert loaded.seats == FORMAT.default_seats()


def test_the_options_survive_being_saved() -> None:
    loaded = spec_from_json(spec_to_json(spec(blind_judge=True, swap_judge=True)))
    assert (loaded.blind_judge, loaded.swap_judge) == (True, True)
