"""What debates and turns cost: the tokens the database holds (``app.store``) priced by the
table (``app.pricing``). Nothing is stored: a cost is worked out when it is shown, so a
corrected price corrects every debate, past ones included.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from sqlmodel import Session

from app import store
from app.models import Turn
from app.pricing import ModelUse, PriceTable, Total, money, total


def debate_totals(
    session: Session, *, prices: PriceTable, debate_ids: Sequence[str]
) -> dict[str, Total]:
    """What each debate has cost so far, by id (one query for them all)."""
    uses = store.tokens_by_model(session, debate_ids=debate_ids)
    return {debate_id: total(prices, uses.get(debate_id, ())) for debate_id in debate_ids}


def debate_total(session: Session, *, prices: PriceTable, debate_id: str) -> Total:
    return debate_totals(session, prices=prices, debate_ids=(debate_id,))[debate_id]


def turn_cost(prices: PriceTable, turn: Turn) -> Decimal | None:
    """What one saved turn cost; None when its model has no price."""
    return prices.cost(
        provider=turn.provider,
        model=turn.model,
        input_tokens=turn.input_tokens,
        output_tokens=turn.output_tokens,
    )


@dataclass(frozen=True)
class TurnCost:
    key: str
    label: str
    model: str
    phase: str
    round: int
    text: str  # "$0.0012", or "unknown" for a model with no price


@dataclass(frozen=True)
class CostSheet:
    """What the debate page's cost block shows (``templates/partials/cost.html``)."""

    spent: Total
    budget_usd: Decimal | None
    as_of: str
    turns: tuple[TurnCost, ...]
    # While the debate runs, where the block fetches itself again; None once it has ended.
    refresh_url: str | None = None
    stopped_by_budget: bool = False

    @property
    def budget_text(self) -> str | None:
        return None if self.budget_usd is None else money(self.budget_usd)


def cost_sheet(
    prices: PriceTable,
    turns: Sequence[Turn],
    budget_usd: Decimal | None,
    *,
    refresh_url: str | None = None,
    stopped_by_budget: bool = False,
) -> CostSheet:
    uses = [ModelUse(t.provider, t.model, t.input_tokens, t.output_tokens) for t in turns]
    return CostSheet(
        spent=total(prices, uses),
        budget_usd=budget_usd,
        as_of=prices.as_of,
        refresh_url=refresh_url,
        stopped_by_budget=stopped_by_budget,
        turns=tuple(
            TurnCost(
                key=turn.key,
                label=turn.label,
                model=turn.model,
                phase=turn.phase,
                round=turn.round,
                text=money(turn_cost(prices, turn)),
            )
            for turn in turns
        ),
    )
