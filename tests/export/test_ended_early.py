"""A turn that ended early carries its note into the transcript and into ``argue show``."""

from __future__ import annotations

from app.cli.browse import render_debate
from app.export import transcript_markdown
from app.models import Debate, Turn
from app.spec import DebateSpec
from app.store import spec_to_json
from tests.export.samples import debate, turn


def opening(text: str, *, ended_early: str | None, output_tokens: int = 2048) -> Turn:
    cut = turn(1, "claude", "Claude", "opening", 1, text)
    cut.ended_early = ended_early
    cut.output_tokens = output_tokens
    return cut


def test_the_transcript_says_a_turn_was_cut_at_the_output_limit() -> None:
    cut = opening("Postgres, because the planner", ended_early="output_limit")

    transcript = transcript_markdown(debate(), [cut])

    assert "Postgres, because the planner\n\n_(Cut at the output limit (2,048 tokens).)_" in (
        transcript
    )


def test_the_transcript_says_a_turn_was_stopped_for_repeating_itself() -> None:
    looped = opening("SQLite is enough. SQLite is enough.", ended_early="repetition")

    transcript = transcript_markdown(debate(), [looped])

    assert "_(Stopped early: the model was repeating itself.)_" in transcript


def shown_debate() -> Debate:
    return debate(spec_json=spec_to_json(DebateSpec(topic="Should we use Postgres or SQLite")))


def test_argue_show_prints_the_note_under_a_turn_that_ended_early() -> None:
    cut = opening("Postgres, because the planner", ended_early="output_limit")
    whole = opening("SQLite is enough.", ended_early=None)

    shown = render_debate(shown_debate(), [cut])
    plain = render_debate(shown_debate(), [whole])

    lines = shown.splitlines()
    at = lines.index("Postgres, because the planner")
    assert lines[at + 1] == "  [Cut at the output limit (2,048 tokens).]"
    assert "output limit" not in plain and "repeating" not in plain
