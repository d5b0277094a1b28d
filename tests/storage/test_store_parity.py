"""The store answers alike on SQLite and PostgreSQL: every test here runs on both, and each
asserts the answer a person would expect, so a difference between the databases fails one
of the two runs.

Where they differ by nature and the store evens them out: LIKE ignores case on SQLite and
not on PostgreSQL; SQLite's ``lower()`` folds ASCII only; PostgreSQL refuses NUL in text; a
PostgreSQL server may keep another time zone (the test database's is UTC+05:45)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import update
from sqlalchemy.engine import Engine

from app import store
from app.db import session_scope
from app.models import Debate, utcnow
from app.spec import DebateSpec, Outcome, Seat

pytestmark = pytest.mark.both_databases

SEATS = (
    Seat(role="claude", label="Claude", provider="anthropic"),
    Seat(role="gemini", label="Gemini", provider="gemini"),
)


def add_debates(engine: Engine, *topics: str) -> dict[str, str]:
    """Topic -> id of a new queued duel for each topic."""
    ids = {}
    with session_scope(engine) as session:
        for topic in topics:
            spec = DebateSpec(topic=topic, format="duel", seats=SEATS)
            ids[topic] = store.create_debate(session, spec=spec).id
    return ids


def found(engine: Engine, query: str) -> set[str]:
    """The topics a search for ``query`` lists, checked to agree between both listings."""
    with session_scope(engine) as session:
        full, total = store.list_debates(session, query=query, per_page=100)
        rows, row_total = store.list_debate_rows(session, query=query, per_page=100)
    assert total == row_total == len(full)
    assert [row.id for row in rows] == [debate.id for debate in full]
    return {debate.topic for debate in full}


def save_turn(engine: Engine, debate_id: str, *, key: str, text: str, **extra: Any) -> None:
    now = utcnow()
    values: dict[str, Any] = {
        "role": "claude",
        "label": "Claude",
        "provider": "anthropic",
        "model": "claude-test",
        "phase": "opening",
        "round": 1,
        "status": "completed",
        "verdict": None,
        "error_kind": None,
        "error_message": None,
        "input_tokens": 10,
        "output_tokens": 5,
        "usage_estimated": False,
        "attempts": 1,
        "started_at": now,
        "finished_at": now,
        **extra,
    }
    with session_scope(engine) as session:
        store.record_turn(session, debate_id=debate_id, key=key, text=text, **values)


def test_a_topic_search_ignores_case_in_any_script(engine: Engine) -> None:
    add_debates(engine, "Rust or Go for CLIs", "ÉTÉ À PARIS", "Straße und Verkehr", "Tabs")

    assert found(engine, "rust") == {"Rust or Go for CLIs"}
    assert found(engine, "RUST OR go") == {"Rust or Go for CLIs"}
    assert found(engine, "été à") == {"ÉTÉ À PARIS"}
    assert found(engine, "STRASSE") == set()  # case folding, not spelling equivalence
    assert found(engine, "STRAßE") == {"Straße und Verkehr"}


def test_a_search_takes_percent_underscore_slash_and_backslash_literally(
    engine: Engine,
) -> None:
    topics = ("100% sure", "100 sure", "snake_case", "snakeXcase", "a/b", "a\\b", "ab")
    add_debates(engine, *topics)

    assert found(engine, "100%") == {"100% sure"}
    assert found(engine, "%") == {"100% sure"}
    assert found(engine, "e_c") == {"snake_case"}
    assert found(engine, "_") == {"snake_case"}
    assert found(engine, "a/b") == {"a/b"}
    assert found(engine, "a\\b") == {"a\\b"}
    assert found(engine, "\\") == {"a\\b"}


def test_debates_created_at_the_same_instant_page_by_id_with_no_gap_or_repeat(
    engine: Engine,
) -> None:
    ids = list(add_debates(engine, *(f"Tie {n}" for n in range(7))).values())
    instant = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    with session_scope(engine) as session:
        session.execute(update(Debate).values(created_at=instant))

    with session_scope(engine) as session:
        pages = [store.list_debates(session, page=page, per_page=3)[0] for page in (1, 2, 3, 4)]
        row_pages = [
            store.list_debate_rows(session, page=page, per_page=3)[0] for page in (1, 2, 3)
        ]

    listed = [debate.id for page in pages for debate in page]
    assert listed == sorted(ids, reverse=True)
    assert [len(page) for page in pages] == [3, 3, 1, 0]
    assert [row.id for page in row_pages for row in page] == listed


def test_times_come_back_as_the_same_utc_instant_whatever_zone_they_were_given_in(
    engine: Engine,
) -> None:
    (debate_id,) = add_debates(engine, "Time zones").values()
    # 09:30 at UTC-07:00 is 16:30 UTC, and 22:15 in the test server's own zone.
    given = datetime(2026, 3, 4, 9, 30, 15, 123456, tzinfo=timezone(timedelta(hours=-7)))
    with session_scope(engine) as session:
        session.execute(update(Debate).where(Debate.id == debate_id).values(created_at=given))
    save_turn(
        engine,
        debate_id,
        key="r1.opening.claude",
        text="x",
        started_at=given,
        finished_at=given + timedelta(seconds=2),
    )

    with session_scope(engine) as session:
        debate = store.get_debate(session, debate_id=debate_id)
        (row,), _ = store.list_debate_rows(session)
        (turn,) = store.turns_of(session, debate_id=debate_id)
    assert debate is not None
    expected = datetime(2026, 3, 4, 16, 30, 15, 123456, tzinfo=UTC)
    for value in (debate.created_at, row.created_at, turn.started_at):
        assert value == expected
        assert value.utcoffset() == timedelta(0)


def test_json_columns_keep_nested_values_unicode_and_null(engine: Engine) -> None:
    (debate_id,) = add_debates(engine, "JSON 日本語").values()
    verdict = {"winner": "pro", "scores": {"pro": 8.5, "con": 7}, "notes": ["ü", "\u0000", "😀"]}
    outputs = {"finals": "a/b.md", "plan": None, "nested": {"list": [1, [2, {"k": True}]]}}
    save_turn(engine, debate_id, key="r1.judgement.judge", text="judged", verdict=verdict)
    save_turn(engine, debate_id, key="r1.opening.claude", text="no verdict")
    with session_scope(engine) as session:
        store.set_outputs(session, debate_id=debate_id, outputs=outputs)

    with session_scope(engine) as session:
        debate = store.get_debate(session, debate_id=debate_id)
        turns = store.turns_of(session, debate_id=debate_id)
    assert debate is not None
    assert debate.outputs == outputs
    assert store.debate_spec(debate).topic == "JSON 日本語"
    assert [turn.verdict for turn in turns] == [verdict, None]


def test_model_text_with_nul_characters_is_saved_without_them(engine: Engine) -> None:
    (debate_id,) = add_debates(engine, "NUL").values()
    save_turn(engine, debate_id, key="r1.opening.claude", text="be\x00fore\x00")
    save_turn(
        engine,
        debate_id,
        key="r1.opening.gemini",
        text="",
        status="failed",
        error_kind="server",
        error_message="upstream\x00 said no",
    )
    with session_scope(engine) as session:
        store.finish_debate(
            session,
            debate_id=debate_id,
            status="failed",
            outcome=Outcome(rounds_run=1, converged=None, synthesis="syn\x00thesis"),
            reason="gave\x00 up",
        )

    with session_scope(engine) as session:
        debate = store.get_debate(session, debate_id=debate_id)
        turns = store.turns_of(session, debate_id=debate_id)
    assert debate is not None
    assert (debate.synthesis, debate.status_reason) == ("synthesis", "gave up")
    assert [(turn.text, turn.error_message) for turn in turns] == [
        ("before", None),
        ("", "upstream said no"),
    ]


def test_a_turn_saved_again_under_its_key_replaces_it_and_adds_its_tokens(
    engine: Engine,
) -> None:
    (debate_id,) = add_debates(engine, "Retry").values()
    save_turn(engine, debate_id, key="r1.opening.claude", text="", status="failed")
    save_turn(engine, debate_id, key="r1.opening.claude", text="second try", input_tokens=7)

    with session_scope(engine) as session:
        debate = store.get_debate(session, debate_id=debate_id)
        turns = store.turns_of(session, debate_id=debate_id)
    assert debate is not None
    assert [(turn.key, turn.seq, turn.text, turn.status) for turn in turns] == [
        ("r1.opening.claude", 2, "second try", "completed")
    ]
    assert (debate.input_tokens, debate.output_tokens) == (17, 10)


def test_an_id_prefix_finds_the_debate_whatever_its_case_and_escapes_wildcards(
    engine: Engine,
) -> None:
    (debate_id,) = add_debates(engine, "Prefix").values()
    with session_scope(engine) as session:
        upper = store.debate_ids_starting_with(session, prefix=debate_id[:5].upper(), limit=5)
        lower = store.debate_ids_starting_with(session, prefix=debate_id[:5], limit=5)
        wildcard = store.debate_ids_starting_with(session, prefix="%", limit=5)
        underscore = store.debate_ids_starting_with(session, prefix="_", limit=5)
    assert upper == lower == [debate_id]
    assert wildcard == underscore == []


def test_counts_filters_and_the_last_page_agree(engine: Engine) -> None:
    ids = add_debates(engine, *(f"Count {n}" for n in range(5)))
    with session_scope(engine) as session:
        for topic in ("Count 1", "Count 3"):
            store.set_status(session, debate_id=ids[topic], status="failed", reason="why")

    with session_scope(engine) as session:
        failed, failed_total = store.list_debates(session, status="failed", per_page=1, page=2)
        none, none_total = store.list_debates(session, format="panel")
        beyond, beyond_total = store.list_debates(session, per_page=2, page=9)
    assert failed_total == 2 and len(failed) == 1
    assert failed[0].topic in {"Count 1", "Count 3"}
    assert (none, none_total) == ([], 0)
    assert (beyond, beyond_total) == ([], 5)


def test_tokens_per_model_are_summed_and_listed_in_one_order(engine: Engine) -> None:
    (debate_id,) = add_debates(engine, "Costs").values()
    for number, (provider, model) in enumerate(
        [("openai", "gpt-b"), ("anthropic", "claude-z"), ("openai", "gpt-a"), ("openai", "gpt-b")]
    ):
        save_turn(
            engine,
            debate_id,
            key=f"r{number}.opening.claude",
            text="x",
            provider=provider,
            model=model,
            input_tokens=100 + number,
        )

    with session_scope(engine) as session:
        uses = store.tokens_by_model(session, debate_ids=[debate_id, "no-such-debate"])

    assert [
        (use.provider, use.model, use.input_tokens, use.output_tokens) for use in uses[debate_id]
    ] == [
        ("anthropic", "claude-z", 101, 5),
        ("openai", "gpt-a", 102, 5),
        ("openai", "gpt-b", 100 + 103, 10),
    ]
    assert list(uses) == [debate_id]
