"""Listing debates: the table's light rows and the full objects agree on what a page holds."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import Engine

from app import store
from app.db import session_scope
from app.spec import DebateSpec, Seat

pytestmark = pytest.mark.both_databases

SEATS = (
    Seat(role="claude", label="Claude", provider="anthropic"),
    Seat(role="gemini", label="Gemini", provider="gemini"),
)


def test_table_rows_match_the_full_listing_page_by_page_and_under_filters(engine: Engine) -> None:
    with session_scope(engine) as session:
        for number in range(7):
            spec = DebateSpec(topic=f"Topic {number} about tabs_%", format="duel", seats=SEATS)
            debate = store.create_debate(session, spec=spec)
            if number % 2:
                store.set_status(session, debate_id=debate.id, status="failed", reason="why")
    with session_scope(engine) as session:
        for filters in ({}, {"status": "failed"}, {"query": "tabs_%"}, {"query": "Topic 3"}):
            for page in (1, 2, 3):
                full, full_total = store.list_debates(session, page=page, per_page=3, **filters)
                rows, rows_total = store.list_debate_rows(session, page=page, per_page=3, **filters)
                assert rows_total == full_total
                assert [row.id for row in rows] == [debate.id for debate in full]
                for row, debate in zip(rows, full, strict=True):
                    assert (row.topic, row.status, row.status_reason, row.created_at) == (
                        debate.topic,
                        debate.status,
                        debate.status_reason,
                        debate.created_at,
                    )
        _, failed = store.list_debate_rows(session, status="failed")
        assert failed == 3
