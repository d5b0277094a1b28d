"""The panel planner, rule by rule (FORMATS.md § panel, seed 001). No I/O anywhere."""

from __future__ import annotations

from app.formats import get_format
from app.formats.panel import CON_DEBATERS, FORMAT, PRO_DEBATERS
from app.spec import CompletedTurn, ContextFile, DebateSpec, Seat, TurnPlan

from .driver import Reply, all_text, complete, marker, play

TOPIC = "Is testing really necessary in software development?"
TOPIC_JA = "ソフトウェア開発においてテストは本当に必要か"

JUDGEMENT = """SCORES
Logical consistency | Pro: A — consistent across three axes | Con: B — scope unclear
Specificity of evidence | Pro: A — IBM study, Ariane 5 | Con: B — causality not shown
Rebuttal strength | Pro: B — only one pre-empted | Con: B — mission-critical thin
Originality | Pro: B — CI/CD angle | Con: A — inverts the received view
Overall | Pro: A 8.0/10 | Con: B 6.5/10

SYNTHESIS
The real question is how to allocate the cost of quality assurance.
Tests are one instrument in a portfolio."""


def spec(**changes: object) -> DebateSpec:
    values: dict[str, object] = {
        "topic": TOPIC,
        "format": "panel",
        "seats": FORMAT.default_seats(),
    }
    values.update(changes)
    return DebateSpec(**values)  # type: ignore[arg-type]


def judge_replies(judgement: str = JUDGEMENT) -> Reply:
    def reply(plan: TurnPlan) -> str:
        return judgement if plan.phase == "judgement" else marker(plan)

    return reply


def test_panel_is_found_by_name_with_nine_seats() -> None:
    assert get_format("panel") is FORMAT
    assert FORMAT.name == "panel"
    seats = {seat.role: seat for seat in FORMAT.default_seats()}
    assert set(seats) == {
        "pro_claude", "pro_gemini", "pro_codex", "con_claude", "con_gemini", "con_codex",
        "pro_summarizer", "con_summarizer", "judge",
    }  # fmt: skip
    assert seats["pro_claude"] == Seat(
        role="pro_claude", label="Pro · Claude", provider="anthropic"
    )
    assert seats["con_gemini"].provider == "gemini"
    assert seats["pro_codex"].provider == "openai"
    assert seats["con_codex"].label == "Con · Codex"
    assert {seats[r].provider for r in ("pro_summarizer", "con_summarizer", "judge")} == {
        "anthropic"
    }


def test_panel_runs_three_batches_then_stops() -> None:
    played = play(FORMAT, spec(), judge_replies())
    assert played.batch_keys() == [
        [f"r1.claim.{role}" for role in (*PRO_DEBATERS, *CON_DEBATERS)],
        ["r2.summary.pro_summarizer", "r2.summary.con_summarizer"],
        ["r3.judgement.judge"],
    ]
    assert FORMAT.plan(spec(), played.done) == []


def test_panel_six_claims_are_one_batch_in_round_one() -> None:
    batch = FORMAT.plan(spec(), ())
    assert len(batch) == 6
    assert {(plan.phase, plan.round) for plan in batch} == {("claim", 1)}
    assert [plan.role for plan in batch] == [*PRO_DEBATERS, *CON_DEBATERS]


def test_panel_claims_get_only_the_topic_and_their_stance() -> None:
    context = (ContextFile(path="notes.md", text="CONTEXT SECRET", total_lines=1,
                           truncated=False),)  # fmt: skip
    for plan in FORMAT.plan(spec(context=context, seed="audit"), ()):
        [message] = plan.messages
        assert message.role == "user"
        assert message.content.startswith(f"Topic: {TOPIC}\nYour stance: ")
        assert "CONTEXT SECRET" not in all_text(plan)
        side = plan.role.split("_")[0]
        assert f"Your stance: {side.upper()}" in message.content
        assert f"You argue the {side.upper()} side" in plan.system


