"""Database tables: a debate and its turns.

The spec of a debate is kept whole (``spec_json``) so a resumed debate re-plans from exactly
what was asked; the columns beside it exist to list, filter and show debates cheaply.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Column, Index, UniqueConstraint
from sqlmodel import Field, SQLModel

from app.status import ACTIVE_STATUSES as ACTIVE_STATUSES
from app.status import DebateStatus

DEBATE_STATUSES = tuple(status.value for status in DebateStatus)
TURN_STATUSES = ("completed", "failed")


def utcnow() -> datetime:
    return datetime.now(UTC)


class Debate(SQLModel, table=True):
    __table_args__ = (
        Index("ix_debate_created", "created_at"),
        Index("ix_debate_status_created", "status", "created_at"),
        Index("ix_debate_format_created", "format", "created_at"),
        Index("ix_debate_rerun_of", "rerun_of"),
    )

    id: str = Field(primary_key=True, max_length=32)
    topic: str
    slug: str = Field(max_length=40)
    format: str = Field(max_length=16)
    topic_type: str = Field(default="general", max_length=16)
    rounds: int = 4
    seed: str | None = Field(default=None, max_length=16)
    history: bool = False
    spec_json: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    seats_summary: str = ""
    status: str = Field(default=DebateStatus.QUEUED.value, max_length=16)
    status_reason: str | None = None
    converged: bool | None = None
    rounds_run: int | None = None
    synthesis: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    token_budget: int | None = None
    outputs: dict[str, Any] | None = Field(
        default=None,
        sa_column=Column(JSON, nullable=True),
        description="Files written for this debate: finals, history, plan paths.",
    )
    followups: list[dict[str, Any]] | None = Field(
        default=None,
        sa_column=Column(JSON, nullable=True),
        description="Questions asked after the debate, in order: {question, asked_at}.",
    )
    rerun_of: str | None = Field(
        default=None, max_length=32, description="The debate this one re-runs with other seats."
    )
    created_at: datetime = Field(default_factory=utcnow)
    started_at: datetime | None = None
    finished_at: datetime | None = None
    # The lease of the worker running the debate (``app.leases``; ARGUE_RUN_DEBATES=workers).
    lease_token: int = Field(
        default=0,
        sa_column_kwargs={"server_default": "0"},
        description="Fencing token: grows by one each time a worker takes the debate.",
    )
    lease_holder: str | None = Field(default=None, max_length=128)
    lease_expires_at: datetime | None = None


class Turn(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("debate_id", "key", name="uq_turn_debate_key"),)

    id: int | None = Field(default=None, primary_key=True)
    debate_id: str = Field(foreign_key="debate.id", index=True, max_length=32)
    seq: int = Field(description="Order of completion within the debate.")
    key: str = Field(max_length=64)
    role: str = Field(max_length=32)
    label: str = Field(max_length=64)
    provider: str = Field(max_length=32)
    model: str = Field(max_length=128)
    phase: str = Field(max_length=16)
    round: int
    status: str = Field(default="completed", max_length=16)
    text: str = ""
    verdict: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    error_kind: str | None = Field(default=None, max_length=16)
    error_message: str | None = None
    ended_early: str | None = Field(
        default=None,
        max_length=16,
        description="Why a completed turn stopped short: output_limit or repetition.",
    )
    input_tokens: int = 0
    output_tokens: int = 0
    usage_estimated: bool = False
    attempts: int = 1
    latency_ms: int = 0
    started_at: datetime = Field(default_factory=utcnow)
    finished_at: datetime = Field(default_factory=utcnow)


class EvalRun(SQLModel, table=True):
    """One ``argue eval``: the task's questions as asked, the conditions and their seats.

    The questions are kept whole so a resumed run asks exactly what was asked before, even
    when the task's file has changed or gone since."""

    __tablename__ = "eval_run"
    __table_args__ = (Index("ix_eval_run_created", "created_at"),)

    id: str = Field(primary_key=True, max_length=32)
    task: str = Field(max_length=255)
    seed: int = 0
    rounds: int = 2
    samples: int = Field(default=3, description="Majority's k when no debate sets it.")
    conditions: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    seats: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    questions: list[dict[str, Any]] = Field(
        default_factory=list, sa_column=Column(JSON, nullable=False)
    )
    status: str = Field(default="running", max_length=16)
    status_reason: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    finished_at: datetime | None = None


class EvalItem(SQLModel, table=True):
    """One question answered under one condition of an eval run."""

    __tablename__ = "eval_item"
    __table_args__ = (UniqueConstraint("run_id", "item_index", "condition", name="uq_eval_item"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(foreign_key="eval_run.id", index=True, max_length=32)
    item_index: int
    condition: str = Field(max_length=32)
    question: str
    expected: str
    answer: str | None = Field(default=None, description="The parsed answer; None: unparsable.")
    reply: str = Field(default="", description="The text the answer was read from.")
    correct: bool = False
    unparsable: bool = False
    debate_id: str | None = Field(default=None, max_length=32)
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: str | None = Field(
        default=None, max_length=32, description="Exact decimal text; None: a model unpriced."
    )
    seconds: float = 0.0
    created_at: datetime = Field(default_factory=utcnow)
