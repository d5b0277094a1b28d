"""Commands that take a debate id accept a unique prefix of it (at least four characters);
a prefix that fits several debates lists them, and ``%`` or ``_`` in it match only themselves."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session

from app import store
from app.migrate import migrate
from app.models import Debate
from app.spec import DebateSpec, Seat
from tests.cli.conftest import Argue

# Each test runs on SQLite and on PostgreSQL (tests/conftest.py).
pytestmark = pytest.mark.both_databases

SPEC = DebateSpec(
    topic="Is SQLite enough?",
    seats=(
        Seat(role="claude", label="Claude", provider="local"),
        Seat(role="gemini", label="Gemini", provider="local"),
    ),
)

AddDebate = Callable[..., str]


@pytest.fixture
def add_debate(db: Engine, home: Path) -> AddDebate:
    """Save a debate under a chosen id (the ids ``argue`` makes are random)."""
    home.mkdir(parents=True, exist_ok=True)
    migrate(db)

    def add(debate_id: str, *, status: str = "completed") -> str:
        with Session(db) as session:
            session.add(
                Debate(
                    id=debate_id,
                    topic=SPEC.topic,
                    format=SPEC.format,
                    slug=store.slugify(SPEC.topic),
                    spec_json=store.spec_to_json(SPEC),
                    seats_summary=store.seats_summary(SPEC),
                    status=status,
                )
            )
            session.commit()
        return debate_id

    return add


def test_show_finds_a_debate_by_a_unique_prefix(argue: Argue, add_debate: AddDebate) -> None:
    add_debate("0a1b2c3d4e5f")
    add_debate("0a1bffffffff")

    result = argue("show", "0a1b2")

    assert result.code == 0, result.err
    assert result.out.startswith("Debate 0a1b2c3d4e5f\n")


def test_export_finds_a_debate_by_a_unique_prefix(argue: Argue, add_debate: AddDebate) -> None:
    add_debate("0a1b2c3d4e5f")

    result = argue("export", "0a1b")

    assert result.code == 0, result.err
    assert "Is SQLite enough?" in result.out


def test_resume_finds_a_debate_by_a_unique_prefix(argue: Argue, add_debate: AddDebate) -> None:
    add_debate("0a1b2c3d4e5f", status="completed")

    result = argue("resume", "0a1b2c")

    # Found, and refused for what it is rather than for not existing.
    assert result.code == 1
    assert "debate 0a1b2c3d4e5f is completed; nothing to resume" in result.err


def test_an_ambiguous_prefix_lists_the_matching_ids_and_exits_2(
    argue: Argue, add_debate: AddDebate
) -> None:
    add_debate("0a1b2c3d4e5f")
    add_debate("0a1bffffffff")
    add_debate("99999999aaaa")

    for command in ("show", "export", "resume"):
        result = argue(command, "0a1b")

        assert result.code == 2, command
        assert "'0a1b' matches more than one debate" in result.err
        assert "0a1b2c3d4e5f" in result.err and "0a1bffffffff" in result.err
        assert "99999999aaaa" not in result.err


def test_an_ambiguous_prefix_lists_only_a_few_ids(argue: Argue, add_debate: AddDebate) -> None:
    for n in range(9):
        add_debate(f"abcd{n:08d}")

    result = argue("show", "abcd")

    assert result.code == 2
    assert result.err.count("abcd0000") == 5
    assert "and more" in result.err


def test_a_prefix_shorter_than_four_characters_is_refused(
    argue: Argue, add_debate: AddDebate
) -> None:
    add_debate("0a1b2c3d4e5f")

    result = argue("show", "0a1")

    assert result.code == 2
    assert "at least 4 characters" in result.err


def test_a_prefix_matching_nothing_says_no_debate(argue: Argue, add_debate: AddDebate) -> None:
    add_debate("0a1b2c3d4e5f")

    result = argue("show", "ffff")

    assert result.code == 1
    assert "no debate 'ffff'" in result.err


def test_percent_and_underscore_in_a_prefix_are_not_wildcards(
    argue: Argue, add_debate: AddDebate
) -> None:
    add_debate("0a1b2c3d4e5f")

    for prefix in ("0a1_", "0a%b", "%%%%", "____"):
        result = argue("show", prefix)

        assert result.code == 1, prefix
        assert f"no debate {prefix!r}" in result.err


def test_store_prefix_lookup_matches_percent_and_underscore_literally(
    db: Engine, add_debate: AddDebate
) -> None:
    add_debate("ab_d00000000")
    add_debate("abxd00000000")
    add_debate("ab%d00000000")

    with Session(db) as session:
        underscore = store.debate_ids_starting_with(session, prefix="ab_d", limit=5)
        percent = store.debate_ids_starting_with(session, prefix="ab%", limit=5)

    assert underscore == ["ab_d00000000"]
    assert percent == ["ab%d00000000"]


def test_a_full_id_is_found_as_before(argue: Argue, add_debate: AddDebate) -> None:
    add_debate("0a1b2c3d4e5f")

    result = argue("show", "0a1b2c3d4e5f")

    assert result.code == 0
    assert result.out.startswith("Debate 0a1b2c3d4e5f\n")
