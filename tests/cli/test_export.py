"""``argue export``: finals and transcript as Markdown, a panel's workspace as a zip."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest

from tests.cli.conftest import DUEL_SEATS, Argue, script_agreement
from tests.fakes.llm_server import FakeLLMServer

# The panel's Gemini debaters on the fake OpenAI endpoint; the rest keep their defaults
# (Anthropic and OpenAI), which the fixture points at the fake server.
PANEL_SEATS = ("--seat", "pro_gemini=openai", "--seat", "con_gemini=openai")


def _run(argue: Argue, *args: str) -> str:
    result = argue("run", *args)
    assert result.code == 0, result.out + result.err
    match = re.search(r"^Debate ([0-9a-f]+) ", result.out, re.MULTILINE)
    assert match
    return match.group(1)


def test_export_prints_the_finals_as_written(fake: FakeLLMServer, argue: Argue, home: Path) -> None:
    script_agreement(fake)
    debate_id = _run(argue, "Is SQLite enough?", "--rounds", "3", *DUEL_SEATS)

    result = argue("export", debate_id)

    assert result.code == 0
    assert result.out == (home / "finals" / "is-sqlite-enough.md").read_text()
    assert result.out.startswith("# Argue: Is SQLite enough?\n**Type**: general  **Rounds**: 3")


def test_export_transcript_to_a_file(fake: FakeLLMServer, argue: Argue, tmp_path: Path) -> None:
    debate_id = _run(argue, "a topic", "--rounds", "2", *DUEL_SEATS)
    target = tmp_path / "out" / "transcript.md"

    result = argue("export", debate_id, "--transcript", "-o", str(target))

    assert result.code == 0
    assert result.out == ""
    assert f"Written to {target}" in result.err
    written = target.read_text()
    assert written.startswith("# Argue transcript: a topic\n")
    turns = re.findall(r"^### Round (\d) · (\w+) · (Claude|Gemini) \(", written, re.MULTILINE)
    # two openings, a rebuttal and a response
    assert [(n, phase) for n, phase, _ in turns] == [
        ("1", "opening"),
        ("1", "opening"),
        ("2", "rebuttal"),
        ("2", "response"),
    ]


def test_workspace_of_a_duel_is_refused(fake: FakeLLMServer, argue: Argue) -> None:
    debate_id = _run(argue, "a topic", "--rounds", "1", *DUEL_SEATS)

    result = argue("export", debate_id, "--workspace")

    assert result.code == 2
    assert "--workspace is for panel debates" in result.err


def test_workspace_of_a_panel_is_zipped_into_the_current_folder(
    fake: FakeLLMServer, argue: Argue, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    debate_id = _run(argue, "Remote work", "--format", "panel", *PANEL_SEATS)
    monkeypatch.chdir(tmp_path)

    result = argue("export", debate_id, "--workspace")

    assert result.code == 0, result.err
    archives = list(tmp_path.glob("debate_*.zip"))
    assert len(archives) == 1
    assert f"Written to {archives[0]}" in result.err
    with zipfile.ZipFile(archives[0]) as archive:
        names = {name.split("/", 1)[1] for name in archive.namelist()}
    assert {"1_claims/pro_claude.md", "1_claims/con_codex.md"} <= names
    assert {"2_summaries/pro_summary.md", "3_report/final_report.md"} <= names


def test_export_of_an_unknown_debate_exits_1(argue: Argue) -> None:
    result = argue("export", "nosuchdebate")

    assert result.code == 1
    assert "no debate 'nosuchdebate'" in result.err
