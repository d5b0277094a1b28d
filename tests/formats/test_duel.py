"""The duel planner, rule by rule (FORMATS.md § duel, seed 000). No I/O anywhere."""

from __future__ import annotations

import pytest

from app.formats import get_format, prompts
from app.formats.duel import FORMAT, normalize_synthesis
from app.formats.language import ENGLISH
from app.spec import CompletedTurn, ContextFile, DebateSpec, Seat

from .driver import all_text, alternates_from_user, complete, marker, no, play, yes

TOPIC = "Should a small team adopt a monorepo?"


def spec(**changes: object) -> DebateSpec:
    values: dict[str, object] = {
        "topic": TOPIC,
        "format": "duel",
        "rounds": 4,
        "seats": FORMAT.default_seats(),
    }
    values.update(changes)
    return DebateSpec(**values)  # type: ignore[arg-type]


def openings_done(debate: DebateSpec) -> tuple[CompletedTurn, ...]:
    plans = FORMAT.plan(debate, ())
    return tuple(complete(FORMAT, plan, marker(plan)) for plan in plans)


# ------------------------------------------------------------------ seats and registry


def test_duel_is_found_by_name_and_has_claude_and_gemini_seats() -> None:
    assert get_format("duel") is FORMAT
    assert FORMAT.name == "duel"
    seats = {seat.role: seat for seat in FORMAT.default_seats()}
    assert seats["claude"] == Seat(role="claude", label="Claude", provider="anthropic")
    assert seats["gemini"] == Seat(role="gemini", label="Gemini", provider="gemini")
    assert len(seats) == 2


def test_duel_plans_with_default_labels_when_spec_has_no_seats() -> None:
    played = play(FORMAT, spec(seats=(), rounds=2), checks=[no()])
    response = played.plan("r2.response.gemini")
    assert "Claude's counterargument (round 2)" in response.messages[-1].content
    assert "Gemini" in played.plan("r2.rebuttal.claude").system


# ------------------------------------------------------------------ openings


def test_duel_openings_are_one_batch_of_two_in_round_one() -> None:
    batch = FORMAT.plan(spec(), ())
    assert [plan.key for plan in batch] == ["r1.opening.claude", "r1.opening.gemini"]
    assert {(plan.role, plan.phase, plan.round) for plan in batch} == {
        ("claude", "opening", 1),
        ("gemini", "opening", 1),
    }


def test_duel_openings_are_independent_neither_sees_the_other() -> None:
    played = play(FORMAT, spec(rounds=1))
    claude_opening = played.plan("r1.opening.claude")
    gemini_opening = played.plan("r1.opening.gemini")
    assert played.text("r1.opening.gemini") not in all_text(claude_opening)
    assert played.text("r1.opening.claude") not in all_text(gemini_opening)
    assert len(claude_opening.messages) == len(gemini_opening.messages) == 1


def test_duel_resuming_with_one_opening_done_plans_only_the_other_blind() -> None:
    claude_plan = FORMAT.plan(spec(), ())[0]
    done = (complete(FORMAT, claude_plan, "CLAUDE OPENING SECRET"),)
    batch = FORMAT.plan(spec(), done)
    assert [plan.key for plan in batch] == ["r1.opening.gemini"]
    assert "CLAUDE OPENING SECRET" not in all_text(batch[0])


def test_duel_gemini_opening_is_the_seed_request_with_the_debate_instruction() -> None:
    gemini = FORMAT.plan(spec(), ())[1]
    assert gemini.system.startswith(prompts.DEBATE_INSTRUCTION)
    [message] = gemini.messages
    assert message.role == "user"
    assert message.content.startswith(TOPIC)
    assert message.content.endswith(
        "Form a clear position on this topic with specific supporting arguments."
    )


def test_duel_debate_instruction_is_the_seed_text() -> None:
    for line in (
        "You are in an adversarial technical debate with another AI model.",
        "Form and defend genuine positions based on evidence and reasoning",
        "Concede specific points when the counterargument is stronger — don't defend weak "
        "positions",
        "Introduce new angles, not restate old ones",
        "Be specific: name trade-offs, cite patterns, reference concrete scenarios",
        "If you agree with the other side's point, say so explicitly and explain why it "
        "changed your view",
    ):
        assert line in prompts.DEBATE_INSTRUCTION


