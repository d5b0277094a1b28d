"""Stored history for the history-page figure: finished debates written straight into the
app's database (the SQLite file of the in-process stack, or the cluster's PostgreSQL
database) before the servers start, through the app's own store, in one transaction."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import update
from sqlmodel import Session

from app import store
from app.db import make_engine
from app.migrate import migrate
from app.models import Debate
from app.spec import DebateSpec, Seat

_SEATS = {
    "duel": (
        Seat(role="claude", label="Claude", provider="anthropic"),
        Seat(role="gemini", label="Gemini", provider="gemini"),
    ),
    "panel": (
        *(
            Seat(role=f"{side}_{name}", label=f"{side} {name}", provider=provider)
            for side in ("pro", "con")
            for name, provider in (
                ("claude", "anthropic"),
                ("gemini", "gemini"),
                ("codex", "openai"),
            )
        ),
        Seat(role="pro_summarizer", label="Pro summarizer", provider="anthropic"),
        Seat(role="con_summarizer", label="Con summarizer", provider="anthropic"),
        Seat(role="judge", label="Judge", provider="anthropic"),
    ),
}


def sqlite_url(home: Path) -> str:
    """The database the app uses in ``home`` when ``ARGUE_DATABASE_URL`` is unset."""
    home.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{home / 'argue.db'}"


def seed_history(url: str, *, count: int) -> None:
    """The schema brought to head, then ``count`` completed debates, a fifth of them panels,
    in the database at ``url`` (any URL ``app.database_url`` accepts)."""
    engine = make_engine(url, pool_size=1)
    migrate(engine)
    if count <= 0:
        engine.dispose()
        return
    now = datetime.now(UTC)
    with Session(engine) as session, session.begin():
        for i in range(count):
            fmt = "panel" if i % 5 == 0 else "duel"
            spec = DebateSpec(
                topic=f"Stored debate {i}: should teams adopt practice number {i % 97}?",
                format=fmt,
                rounds=4,
                seats=_SEATS[fmt],
            )
            store.create_debate(session, spec=spec)
        # Finished, so the app's start-up does not resume them: one statement for all rows.
        session.execute(
            update(Debate).values(
                status="completed",
                started_at=now - timedelta(hours=1),
                finished_at=now - timedelta(minutes=59),
                converged=True,
                rounds_run=4,
                synthesis="Agreed position: it depends on the team.",
                input_tokens=12_000,
                output_tokens=3_000,
            )
        )
    engine.dispose()