def test_panel_claims_ask_for_thesis_grounds_and_preemptive_rebuttal() -> None:
    english = FORMAT.plan(spec(), ())[0].messages[0].content
    for heading in ("## Thesis", "## Grounds", "## Pre-emptive rebuttal"):
        assert heading in english
    japanese = FORMAT.plan(spec(topic=TOPIC_JA), ())[0].messages[0].content
    for heading in ("## 要旨", "## 根拠", "## 先制回答"):
        assert heading in japanese


def test_panel_resume_plans_only_the_missing_claims() -> None:
    first = FORMAT.plan(spec(), ())
    done = tuple(complete(FORMAT, plan, marker(plan)) for plan in first[:4])
    assert [plan.role for plan in FORMAT.plan(spec(), done)] == ["con_gemini", "con_codex"]


def test_panel_summarizers_see_only_their_own_sides_claims_verbatim() -> None:
    played = play(FORMAT, spec(), judge_replies())
    for side, own, other in (
        ("pro", PRO_DEBATERS, CON_DEBATERS),
        ("con", CON_DEBATERS, PRO_DEBATERS),
    ):
        summary = played.plan(f"r2.summary.{side}_summarizer")
        assert (summary.role, summary.phase, summary.round) == (f"{side}_summarizer", "summary", 2)
        text = all_text(summary)
        for role in own:
            assert played.text(f"r1.claim.{role}") in text
        for role in other:
            assert played.text(f"r1.claim.{role}") not in text


def test_panel_summarizer_gets_claims_with_their_debater_labels_in_order() -> None:
    claim_text = {role: f"claim body of {role}\n\n## Grounds\n- a\n- b" for role in PRO_DEBATERS}

    def reply(plan: TurnPlan) -> str:
        return claim_text.get(plan.role, marker(plan))

    played = play(FORMAT, spec(), reply)
    content = played.plan("r2.summary.pro_summarizer").messages[0].content
    positions = [content.index(claim_text[role]) for role in PRO_DEBATERS]
    assert positions == sorted(positions)
    for label in ("Pro · Claude", "Pro · Gemini", "Pro · Codex"):
        assert label in content


def test_panel_summaries_ask_for_core_claims_unique_insights_and_strength() -> None:
    played = play(FORMAT, spec(), judge_replies())
    english = played.plan("r2.summary.con_summarizer").messages[0].content
    for heading in ("## Core Claims", "## Unique Insights", "## Strength assessment"):
        assert heading in english
    japanese = play(FORMAT, spec(topic=TOPIC_JA), judge_replies())
    content = japanese.plan("r2.summary.pro_summarizer").messages[0].content
    for heading in (
        "## 共通主張（Core Claims）",
        "## 独自の洞察（Unique Insights）",
        "## 強度評価",
    ):
        assert heading in content


def test_panel_judge_sees_only_the_two_summaries() -> None:
    played = play(FORMAT, spec(), judge_replies())
    judge = played.plan("r3.judgement.judge")
    assert (judge.role, judge.phase, judge.round) == ("judge", "judgement", 3)
    text = all_text(judge)
    assert played.text("r2.summary.pro_summarizer") in text
    assert played.text("r2.summary.con_summarizer") in text
    for role in (*PRO_DEBATERS, *CON_DEBATERS):
        assert played.text(f"r1.claim.{role}") not in text
    content = judge.messages[0].content
    assert content.index("PRO summary") < content.index(played.text("r2.summary.pro_summarizer"))
    assert content.index("CON summary") < content.index(played.text("r2.summary.con_summarizer"))