def test_duel_claude_opening_asks_a_participant_for_a_clear_specific_position() -> None:
    claude = FORMAT.plan(spec(), ())[0]
    assert "genuine participant" in claude.system
    assert "not a moderator or a summarizer" in claude.system
    [message] = claude.messages
    assert message.content.startswith(TOPIC)
    assert "clear, specific position with supporting arguments" in message.content


def test_duel_every_gemini_turn_carries_the_debate_instruction() -> None:
    played = play(FORMAT, spec(rounds=3, seed="audit"), checks=[no(), no()])
    gemini_plans = [plan for plan in played.plans if plan.role == "gemini"]
    debating = [plan for plan in gemini_plans if plan.phase != "seed"]
    assert [plan.phase for plan in debating] == ["opening", "response", "response"]
    assert all(plan.system.startswith(prompts.DEBATE_INSTRUCTION) for plan in debating)


# ------------------------------------------------------------------ seed and context


def test_duel_seed_runs_alone_before_the_openings_by_the_gemini_seat() -> None:
    played = play(FORMAT, spec(seed="find_bug", rounds=1))
    assert played.batch_keys()[0] == ["r0.seed.gemini"]
    seed = played.plan("r0.seed.gemini")
    assert (seed.role, seed.phase, seed.round) == ("gemini", "seed", 0)
    assert "find_bug" in seed.messages[-1].content
    assert TOPIC in seed.messages[-1].content
    assert played.batch_keys()[1] == ["r1.opening.claude", "r1.opening.gemini"]


def test_duel_seed_output_reaches_both_openings() -> None:
    played = play(FORMAT, spec(seed="plan", rounds=1))
    seed_text = played.text("r0.seed.gemini")
    for key in ("r1.opening.claude", "r1.opening.gemini"):
        assert seed_text in played.plan(key).messages[0].content


@pytest.mark.parametrize("tool", ["find_bug", "plan", "audit"])
def test_duel_seed_prompt_names_its_analysis(tool: str) -> None:
    [seed] = FORMAT.plan(spec(seed=tool), ())
    assert f"Analysis requested: {tool}." in seed.messages[0].content


def test_duel_without_seed_plans_no_seed_turn() -> None:
    played = play(FORMAT, spec(rounds=2), checks=[no()])
    assert not [key for key in played.keys if "seed" in key]
    assert "Seed analysis" not in played.plan("r1.opening.claude").messages[0].content


def test_duel_context_files_reach_the_seed_and_both_openings() -> None:
    context = (
        ContextFile(path="src/app.py", text="def handler():\n    return 42\n", total_lines=2,
                    truncated=False),
        ContextFile(path="big.log", text="line\n" * 300, total_lines=900, truncated=True),
    )  # fmt: skip
    played = play(FORMAT, spec(context=context, seed="audit", rounds=1))
    for key in ("r0.seed.gemini", "r1.opening.claude", "r1.opening.gemini"):
        content = played.plan(key).messages[0].content
        assert "### src/app.py" in content
        assert "def handler():\n    return 42" in content
        assert "### big.log (first 300 of 900 lines)" in content


def test_duel_context_with_backticks_is_fenced_safely() -> None:
    text = "```python\nx = 1\n```\n"
    block = prompts.context_block(
        (ContextFile(path="README.md", text=text, total_lines=3, truncated=False),)
    )
    assert "````\n```python" in block
    assert block.rstrip().endswith("````")


@pytest.mark.parametrize(
    ("topic_type", "phrase"),
    [("bug", "symptom"), ("plan", "planning debate"), ("tech", "technical question")],
)
def test_duel_topic_type_frames_the_openings(topic_type: str, phrase: str) -> None:
    for plan in FORMAT.plan(spec(topic_type=topic_type), ()):
        assert phrase in plan.messages[0].content


def test_duel_general_topic_has_no_type_framing() -> None:
    for plan in FORMAT.plan(spec(), ()):
        assert "debate:" not in plan.messages[0].content
        assert "technical question" not in plan.messages[0].content


