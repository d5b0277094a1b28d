"""Stored history for the history-page figure: finished debates written straight into the
app's SQLite database before the server starts, through the app's own store, in one
transaction."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import update
from sqlmodel import Session

from app import store
from app.db import make_engine
from app.migrate import migrate
from app.models import Debate
from app.spec import DebateSpec, FormatName, Seat

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


def seed_history(home: Path, *, count: int) -> None:
    """``count`` completed debates, a fifth of them panels."""
    home.mkdir(parents=True, exist_ok=True)
    engine = make_engine(f"sqlite:///{home / 'argue.db'}")
    migrate(engine)
    if count <= 0:
        engine.dispose()
        return
    now = datetime.now(UTC)
    with Session(engine) as session, session.begin():
        for i in range(count):
            fmt: FormatName = "panel" if i % 5 == 0 else "duel"
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
