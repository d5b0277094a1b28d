"""Why a completed turn ended before its model finished on its own, as the turn stores it,
and the short note that says so wherever the turn is shown (page, API, CLI, transcript)."""

from __future__ import annotations

from typing import Literal

EndedEarly = Literal["output_limit", "repetition"]
OUTPUT_LIMIT: EndedEarly = "output_limit"
REPETITION: EndedEarly = "repetition"


def ended_early_note(ended_early: str | None, *, output_tokens: int) -> str | None:
    """The sentence for a turn that ended early, or None for one that ended on its own."""
    if ended_early == OUTPUT_LIMIT:
        return f"Cut at the output limit ({output_tokens:,} tokens)."
    if ended_early == REPETITION:
        return "Stopped early: the model was repeating itself."
    return None
