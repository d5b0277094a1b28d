"""Downloads that read on their own: the transcript and the plan say what debate they come
from, every turn says where it sits, a model's own headings nest under its turn, and the
panel's report prints the judge's text once."""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from app import export
from tests.export import samples
from tests.export.goldens import assert_golden

DAY = date(2026, 3, 20)
DUEL_SEATS = [
    {"role": "claude", "label": "Claude", "provider": "anthropic", "model": "claude-opus-4-1"},
    {"role": "gemini", "label": "Gemini", "provider": "local", "model": None},
]


def _duel(**fields: Any) -> Any:
    return samples.debate(
        converged=True,
        rounds_run=3,
        synthesis=samples.CONVERGED_SYNTHESIS,
        spec_json={"format": "duel", "seats": DUEL_SEATS},
        **fields,
    )


def _headings(text: str) -> list[str]:
    return re.findall(r"^#{1,6} .*$", text, flags=re.MULTILINE)


def _turn(text: str) -> Any:
    return samples.turn(2, "claude", "Claude", "opening", 1, text)


# ---------------------------------------------------------------- transcript header


def test_transcript_starts_with_a_header_naming_topic_format_seats_and_date() -> None:
    text = export.transcript_markdown(_duel(), samples.duel_turns())
    header = text.split("\n## ", 1)[0]
    assert header.startswith("# Argue transcript: Should we use Postgres or SQLite\n")
    assert "**Topic**: Should we use Postgres or SQLite" in header
    assert "**Format**: duel" in header and "**Type**: general" in header
    assert "**Date**: 2026-03-19 05:33 UTC" in header
    assert "**Status**: completed" in header
    assert "**Rounds**: 3 of 4" in header
    # The seat's chosen model; a seat on its provider's default shows the model it used.
    assert "  - Claude: anthropic:claude-opus-4-1\n" in header
    assert "  - Gemini: local:smollm2\n" in header


def test_transcript_header_says_why_a_debate_stopped() -> None:
    debate = _duel(status="failed", status_reason="the token budget\nran out")
    text = export.transcript_markdown(debate, samples.duel_turns())
    assert "**Status**: failed (the token budget ran out)" in text


def test_transcript_without_saved_seats_names_them_from_its_turns() -> None:
    text = export.transcript_markdown(samples.duel_converged(), samples.duel_turns())
    assert "  - Claude: local:smollm2\n  - Gemini: local:smollm2\n" in text


# ---------------------------------------------------------------- transcript turns


def test_every_turn_sits_under_a_heading_naming_round_phase_and_seat() -> None:
    text = export.transcript_markdown(_duel(), samples.duel_turns())
    turn_headings = re.findall(r"^### (.*)$", text, flags=re.MULTILINE)
    assert turn_headings == [
        "Round 1 · opening · Claude (local:smollm2)",
        "Round 1 · opening · Gemini (local:smollm2)",
        "Round 2 · rebuttal · Claude (local:smollm2)",
        "Round 2 · response · Gemini (local:smollm2)",
        "Round 3 · rebuttal · Claude (local:smollm2)",
        "Round 3 · response · Gemini (local:smollm2)",
    ]
    assert "### Round 1 · opening · Claude (local:smollm2)\n\nSQLite: one file" in text


def test_turns_are_grouped_under_round_headings() -> None:
    text = export.transcript_markdown(_duel(), samples.duel_turns())
    rounds = re.findall(r"^## (.*)$", text, flags=re.MULTILINE)
    assert rounds == ["Round 1", "Round 2", "Round 3"]
    round_two = text.split("## Round 2\n", 1)[1].split("## Round 3\n", 1)[0]
    assert "Scale you do not have" in round_two and "migrations later cost more" in round_two


def test_panel_transcript_groups_claims_summaries_and_judgement_by_round() -> None:
    debate, turns = samples.panel_en()
    text = export.transcript_markdown(debate, turns)
    assert re.findall(r"^## (.*)$", text, flags=re.MULTILINE) == ["Round 1", "Round 2", "Round 3"]
    assert "### Round 3 · judgement · Judge (local:smollm2)\n\n(the judge's raw answer)" in text


def test_a_models_own_headings_nest_under_its_turn() -> None:
    reply = "# Position\n\nSQLite.\n\n## Why\n\nOne file.\n\n### Details\n\nWAL."
    text = export.transcript_markdown(_duel(), [_turn(reply)])
    assert _headings(text)[-4:] == [
        "### Round 1 · opening · Claude (local:smollm2)",
        "#### Position",
        "##### Why",
        "###### Details",
    ]


