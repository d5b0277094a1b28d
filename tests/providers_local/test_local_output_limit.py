"""The embedded model says when its reply reached the output cap."""

from __future__ import annotations

import pytest

from app.config import Settings
from app.providers.base import Finished, Message
from app.providers.local import LocalProvider


@pytest.mark.local_model
async def test_smollm2_cut_at_max_tokens_finishes_marked_as_hitting_the_output_limit(
    settings: Settings,
) -> None:
    stream = LocalProvider(settings).stream(
        model="ignored",
        system="",
        messages=[Message("user", "Write a long story about a lighthouse keeper.")],
        max_tokens=5,
    )
    finished = [event async for event in stream][-1]

    assert isinstance(finished, Finished)
    assert finished.stop_reason == "length"
    assert finished.hit_output_limit
    assert finished.usage.output_tokens <= 5