# ------------------------------------------------------------------ the loop


def test_duel_with_one_round_has_only_the_openings_then_the_synthesis() -> None:
    played = play(FORMAT, spec(rounds=1))
    assert played.batch_keys() == [
        ["r1.opening.claude", "r1.opening.gemini"],
        ["r1.synthesis.claude"],
    ]
    assert played.outcome.rounds_run == 1
    assert played.outcome.converged is False


def test_duel_round_runs_rebuttal_then_response_then_check_one_at_a_time() -> None:
    played = play(FORMAT, spec(rounds=2), checks=[no()])
    assert played.batch_keys() == [
        ["r1.opening.claude", "r1.opening.gemini"],
        ["r2.rebuttal.claude"],
        ["r2.response.gemini"],
        ["r2.convergence.claude"],
        ["r2.synthesis.claude"],
    ]
    phases = [(p.role, p.phase, p.round) for p in played.plans[2:]]
    assert phases == [
        ("claude", "rebuttal", 2),
        ("gemini", "response", 2),
        ("claude", "convergence", 2),
        ("claude", "synthesis", 2),
    ]


def test_duel_stops_after_two_consecutive_converged_checks() -> None:
    played = play(FORMAT, spec(rounds=8), checks=[yes(), yes()])
    assert played.keys[-4:] == [
        "r3.rebuttal.claude",
        "r3.response.gemini",
        "r3.convergence.claude",
        "r3.synthesis.claude",
    ]
    assert not [key for key in played.keys if key.startswith("r4.")]
    assert played.outcome.rounds_run == 3
    assert played.outcome.converged is True


def test_duel_stops_on_the_first_consecutive_pair_even_after_a_no() -> None:
    played = play(FORMAT, spec(rounds=8), checks=[no(), yes(), yes()])
    assert played.keys[-1] == "r4.synthesis.claude"
    assert played.outcome.rounds_run == 4
    assert played.outcome.converged is True


def test_duel_does_not_stop_after_two_non_consecutive_converged_checks() -> None:
    played = play(FORMAT, spec(rounds=5), checks=[yes(), no(), yes(), no()])
    checks = [key for key in played.keys if ".convergence." in key]
    assert checks == [f"r{n}.convergence.claude" for n in (2, 3, 4, 5)]
    assert played.outcome.rounds_run == 5
    assert played.outcome.converged is False


def test_duel_a_single_converged_check_does_not_stop_the_loop() -> None:
    played = play(FORMAT, spec(rounds=4), checks=[yes(), no(), no()])
    assert played.keys[-1] == "r4.synthesis.claude"
    assert played.outcome.converged is False


def test_duel_stops_at_the_round_cap() -> None:
    played = play(FORMAT, spec(rounds=3), checks=[no(), no(), no(), no()])
    assert [key for key in played.keys if ".rebuttal." in key] == [
        "r2.rebuttal.claude",
        "r3.rebuttal.claude",
    ]
    assert played.keys[-1] == "r3.synthesis.claude"
    assert played.outcome.rounds_run == 3
    assert played.outcome.converged is False


def test_duel_converging_in_the_last_two_rounds_counts_as_converged() -> None:
    played = play(FORMAT, spec(rounds=3), checks=[yes(), yes()])
    assert played.outcome.rounds_run == 3
    assert played.outcome.converged is True


def test_duel_with_two_rounds_can_never_converge() -> None:
    played = play(FORMAT, spec(rounds=2), checks=[yes()])
    assert played.outcome.rounds_run == 2
    assert played.outcome.converged is False


def test_duel_unparsable_check_counts_as_not_converged() -> None:
    played = play(FORMAT, spec(rounds=4), checks=[yes(), "Hmm, hard to say really.", yes()])
    verdict = played.turn("r3.convergence.claude").verdict
    assert verdict == {"converged": None, "reason": "Hmm, hard to say really.", "parsed": False}
    assert played.keys[-1] == "r4.synthesis.claude"
    assert played.outcome.converged is False


