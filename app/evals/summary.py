"""A run's result per condition: accuracy with its Wilson interval, the unparsable count,
tokens, cost and wall time per item, in the order the run named its conditions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from app.evals.stats import Interval, wilson
from app.models import EvalItem
from app.pricing import money


@dataclass(frozen=True)
class ConditionSummary:
    condition: str
    items: int
    correct: int
    unparsable: int
    input_tokens: int
    output_tokens: int
    calls: int
    cost: Decimal | None
    seconds: float

    @property
    def accuracy(self) -> float:
        return self.correct / self.items if self.items else 0.0

    @property
    def interval(self) -> Interval:
        return wilson(self.correct, self.items)

    @property
    def seconds_per_item(self) -> float:
        return self.seconds / self.items if self.items else 0.0

    @property
    def cost_text(self) -> str:
        return money(self.cost)

    def to_json(self) -> dict[str, Any]:
        return {
            "condition": self.condition,
            "items": self.items,
            "correct": self.correct,
            "accuracy": self.accuracy,
            "interval_95": [self.interval.low, self.interval.high],
            "unparsable": self.unparsable,
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            # US dollars at list prices; None: a model used has no price.
            "cost_usd": None if self.cost is None else float(self.cost),
            "seconds_per_item": self.seconds_per_item,
        }


def summarize(conditions: Sequence[str], items: Sequence[EvalItem]) -> list[ConditionSummary]:
    return [_summary(name, [i for i in items if i.condition == name]) for name in conditions]


def _summary(condition: str, items: Sequence[EvalItem]) -> ConditionSummary:
    costs = [item.cost_usd for item in items]
    cost = None if None in costs else sum((Decimal(str(c)) for c in costs), Decimal(0))
    return ConditionSummary(
        condition=condition,
        items=len(items),
        correct=sum(item.correct for item in items),
        unparsable=sum(item.unparsable for item in items),
        input_tokens=sum(item.input_tokens for item in items),
        output_tokens=sum(item.output_tokens for item in items),
        calls=sum(item.calls for item in items),
        cost=cost,
        seconds=sum(item.seconds for item in items),
    )


HEADERS = (
    "condition",
    "accuracy",
    "95% interval",
    "items",
    "unparsable",
    "tokens",
    "cost",
    "s/item",
)


def table(summaries: Sequence[ConditionSummary]) -> str:
    """The summaries as a plain-text table, one row per condition."""
    rows = [HEADERS] + [
        (
            s.condition,
            f"{s.accuracy:.1%}",
            f"{s.interval.low:.1%} – {s.interval.high:.1%}",
            str(s.items),
            str(s.unparsable),
            f"{s.input_tokens + s.output_tokens:,}",
            s.cost_text,
            f"{s.seconds_per_item:.1f}",
        )
        for s in summaries
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADERS))]
    lines = []
    for number, row in enumerate(rows):
        cells = [
            cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row)
        ]
        lines.append("  ".join(cells).rstrip())
        if number == 0:
            lines.append("  ".join("-" * width for width in widths))
    return "\n".join(lines)
