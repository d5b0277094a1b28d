"""``argue run``: the request it builds from the command line, the live output, and the files
a finished debate leaves behind."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from app.cli.run import split_type_prefix
from app.models import Debate, Turn
from tests.cli.conftest import DUEL_SEATS, Argue, script_agreement
from tests.fakes.llm_server import FakeLLMServer


class _Terminal(io.StringIO):
    """Standard input that says it is a terminal, holding what the person types."""

    def isatty(self) -> bool:
        return True


def _debates(db: Engine) -> list[Debate]:
    with Session(db) as session:
        return list(session.exec(select(Debate)).all())


def _only_debate(db: Engine) -> Debate:
    debates = _debates(db)
    assert len(debates) == 1
    return debates[0]


@pytest.mark.parametrize(
    ("topic", "given", "expected"),
    [
        ("plan adopt sqlite", None, ("plan", "adopt sqlite")),
        ("Bug login loops forever", None, ("bug", "login loops forever")),
        ("tech rust or go", None, ("tech", "rust or go")),
        ("planning ahead", None, ("general", "planning ahead")),
        ("plan", None, ("general", "plan")),
        ("plan adopt sqlite", "bug", ("bug", "plan adopt sqlite")),
    ],
)
def test_a_leading_type_word_sets_the_type_unless_the_type_is_given(
    topic: str, given: str | None, expected: tuple[str, str]
) -> None:
    assert split_type_prefix(topic, given) == expected


def test_plan_prefix_runs_a_plan_debate_and_writes_the_plan(
    fake: FakeLLMServer, argue: Argue, db: Engine, home: Path
) -> None:
    result = argue("run", "plan", "adopt sqlite", "--rounds", "1", *DUEL_SEATS)

    assert result.code == 0, result.err
    debate = _only_debate(db)
    assert (debate.topic, debate.topic_type) == ("adopt sqlite", "plan")
    plans = list((home / "plans").glob("*.md"))
    assert len(plans) == 1
    assert f"Plan written to {plans[0]}" in result.out
    assert plans[0].read_text().startswith("# Argue plan: adopt sqlite\n")


def test_a_missing_topic_is_asked_for_on_a_terminal(
    fake: FakeLLMServer,
    argue: Argue,
    db: Engine,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("sys.stdin", _Terminal("tech rust or go\n"))

    result = argue("run", "--rounds", "1", *DUEL_SEATS)

    assert result.code == 0, result.err
    assert "What should Claude and Gemini debate?" in result.out
    debate = _only_debate(db)
    assert (debate.topic, debate.topic_type) == ("rust or go", "tech")


@pytest.mark.parametrize("stdin", [io.StringIO("a topic on a pipe\n"), _Terminal("\n")])
def test_no_topic_without_a_terminal_or_an_empty_answer_exits_2(
    fake: FakeLLMServer,
    argue: Argue,
    db: Engine,
    monkeypatch: pytest.MonkeyPatch,
    stdin: io.StringIO,
) -> None:
    monkeypatch.setattr("sys.stdin", stdin)

    result = argue("run", *DUEL_SEATS)

    assert result.code == 2
    assert "topic" in result.err
    assert fake.requests == []


@pytest.mark.parametrize("rounds", ["0", "9"])
def test_rounds_outside_one_to_eight_are_refused(
    fake: FakeLLMServer, argue: Argue, rounds: str
) -> None:
    result = argue("run", "a topic", "--rounds", rounds, *DUEL_SEATS)

    assert result.code == 2
    assert f"--rounds must be between 1 and 8 (got {rounds})" in result.err
    assert fake.requests == []


def test_a_seat_the_format_does_not_have_is_refused(fake: FakeLLMServer, argue: Argue) -> None:
    result = argue("run", "a topic", "--seat", "judge=openai")

    assert result.code == 2
    assert "duel has no seat judge" in result.err


def test_a_malformed_seat_is_refused(fake: FakeLLMServer, argue: Argue) -> None:
    result = argue("run", "a topic", "--seat", "claude")

    assert result.code == 2
    assert "NAME=PROVIDER[:MODEL]" in result.err


def test_a_whole_duel_streams_and_writes_finals_and_history(
    fake: FakeLLMServer, argue: Argue, db: Engine, home: Path
) -> None:
    script_agreement(fake)

    result = argue("run", "Should we use SQLite?", "--rounds", "3", "--history", *DUEL_SEATS)

    assert result.code == 0, result.err
    out = result.out
    # Live: each turn's header, its text, its tokens and latency, the verdicts.
    assert "── Claude · openai:gpt-test · opening · round 1 ──" in out
    assert "── Gemini · openai:gpt-test · response · round 2 ──" in out
    assert "openings: " in out and " tok ✓" in out
    assert "Fake openai reply about:" in out
    assert "verdict: converged — nothing left to counter" in out
    assert " out tokens · " in out
    # The end: synthesis and where the files are.
    assert "Agreed position: SQLite is enough for one box." in out
    finals = home / "finals" / "should-we-use-sqlite.md"
    histories = list((home / "history").glob("should-we-use-sqlite-general-*.md"))
    assert f"Finals written to {finals}" in out
    assert len(histories) == 1
    assert f"History written to {histories[0]}" in out
    assert finals.read_text().startswith("# Argue: Should we use SQLite?\n")
    assert "**Converged**: yes" in finals.read_text()
    assert "\n### Round 1 · opening · Claude (" in histories[0].read_text()
    # Saved where the web app reads it, with the paths of its files.
    debate = _only_debate(db)
    assert debate.status == "completed"
    assert debate.converged is True
    assert debate.outputs is not None
    assert debate.outputs["finals"] == str(finals)
    assert debate.outputs["history"] == str(histories[0])


def test_unreadable_paths_are_skipped_and_listed(
    fake: FakeLLMServer, argue: Argue, db: Engine, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("".join(f"line {n}\n" for n in range(400)))
    missing = tmp_path / "missing.md"

    result = argue("run", "a topic", "--rounds", "1", "--paths", f"{notes},{missing}", *DUEL_SEATS)

    assert result.code == 0, result.err
    assert f"Context: {notes}" in result.out
    last_lines = result.out.rstrip().splitlines()[-1]
    assert last_lines == f"Skipped paths (could not be read): {missing}"
    context = _only_debate(db).spec_json["context"]
    assert [item["total_lines"] for item in context] == [400]
    assert context[0]["text"].count("\n") == 300


def test_json_prints_the_result_on_stdout_and_the_debate_on_stderr(
    fake: FakeLLMServer, argue: Argue
) -> None:
    result = argue("run", "a topic", "--rounds", "1", "--json", *DUEL_SEATS)

    assert result.code == 0
    summary = json.loads(result.out)
    assert summary["status"] == "completed"
    assert summary["outputs"]["finals"].endswith("finals/a-topic.md")
    assert "── Claude · openai:gpt-test · opening · round 1 ──" in result.err


def test_retries_are_shown_with_cause_message_and_delay(
    fake: FakeLLMServer, argue: Argue, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARGUE_RETRY_MAX_ATTEMPTS", "2")
    fake.script(provider="openai", fault="http_429", error_message="Slow down please")

    result = argue("run", "a topic", "--rounds", "1", *DUEL_SEATS)

    assert result.code == 0, result.err
    assert re.search(r"retrying after (429|a rate limit): Slow down please in \d", result.out)


@pytest.mark.local_model
def test_an_unconfigured_seat_falls_back_to_local_and_says_so(
    fake: FakeLLMServer, argue: Argue, db: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The one real run: Claude's seat asks for Anthropic, which is not configured here, so
    # the embedded model takes it; Gemini's seat runs on the fake OpenAI endpoint.
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("ARGUE_LOCAL_MAX_OUTPUT_TOKENS", "24")

    result = argue("run", "Tea or coffee?", "--rounds", "1", "--seat", "gemini=openai")

    assert "Note: Claude: anthropic not configured" in result.out
    assert "using local" in result.out
    assert result.code == 0, result.out + result.err
    debate = _only_debate(db)
    with Session(db) as session:
        turns = session.exec(select(Turn).where(Turn.debate_id == debate.id)).all()
    assert {turn.provider for turn in turns if turn.role == "claude"} == {"local"}
    assert all(turn.text.strip() for turn in turns)