def test_duel_each_check_is_a_recorded_verdict_with_its_reason() -> None:
    played = play(FORMAT, spec(rounds=3), checks=[no("Gemini ignored cost"), yes("agreed")])
    assert played.turn("r2.convergence.claude").verdict == {
        "converged": False,
        "reason": "Gemini ignored cost",
        "parsed": True,
    }
    assert played.turn("r3.convergence.claude").verdict == {
        "converged": True,
        "reason": "agreed",
        "parsed": True,
    }


def test_duel_only_convergence_turns_have_verdicts() -> None:
    played = play(FORMAT, spec(rounds=2, seed="audit"), checks=[no()])
    with_verdict = [turn.key for turn in played.done if turn.verdict is not None]
    assert with_verdict == ["r2.convergence.claude"]


def test_duel_recorded_verdict_decides_over_the_text() -> None:
    debate = spec(rounds=5)
    done = openings_done(debate)
    for n in (2, 3):
        for plan in FORMAT.plan(debate, done):
            assert plan.round == n
        rebuttal = FORMAT.plan(debate, done)[0]
        done += (complete(FORMAT, rebuttal, "counter"),)
        response = FORMAT.plan(debate, done)[0]
        done += (complete(FORMAT, response, "answer"),)
        check = FORMAT.plan(debate, done)[0]
        # The text says no, but the recorded verdict (what people saw) says yes.
        done += (
            CompletedTurn(
                key=check.key, role=check.role, phase=check.phase, round=check.round,
                text="CONVERGED: no", verdict={"converged": True, "reason": "", "parsed": True},
            ),
        )  # fmt: skip
    [synthesis] = FORMAT.plan(debate, done)
    assert synthesis.key == "r3.synthesis.claude"


def test_duel_check_without_recorded_verdict_is_read_from_its_text() -> None:
    debate = spec(rounds=3)
    done = openings_done(debate)
    while plans := FORMAT.plan(debate, done):
        [plan] = plans
        text = "CONVERGED: yes" if plan.phase == "convergence" else "words"
        done += (
            CompletedTurn(key=plan.key, role=plan.role, phase=plan.phase, round=plan.round,
                          text=text),
        )  # fmt: skip
    assert FORMAT.outcome(debate, done).converged is True


# ------------------------------------------------------------------ transcripts


def test_duel_gemini_sees_the_whole_conversation_with_alternating_roles() -> None:
    played = play(FORMAT, spec(rounds=4), checks=[no(), no(), no()])
    response = played.plan("r4.response.gemini")
    contents = [message.content for message in response.messages]
    assert [message.role for message in response.messages] == [
        "user", "assistant", "user", "assistant", "user", "assistant", "user",
    ]  # fmt: skip
    assert contents[0] == played.plan("r1.opening.gemini").messages[0].content
    assert contents[1] == played.text("r1.opening.gemini")
    assert played.text("r1.opening.claude") in contents[2]
    assert played.text("r2.rebuttal.claude") in contents[2]
    assert contents[2].index(played.text("r1.opening.claude")) < contents[2].index(
        played.text("r2.rebuttal.claude")
    )
    assert contents[3] == played.text("r2.response.gemini")
    assert played.text("r3.rebuttal.claude") in contents[4]
    assert contents[5] == played.text("r3.response.gemini")
    assert played.text("r4.rebuttal.claude") in contents[6]
    assert "Claude's counterargument (round 4)" in contents[6]
    assert response.system == prompts.gemini_system(ENGLISH)


def test_duel_gemini_never_sees_claudes_convergence_checks() -> None:
    played = play(FORMAT, spec(rounds=3), checks=[no("SECRET CHECK REASON"), no()])
    assert "SECRET CHECK REASON" not in all_text(played.plan("r3.response.gemini"))
    assert "SECRET CHECK REASON" not in all_text(played.plan("r3.rebuttal.claude"))