def test_nested_headings_stop_at_level_six() -> None:
    reply = "## Top\n\n#### Deep\n\n###### Deepest"
    text = export.transcript_markdown(_duel(), [_turn(reply)])
    assert _headings(text)[-3:] == ["#### Top", "###### Deep", "###### Deepest"]


def test_headings_already_below_the_turn_stay_as_they_are() -> None:
    text = export.transcript_markdown(_duel(), [_turn("#### Fine\n\nText.")])
    assert "\n#### Fine\n" in text


def test_headings_inside_code_fences_are_left_alone() -> None:
    reply = (
        "## Setup\n\n"
        "```sh\n# install it\n## twice\n```\n\n"
        "~~~~md\n# A title in a fence\n```\n# still fenced\n~~~~\n\n"
        "    # an indented code line\n\n"
        "## After"
    )
    text = export.transcript_markdown(_duel(), [_turn(reply)])
    assert "```sh\n# install it\n## twice\n```\n" in text
    assert "~~~~md\n# A title in a fence\n```\n# still fenced\n~~~~\n" in text
    assert "\n    # an indented code line\n" in text
    assert "\n#### Setup\n" in text and "\n#### After\n" in text


def test_underlined_headings_are_nested_too() -> None:
    reply = "Position\n========\n\nSQLite.\n\nWhy\n---\n\nOne file."
    text = export.transcript_markdown(_duel(), [_turn(reply)])
    assert _headings(text)[-2:] == ["#### Position", "##### Why"]
    assert "===" not in text and "\n---\n" not in text


def test_headings_in_quotes_and_lists_are_nested_too() -> None:
    reply = "> ## Quoted\n> text\n\n- ## Listed\n  item"
    text = export.transcript_markdown(_duel(), [_turn(reply)])
    assert "> #### Quoted\n> text" in text
    assert "- #### Listed\n  item" in text


def test_a_failed_turn_is_a_notice_under_its_heading() -> None:
    text = export.transcript_markdown(_duel(), samples.duel_turns())
    assert text.endswith(
        "### Round 3 · response · Gemini (local:smollm2)\n\n"
        "_(this turn failed: server error 500)_\n"
    )


# ---------------------------------------------------------------- plan


def _plan_debate(**fields: Any) -> Any:
    return samples.debate(
        topic="Ship the export feature",
        topic_type="plan",
        converged=False,
        rounds_run=3,
        spec_json={"format": "duel", "seats": DUEL_SEATS},
        **fields,
    )


def test_plan_md_has_title_topic_and_date() -> None:
    text = export.plan_markdown(
        _plan_debate(synthesis=samples.SPLIT_SYNTHESIS), samples.duel_turns(), date=DAY
    )
    header = text.split("\n## ", 1)[0]
    assert header.startswith("# Argue plan: Ship the export feature\n")
    assert "**Topic**: Ship the export feature" in header
    assert "**Date**: 2026-03-20" in header


def test_plan_md_names_the_debate_it_came_from() -> None:
    text = export.plan_markdown(
        _plan_debate(synthesis=samples.SPLIT_SYNTHESIS), samples.duel_turns(), date=DAY
    )
    assert "**From debate**: a1b2c3d4e5f6 (duel · plan · 3 of 4 rounds · converged: no)" in text
    assert "  - Claude: anthropic:claude-opus-4-1\n  - Gemini: local:smollm2\n" in text
    assert text.endswith(f"## Plan\n\n{samples.SPLIT_SYNTHESIS}\n")


def test_plan_md_nests_the_synthesis_headings_under_its_own() -> None:
    synthesis = "# Steps\n\n1. Write it.\n\n## Risks\n\n```\n# not a heading\n```"
    text = export.plan_markdown(_plan_debate(synthesis=synthesis), [], date=DAY)
    assert "## Plan\n\n### Steps\n\n1. Write it.\n\n#### Risks\n\n```\n# not a heading\n```\n" in (
        text
    )


# ---------------------------------------------------------------- panel finals


_JUDGE_SCORES = "Logical consistency — Pro: A — tight. Con: maybe B."


def _unscored_panel(judge_text: str, verdict: dict[str, Any], synthesis: str) -> Any:
    debate, turns = samples.panel_en()
    turns[-1].text = judge_text
    turns[-1].verdict = verdict
    debate.synthesis = synthesis
    return debate, turns


