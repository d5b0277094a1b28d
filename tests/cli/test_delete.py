"""``argue delete ID``: by a unique id prefix; ``--yes`` deletes the debate and its files
without asking; without ``--yes`` it asks y/N on a terminal and refuses to guess without one;
a running debate is refused (cancel it first)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from app import store
from app.db import session_scope
from tests.cli.conftest import DUEL_SEATS, Argue, script_agreement
from tests.fakes.llm_server import FakeLLMServer


def run_duel(argue: Argue, topic: str) -> str:
    result = argue("run", topic, "--rounds", "1", *DUEL_SEATS)
    assert result.code == 0, result.out + result.err
    match = re.search(r"^Debate ([0-9a-f]+) ", result.out, re.MULTILINE)
    assert match
    return match.group(1)


def exists(db: Engine, debate_id: str) -> bool:
    with session_scope(db) as session:
        return store.get_debate(session, debate_id=debate_id) is not None


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_delete_by_prefix_with_yes_removes_the_debate_and_its_files(
    fake: FakeLLMServer, argue: Argue, home: Path, db: Engine
) -> None:
    script_agreement(fake)
    debate_id = run_duel(argue, "Is SQLite enough?")
    kept = run_duel(argue, "Is Postgres needed?")
    finals = home / "finals" / "is-sqlite-enough.md"
    assert finals.is_file()

    result = argue("delete", debate_id[:6], "--yes")

    assert result.code == 0, result.err
    assert f"Deleted debate {debate_id} and 1 file it wrote." in result.out
    assert f"removed {finals}" in result.out
    assert not finals.exists()
    assert not exists(db, debate_id)
    assert exists(db, kept) and (home / "finals" / "is-postgres-needed.md").is_file()
    assert argue("show", debate_id).code == 1


def test_delete_asks_on_a_terminal_and_keeps_the_debate_unless_told_yes(
    fake: FakeLLMServer, argue: Argue, db: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    debate_id = run_duel(argue, "Keep or drop")
    monkeypatch.setattr("sys.stdin", Terminal("n\n"))

    declined = argue("delete", debate_id)

    assert declined.code == 1
    assert "Not deleted." in declined.err
    assert exists(db, debate_id)

    monkeypatch.setattr("sys.stdin", Terminal("y\n"))
    accepted = argue("delete", debate_id)

    assert accepted.code == 0
    assert not exists(db, debate_id)


def test_delete_without_a_terminal_needs_yes(
    fake: FakeLLMServer, argue: Argue, db: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    debate_id = run_duel(argue, "Piped input")
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))

    result = argue("delete", debate_id)

    assert result.code == 2
    assert f"argue delete {debate_id} --yes" in result.err
    assert exists(db, debate_id)


def test_delete_refuses_a_running_debate(fake: FakeLLMServer, argue: Argue, db: Engine) -> None:
    debate_id = run_duel(argue, "Still running")
    with session_scope(db) as session:
        store.set_status(session, debate_id=debate_id, status="running")

    result = argue("delete", debate_id, "--yes")

    assert result.code == 2
    assert f"debate {debate_id} is running; cancel it before deleting it" in result.err
    assert exists(db, debate_id)


def test_delete_of_an_unknown_id_says_so(fake: FakeLLMServer, argue: Argue) -> None:
    run_duel(argue, "Something")
    result = argue("delete", "ffffffffffff", "--yes")
    assert result.code == 1
    assert "no debate 'ffffffffffff'" in result.err