def test_duel_claude_sees_its_own_turns_as_assistant_and_geminis_as_user() -> None:
    played = play(FORMAT, spec(rounds=3), checks=[no(), no()])
    rebuttal = played.plan("r3.rebuttal.claude")
    messages = rebuttal.messages
    assert [m.role for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    assert messages[0].content == played.plan("r1.opening.claude").messages[0].content
    assert messages[1].content == played.text("r1.opening.claude")
    assert played.text("r1.opening.gemini") in messages[2].content
    assert messages[3].content == played.text("r2.rebuttal.claude")
    assert played.text("r2.response.gemini") in messages[4].content
    assert "Counter Gemini's last position" in messages[4].content


def test_duel_rebuttal_in_round_two_counters_geminis_opening() -> None:
    played = play(FORMAT, spec(rounds=2), checks=[no()])
    rebuttal = played.plan("r2.rebuttal.claude")
    last = rebuttal.messages[-1].content
    assert played.text("r1.opening.gemini") in last
    assert "weakest point" in last
    assert "concede" in last


def test_duel_convergence_check_sees_geminis_latest_response_and_asks_labelled_answer() -> None:
    played = play(FORMAT, spec(rounds=2), checks=[no()])
    check = played.plan("r2.convergence.claude")
    last = check.messages[-1].content
    assert played.text("r2.response.gemini") in last
    assert "CONVERGED: yes or no" in last
    assert "REASON:" in last
    assert "repeating" in last
    assert "genuinely disagree" in last
    assert "genuine participant" in check.system


def test_duel_synthesis_sees_the_whole_debate() -> None:
    played = play(FORMAT, spec(rounds=3), checks=[no(), no()])
    synthesis = played.plan("r3.synthesis.claude")
    transcript = all_text(synthesis)
    for key in (
        "r1.opening.claude", "r1.opening.gemini", "r2.rebuttal.claude",
        "r2.response.gemini", "r3.rebuttal.claude", "r3.response.gemini",
    ):  # fmt: skip
        assert played.text(key) in transcript
    assert synthesis.round == 3


def test_duel_every_plan_alternates_roles_starting_and_ending_with_user() -> None:
    played = play(FORMAT, spec(rounds=5, seed="plan"), checks=[no(), yes(), no(), no()])
    for plan in played.plans:
        assert alternates_from_user(plan), plan.key


def test_duel_empty_replies_never_become_empty_messages() -> None:
    played = play(FORMAT, spec(rounds=3), reply=lambda plan: "", checks=[no(), no()])
    for plan in played.plans:
        assert all(message.content.strip() for message in plan.messages), plan.key


# ------------------------------------------------------------------ seat labels


def test_duel_prompts_name_the_other_side_by_its_seat_label() -> None:
    seats = (
        Seat(role="claude", label="Opus", provider="anthropic"),
        Seat(role="gemini", label="Flash", provider="openai"),
    )
    played = play(FORMAT, spec(seats=seats, rounds=2), checks=[no()])
    assert "Flash" in played.plan("r2.rebuttal.claude").system
    assert "Counter Flash's last position" in played.plan("r2.rebuttal.claude").messages[-1].content
    assert (
        "Opus's counterargument (round 2)" in played.plan("r2.response.gemini").messages[-1].content
    )
    synthesis = played.plan("r2.synthesis.claude").messages[-1].content
    assert "Strongest argument (Opus):" in synthesis
    assert "Strongest argument (Flash):" in synthesis


# ------------------------------------------------------------------ synthesis


def test_duel_synthesis_prompt_gives_the_converged_shape() -> None:
    played = play(FORMAT, spec(rounds=3), checks=[yes(), yes()])
    ask = played.plan("r3.synthesis.claude").messages[-1].content
    assert "Agreed position: <1–3 sentences" in ask
    assert "Positions not fully reconciled" not in ask


def test_duel_synthesis_prompt_gives_the_unreconciled_shape() -> None:
    played = play(FORMAT, spec(rounds=3), checks=[no(), no()])
    ask = played.plan("r3.synthesis.claude").messages[-1].content
    assert "Positions not fully reconciled after 3 round(s). Key tension:" in ask
    assert "Strongest argument (Claude):" in ask
    assert "Strongest argument (Gemini):" in ask
    assert "Best available synthesis:" in ask
    assert "Agreed position" not in ask


def test_duel_outcome_prefixes_agreed_position_when_the_model_forgot() -> None:
    played = play(
        FORMAT, spec(rounds=3), reply=lambda plan: "Use a monorepo.", checks=[yes(), yes()]
    )
    assert played.outcome.synthesis == "Agreed position: Use a monorepo."


def test_duel_outcome_prepends_the_unreconciled_header_when_the_model_forgot() -> None:
    played = play(
        FORMAT, spec(rounds=2), reply=lambda plan: "They disagree on cost.", checks=[no()]
    )
    assert played.outcome.synthesis == (
        "Positions not fully reconciled after 2 round(s). Key tension:\nThey disagree on cost."
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Agreed position: Ship it.", "Agreed position: Ship it."),
        ("**Agreed position:** Ship it.", "Agreed position: Ship it."),
        ("  agreed position:  Ship it.\n", "Agreed position: Ship it."),
        ("## Agreed Position: Ship it.", "Agreed position: Ship it."),
        ("Ship it.", "Agreed position: Ship it."),
        ("", "Agreed position:"),
    ],
)
def test_normalize_converged_synthesis(text: str, expected: str) -> None:
    assert normalize_synthesis(text, converged=True, rounds_run=3) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Positions not fully reconciled after 4 round(s). Key tension: cost.",
            "Positions not fully reconciled after 4 round(s). Key tension: cost.",
        ),
        (
            "**Positions not fully reconciled after 4 round(s).** Key tension: cost.",
            "**Positions not fully reconciled after 4 round(s).** Key tension: cost.",
        ),
        (
            "Strongest argument (Claude): speed",
            "Positions not fully reconciled after 4 round(s). Key tension:\n"
            "Strongest argument (Claude): speed",
        ),
    ],
)
def test_normalize_unreconciled_synthesis(text: str, expected: str) -> None:
    assert normalize_synthesis(text, converged=False, rounds_run=4) == expected


