"""The geometry of the accuracy chart: one bar per condition, its 95 % interval as a line
with end caps, on a 0-100 % scale. Pure numbers; the page draws them as SVG (no script)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.evals.summary import ConditionSummary

WIDTH = 560
HEIGHT = 260
TOP, BOTTOM, LEFT, RIGHT = 16, 36, 44, 12
BAR_SHARE = 0.5
CAP = 8


@dataclass(frozen=True)
class Bar:
    label: str
    x: float
    y: float
    width: float
    height: float
    centre: float
    low_y: float
    high_y: float
    text: str


@dataclass(frozen=True)
class Tick:
    y: float
    label: str


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    left: int
    right_edge: int
    baseline: float
    cap: int
    bars: tuple[Bar, ...]
    ticks: tuple[Tick, ...]


def _y(fraction: float) -> float:
    plot = HEIGHT - TOP - BOTTOM
    return round(TOP + plot * (1 - fraction), 2)


def accuracy_chart(summaries: Sequence[ConditionSummary]) -> Chart:
    slot = (WIDTH - LEFT - RIGHT) / max(1, len(summaries))
    bars = []
    for number, summary in enumerate(summaries):
        width = slot * BAR_SHARE
        x = LEFT + slot * number + (slot - width) / 2
        top = _y(summary.accuracy)
        bars.append(
            Bar(
                label=summary.condition,
                x=round(x, 2),
                y=top,
                width=round(width, 2),
                height=round(_y(0) - top, 2),
                centre=round(x + width / 2, 2),
                low_y=_y(summary.interval.low),
                high_y=_y(summary.interval.high),
                text=(
                    f"{summary.condition}: {summary.accuracy:.1%} of {summary.items} "
                    f"(95% interval {summary.interval.low:.1%} to {summary.interval.high:.1%})"
                ),
            )
        )
    ticks = tuple(Tick(y=_y(step / 4), label=f"{step * 25}%") for step in range(5))
    return Chart(
        width=WIDTH,
        height=HEIGHT,
        left=LEFT,
        right_edge=WIDTH - RIGHT,
        baseline=_y(0),
        cap=CAP,
        bars=tuple(bars),
        ticks=ticks,
    )
