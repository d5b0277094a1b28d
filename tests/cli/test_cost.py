"""Cost in the terminal: ``argue run`` ends with what the debate cost, ``argue show`` gives the
total and each turn's, ``--budget-usd`` needs every seat's price, and a bad price file in the
data folder stops a command with its path and line."""

from __future__ import annotations

import re
from pathlib import Path

from tests.cli.conftest import Argue
from tests.fakes.llm_server import FakeLLMServer

# gpt-5-mini: $0.25 in / $2.00 out per million tokens; 1000 in + 100 out = $0.00045 a call.
PRICED_SEATS = ("--seat", "claude=openai:gpt-5-mini", "--seat", "gemini=openai:gpt-5-mini")


def run_priced_duel(fake: FakeLLMServer, argue: Argue, *extra: str) -> tuple[str, str]:
    fake.script(provider="openai", reply="A point.", input_tokens=1000, output_tokens=100, times=3)
    result = argue("run", "Is SQLite enough?", "--rounds", "1", *PRICED_SEATS, *extra)
    assert result.code == 0, result.out + result.err
    match = re.search(r"^Debate ([0-9a-f]+) ", result.out, re.MULTILINE)
    assert match
    return match.group(1), result.out


def test_run_ends_with_what_the_debate_cost(fake: FakeLLMServer, argue: Argue) -> None:
    _, out = run_priced_duel(fake, argue)
    # Two openings and a synthesis: 3 × $0.00045 = $0.00135.
    assert "Cost: $0.0014 at list prices · 3000 in / 300 out tokens" in out


def test_show_gives_the_total_and_each_turns_cost(fake: FakeLLMServer, argue: Argue) -> None:
    debate_id, _ = run_priced_duel(fake, argue, "--budget-usd", "$0.50")

    shown = argue("show", debate_id)

    assert shown.code == 0
    assert "Cost:     $0.0014 at list prices · budget: $0.50" in shown.out
    assert shown.out.count("· $0.0005") == 3  # each turn: $0.00045


def test_a_budget_with_an_unpriced_seat_is_refused_at_once(
    fake: FakeLLMServer, argue: Argue
) -> None:
    result = argue(
        "run",
        "Is SQLite enough?",
        "--seat",
        "claude=openai:gpt-5-mini",
        "--seat",
        "gemini=openai:gpt-test",
        "--budget-usd",
        "1",
    )
    assert result.code == 2
    assert "Gemini's model gpt-test (openai) has no price" in result.err
    assert fake.requests == []


def test_a_bad_price_file_stops_a_command_with_its_path_and_line(home: Path, argue: Argue) -> None:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "prices.toml"
    path.write_text('[models]\n"gpt-5-mini" = { input = 0.25 output = 2 }\n', encoding="utf-8")

    result = argue("list")

    assert result.code == 2
    assert str(path) in result.err
    assert "line 2" in result.err
