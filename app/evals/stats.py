"""Intervals and votes: the Wilson score interval of an accuracy, and a plurality vote.

The Wilson interval (95 %, z = 1.959964) stays inside [0, 1] and is honest at 0 or all
correct, where the normal approximation collapses to a point.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

Z_95 = 1.959963984540054


@dataclass(frozen=True)
class Interval:
    low: float
    high: float


def wilson(successes: int, trials: int, z: float = Z_95) -> Interval:
    """The Wilson score interval of ``successes`` out of ``trials`` (all of [0, 1] at 0)."""
    if trials <= 0:
        return Interval(0.0, 1.0)
    if not 0 <= successes <= trials:
        raise ValueError(f"{successes} successes out of {trials} trials")
    p = successes / trials
    z2 = z * z
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    spread = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / (1 + z2 / trials)
    # At 0 or all correct the bound is exactly 0 or 1; float rounding would miss it.
    low = 0.0 if successes == 0 else centre - spread
    high = 1.0 if successes == trials else centre + spread
    return Interval(low, high)


def vote(answers: Sequence[str | None]) -> str | None:
    """The answer given most often (None answers do not vote); a tie goes to the answer of
    the tie that was given first. None when no answer was given at all."""
    given = [answer for answer in answers if answer is not None]
    if not given:
        return None
    counts = Counter(given)
    top = max(counts.values())
    return next(answer for answer in given if counts[answer] == top)