def test_panel_judge_is_asked_for_grades_scores_and_a_dialectical_synthesis() -> None:
    played = play(FORMAT, spec(), judge_replies())
    judge = played.plan("r3.judgement.judge")
    content = judge.messages[0].content
    for criterion in (
        "Logical consistency", "Specificity of evidence", "Rebuttal strength", "Originality",
    ):  # fmt: skip
        assert f"{criterion} | Pro: <A, B or C> — <one-line reason> | Con:" in content
    assert "Overall | Pro: <A, B or C> <score>/10 | Con: <A, B or C> <score>/10" in content
    assert "SYNTHESIS" in content
    assert "止揚" in judge.system
    assert "not a winner-takes-all" in judge.system


def test_panel_only_the_judgement_has_a_verdict() -> None:
    played = play(FORMAT, spec(), judge_replies())
    assert [turn.key for turn in played.done if turn.verdict is not None] == ["r3.judgement.judge"]
    verdict = played.turn("r3.judgement.judge").verdict
    assert verdict is not None
    assert verdict["parsed"] is True
    assert verdict["overall"] == {
        "pro_grade": "A", "pro_score": 8.0, "con_grade": "B", "con_score": 6.5,
    }  # fmt: skip


def test_panel_outcome_is_three_rounds_no_convergence_and_the_judges_synthesis() -> None:
    played = play(FORMAT, spec(), judge_replies())
    assert played.outcome.rounds_run == 3
    assert played.outcome.converged is None
    assert played.outcome.synthesis == (
        "The real question is how to allocate the cost of quality assurance.\n"
        "Tests are one instrument in a portfolio."
    )


def test_panel_unparsable_judgement_still_finishes_with_the_whole_text() -> None:
    rambling = "Both sides made fine points and I like them all."
    played = play(FORMAT, spec(), judge_replies(rambling))
    assert played.keys[-1] == "r3.judgement.judge"
    verdict = played.turn("r3.judgement.judge").verdict
    assert verdict is not None
    assert verdict["parsed"] is False
    assert played.outcome.synthesis == rambling
    assert played.outcome.rounds_run == 3


def test_panel_outcome_reads_the_judgement_when_no_verdict_was_recorded() -> None:
    played = play(FORMAT, spec(), judge_replies())
    bare = tuple(
        CompletedTurn(key=t.key, role=t.role, phase=t.phase, round=t.round, text=t.text)
        for t in played.done
    )
    assert FORMAT.outcome(spec(), bare).synthesis.startswith("The real question")


def test_panel_outcome_of_an_unfinished_panel() -> None:
    played = play(FORMAT, spec(), judge_replies())
    outcome = FORMAT.outcome(spec(), played.done[:6])
    assert (outcome.rounds_run, outcome.converged, outcome.synthesis) == (1, None, "")


def test_panel_keys_are_unique_and_replanning_is_stable() -> None:
    played = play(FORMAT, spec(), judge_replies())
    assert len(played.keys) == len(set(played.keys))
    done: tuple[CompletedTurn, ...] = ()
    for batch in played.batches:
        assert FORMAT.plan(spec(), done) == batch
        done += tuple(turn for turn in played.done if turn.key in {p.key for p in batch})
    assert FORMAT.plan(spec(), tuple(reversed(played.done))) == []


def test_panel_japanese_topic_tells_every_role_to_write_in_japanese() -> None:
    played = play(FORMAT, spec(topic=TOPIC_JA), judge_replies())
    assert len(played.plans) == 9
    for plan in played.plans:
        assert "Write in Japanese." in plan.system, plan.key


def test_panel_custom_labels_reach_the_summarizer() -> None:
    seats = tuple(
        Seat(role=s.role, label=f"Custom {s.role}", provider=s.provider)
        for s in FORMAT.default_seats()
    )
    played = play(FORMAT, spec(seats=seats), judge_replies())
    content = played.plan("r2.summary.con_summarizer").messages[0].content
    assert "Custom con_claude" in content
    assert "Custom pro_claude" not in content


def test_panel_empty_claims_never_become_empty_messages() -> None:
    played = play(FORMAT, spec(), lambda plan: "")
    for plan in played.plans:
        assert all(message.content.strip() for message in plan.messages)
    assert played.outcome.synthesis == ""