def test_panel_finals_print_the_judges_text_once() -> None:
    # No synthesis could be read, so the debate's synthesis is the judge's whole answer.
    judge_text = f"{_JUDGE_SCORES}\n\nBoth sides have a point about review."
    debate, turns = _unscored_panel(judge_text, {"parsed": False, "synthesis": ""}, judge_text)
    text = export.finals_markdown(debate, turns, date=DAY)
    assert text.count("Both sides have a point about review.") == 1
    assert "## 3. Evaluation\n\nThe judge's scores could not be read" in text
    assert text.endswith(
        "## 4. Synthesis\n\n(the judge wrote no separate synthesis: its answer is under"
        " 3. Evaluation)\n"
    )


def test_an_unscored_judges_synthesis_is_printed_once_under_synthesis() -> None:
    synthesis = "Keep reviews small.\n\nPair on risky changes."
    judge_text = f"{_JUDGE_SCORES}\n\n## SYNTHESIS\n\n{synthesis}\n"
    debate, turns = _unscored_panel(
        judge_text, {"parsed": False, "synthesis": synthesis}, synthesis
    )
    text = export.finals_markdown(debate, turns, date=DAY)
    assert text.count("Keep reviews small.") == 1
    assert text.count("SYNTHESIS") == 0
    evaluation = text.split("## 3. Evaluation\n\n", 1)[1].split("## 4. Synthesis", 1)[0]
    assert _JUDGE_SCORES in evaluation
    assert text.endswith(f"## 4. Synthesis\n\n{synthesis}\n")


def test_an_inline_synthesis_label_is_not_left_in_the_evaluation() -> None:
    judge_text = f"{_JUDGE_SCORES}\n\n**Synthesis**: Keep reviews small.\nPair on risk."
    synthesis = "Keep reviews small.\nPair on risk."
    debate, turns = _unscored_panel(
        judge_text, {"parsed": False, "synthesis": synthesis}, synthesis
    )
    text = export.finals_markdown(debate, turns, date=DAY)
    assert text.count("Keep reviews small.") == 1
    assert "**Synthesis**" not in text
    assert text.endswith(f"## 4. Synthesis\n\n{synthesis}\n")


def test_an_unscored_judges_headings_nest_under_the_evaluation() -> None:
    judge_text = f"# Scores\n\n{_JUDGE_SCORES}"
    debate, turns = _unscored_panel(judge_text, {"parsed": False, "synthesis": ""}, judge_text)
    text = export.finals_markdown(debate, turns, date=DAY)
    assert "\n### Scores\n" in text
    assert "\n# Scores" not in text


def test_japanese_report_points_to_the_answer_in_japanese() -> None:
    debate, turns = samples.panel_ja()
    turns[-1].text = "論理的整合性 — 賛成派: A。"
    turns[-1].verdict = {"parsed": False, "synthesis": ""}
    debate.synthesis = turns[-1].text
    text = export.finals_markdown(debate, turns, date=DAY)
    assert text.count("論理的整合性 — 賛成派: A。") == 1
    assert text.endswith(
        "## 4. 止揚的結論\n\n（審判は独立した結論を書いていません。回答は「3. 評価」にあります）\n"
    )


def test_summary_headings_inside_a_tilde_fence_are_left_alone() -> None:
    # A ``` line inside a ~~~ fence does not close it: what follows is still code.
    debate, turns = samples.panel_en()
    turns[6].text = "## Claims\n\n~~~\n```\n# still code\n~~~\n\n## Strength"
    text = export.final_report_markdown(debate, turns, date=DAY)
    assert "#### Claims\n\n~~~\n```\n# still code\n~~~\n\n#### Strength" in text


def test_a_synthesis_that_cannot_be_cut_from_the_answer_is_not_printed_again() -> None:
    judge_text = f"{_JUDGE_SCORES}\n\n**Synthesis: Keep reviews small.**\nPair on risk."
    synthesis = "Keep reviews small.\nPair on risk."  # read with the bold marks taken off
    debate, turns = _unscored_panel(
        judge_text, {"parsed": False, "synthesis": synthesis}, synthesis
    )
    text = export.finals_markdown(debate, turns, date=DAY)
    assert text.count("Keep reviews small.") == 1
    assert text.endswith("its answer is under 3. Evaluation)\n")


# ---------------------------------------------------------------- goldens


def test_plan_matches_golden() -> None:
    debate = _plan_debate(synthesis="# Steps\n\n" + samples.SPLIT_SYNTHESIS)
    assert_golden("plan_split.md", export.plan_markdown(debate, samples.duel_turns(), date=DAY))


def test_japanese_panel_transcript_matches_golden() -> None:
    debate, turns = samples.panel_ja()
    assert_golden("history_panel_ja.md", export.transcript_markdown(debate, turns))
