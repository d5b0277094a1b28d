"""Asking a finished debate a follow-up question: what a question may be, and which debates
may be asked one.

A question is saved with its debate (``store.add_followup``) and the debate is queued again;
its format then plans the answers (``app.formats.followups``) and the runner runs them as
turns like any other, so they stream, are saved and reach the reports the same way. Only a
completed debate takes a question: a failed or cancelled one is resumed first (asking it
would silently resume it), and one that used its token or money budget would stop at once,
failed.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator
from sqlmodel import Session

from app import pricing, spending, store
from app.debates import plain_text
from app.models import Debate
from app.status import DebateStatus

__all__ = ["MAX_QUESTION_CHARS", "FollowUpRefused", "FollowUpRequest", "money_spent", "refusal"]

MAX_QUESTION_CHARS = 2000


class FollowUpRequest(BaseModel):
    """A follow-up question. Unknown fields are refused, not ignored."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(
        min_length=1,
        max_length=MAX_QUESTION_CHARS,
        description="The question. Newlines and tabs are kept; other control characters refused.",
    )

    @field_validator("question")
    @classmethod
    def _question_has_words(cls, value: str) -> str:
        value = plain_text(value, what="the question").strip()
        if not value:
            raise ValueError("the question is empty")
        return value


class FollowUpRefused(Exception):
    """The debate cannot take a question now; the message says why and what to do."""


def refusal(debate: Debate, *, spent_usd: Decimal | None = None) -> str | None:
    """Why ``debate`` cannot be asked a follow-up question now, or None when it can.
    ``spent_usd``: what it has cost so far, when it has a money budget (``money_spent``)."""
    status = DebateStatus(debate.status)
    if status.is_active:
        return f"The debate is {status}: ask your question once it has completed."
    if status != DebateStatus.COMPLETED:
        return (
            f"The debate is {status}: resume it first; only a completed debate takes "
            "follow-up questions."
        )
    used = debate.input_tokens + debate.output_tokens
    if debate.token_budget is not None and used >= debate.token_budget:
        return (
            f"The debate has used its token budget ({used:,} of {debate.token_budget:,} "
            "tokens): a follow-up would stop at once."
        )
    budget_usd = store.debate_spec(debate).budget_usd
    if budget_usd is not None and spent_usd is not None and spent_usd >= budget_usd:
        return (
            f"The debate has spent its money budget ({pricing.money(spent_usd)} of "
            f"{pricing.money(budget_usd)}): a follow-up would stop at once."
        )
    return None


def money_spent(session: Session, debate: Debate, *, data_dir: Path) -> Decimal | None:
    """What the debate has cost at list prices, when it has a money budget; else None."""
    if store.debate_spec(debate).budget_usd is None:
        return None
    prices = pricing.price_table(data_dir)
    return spending.debate_total(session, prices=prices, debate_id=debate.id).priced