def test_duel_outcome_of_an_unfinished_debate_has_no_synthesis() -> None:
    debate = spec(rounds=3)
    outcome = FORMAT.outcome(debate, openings_done(debate))
    assert outcome.synthesis == ""
    assert outcome.converged is False


# ------------------------------------------------------------------ keys and re-planning


def test_duel_keys_are_unique() -> None:
    played = play(FORMAT, spec(rounds=6, seed="audit"), checks=[no(), yes(), no(), yes(), no()])
    assert len(played.keys) == len(set(played.keys))


def test_duel_replanning_with_the_same_done_gives_the_same_plans() -> None:
    debate = spec(rounds=4, seed="find_bug")
    played = play(FORMAT, debate, checks=[no(), yes(), yes()])
    done: tuple[CompletedTurn, ...] = ()
    for batch in played.batches:
        assert FORMAT.plan(debate, done) == batch
        assert FORMAT.plan(debate, done) == FORMAT.plan(debate, done)
        done += tuple(turn for turn in played.done if turn.key in {p.key for p in batch})
    assert FORMAT.plan(debate, done) == []


def test_duel_replanning_ignores_the_order_of_done() -> None:
    debate = spec(rounds=3)
    played = play(FORMAT, debate, checks=[no(), no()])
    partial = played.done[:5]
    assert FORMAT.plan(debate, partial) == FORMAT.plan(debate, tuple(reversed(partial)))


# ------------------------------------------------------------------ language


def test_duel_japanese_topic_tells_every_turn_to_write_in_japanese() -> None:
    played = play(
        FORMAT,
        spec(topic="ソフトウェア開発においてテストは本当に必要か", rounds=3, seed="audit"),
        checks=["収束: いいえ\n理由: まだ反論がある", no()],
    )
    for plan in played.plans:
        assert "Write in Japanese." in plan.system, plan.key
    assert played.turn("r2.convergence.claude").verdict == {
        "converged": False,
        "reason": "まだ反論がある",
        "parsed": True,
    }


def test_duel_english_topic_tells_every_turn_to_write_in_english() -> None:
    played = play(FORMAT, spec(rounds=2), checks=[no()])
    assert all("Write in English." in plan.system for plan in played.plans)
