"""``argue list`` and ``argue show``: saved debates read back in the terminal."""

from __future__ import annotations

import re

import pytest

from tests.cli.conftest import DUEL_SEATS, Argue, script_agreement
from tests.fakes.llm_server import FakeLLMServer


def _run(argue: Argue, topic: str, *extra: str) -> str:
    result = argue("run", topic, *extra, *DUEL_SEATS)
    match = re.search(r"^Debate ([0-9a-f]+) ", result.out, re.MULTILINE)
    assert match, result.out + result.err
    return match.group(1)


def test_list_is_a_table_newest_first(fake: FakeLLMServer, argue: Argue) -> None:
    script_agreement(fake)
    first = _run(argue, "Is SQLite enough?", "--rounds", "3")
    second = _run(argue, "Tabs or spaces " + "and more words " * 6, "--rounds", "1")

    result = argue("list")

    assert result.code == 0
    header, *rows = result.out.strip().splitlines()
    assert header.split() == [
        "id", "date", "format", "status", "converged", "rounds", "tokens", "cost", "topic"
    ]  # fmt: skip
    assert [row.split()[0] for row in rows] == [second, first]
    cells = rows[1].split()
    assert cells[3:7] == ["duel", "completed", "yes", "3/3"]
    assert int(cells[7]) > 0
    assert cells[8] == "unknown"  # the seats run gpt-test, which has no price
    assert rows[0].endswith("…")  # a long topic is cut


def test_list_filters_by_status_text_and_limit(
    fake: FakeLLMServer, argue: Argue, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = _run(argue, "Is SQLite enough?", "--rounds", "1")
    monkeypatch.setenv("ARGUE_RETRY_MAX_ATTEMPTS", "1")
    fake.script(provider="openai", fault="http_500", times=2)
    failed = _run(argue, "Tabs or spaces", "--rounds", "1")

    by_status = argue("list", "--status", "failed").out
    by_text = argue("list", "-q", "sqlite").out
    limited = argue("list", "--limit", "1").out

    assert failed in by_status and done not in by_status
    assert done in by_text and failed not in by_text
    assert failed in limited and done not in limited
    assert "(1 of 2; use --limit to see more)" in limited
    assert argue("list", "--format", "panel").out.strip() == "No debates match."


def test_list_refuses_a_search_too_long_to_run_in_one_line(
    fake: FakeLLMServer, argue: Argue
) -> None:
    script_agreement(fake)
    _run(argue, "Is SQLite enough?", "--rounds", "1")

    result = argue("list", "-q", "x" * 60_000)

    assert result.code == 2
    assert result.err.strip() == (
        "argue list: --query: A search is at most 500 characters; this one has 60,000."
    )
    assert result.out == ""
    assert argue("list", "-q", "sqlite " + "x" * 493).out.strip() == "No debates match."


def test_list_with_no_debates_says_how_to_start_one(argue: Argue) -> None:
    result = argue("list")

    assert result.code == 0
    assert "No debates yet" in result.out


def test_show_prints_header_every_turn_and_the_synthesis(fake: FakeLLMServer, argue: Argue) -> None:
    script_agreement(fake)
    debate_id = _run(argue, "Is SQLite enough?", "--rounds", "3")

    result = argue("show", debate_id)

    assert result.code == 0
    out = result.out
    assert out.startswith(f"Debate {debate_id}\nTopic:    Is SQLite enough?\n")
    assert "Format:   duel · type: general · rounds: 3 of 3 · converged: yes" in out
    assert "Status:   completed" in out
    assert "Seats:    Claude: openai, Gemini: openai" in out
    assert "Finals:   " in out
    turn_headers = re.findall(r"^── (.+) ──$", out, re.MULTILINE)
    # The two openings run in parallel: either may be saved first.
    assert sorted(turn_headers[:2]) == [
        f"{label} · openai:gpt-test · opening · round 1" for label in ("Claude", "Gemini")
    ]
    assert len(turn_headers) == 2 + 3 * 2 + 1  # openings, 2 rounds of 3 turns, synthesis
    assert out.count("verdict: converged — nothing left to counter") == 2
    assert out.rstrip().endswith("══ Synthesis ══\nAgreed position: SQLite is enough for one box.")


def test_show_gives_a_failed_turn_with_its_error(
    fake: FakeLLMServer, argue: Argue, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARGUE_RETRY_MAX_ATTEMPTS", "1")
    fake.script(provider="openai", fault="http_500", error_message="The GPU caught fire")
    debate_id = _run(argue, "a topic", "--rounds", "2")

    out = argue("show", debate_id).out

    assert "Status:   failed — " in out
    assert "✗ failed (server): The GPU caught fire" in out


def test_show_of_an_unknown_debate_exits_1(argue: Argue) -> None:
    result = argue("show", "nosuchdebate")

    assert result.code == 1
    assert "no debate 'nosuchdebate'" in result.err
