"""The terminal view: hub events in, readable text out, with parallel turns never
interleaved."""

from __future__ import annotations

import io
from typing import Any

from app.cli.terminal import TerminalView, retry_line, verdict_lines


def _info(key: str, label: str, phase: str = "opening", round: int = 1) -> dict[str, Any]:
    return {
        "key": key,
        "role": label.lower(),
        "label": label,
        "provider": "openai",
        "model": "gpt-test",
        "phase": phase,
        "round": round,
    }


def _completed(info: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        **info,
        "input_tokens": 100,
        "output_tokens": 7,
        "latency_ms": 1500,
        "verdict": None,
        **extra,
    }


def _play(view: TerminalView, events: list[tuple[str, dict[str, Any]]]) -> None:
    for type, data in events:
        view.handle(type, data)


def test_parallel_turns_print_each_whole_text_when_it_completes() -> None:
    out = io.StringIO()
    view = TerminalView(out, live=False)
    claude, gemini = _info("r1.opening.claude", "Claude"), _info("r1.opening.gemini", "Gemini")

    _play(
        view,
        [
            ("batch", {"keys": [claude["key"], gemini["key"]], "size": 2}),
            ("turn_started", claude),
            ("turn_started", gemini),
            ("delta", {"key": claude["key"], "text": "Claude says "}),
            ("delta", {"key": gemini["key"], "text": "Gemini says "}),
            ("delta", {"key": claude["key"], "text": "yes."}),
            ("delta", {"key": gemini["key"], "text": "no."}),
            ("turn_completed", _completed(gemini)),
            ("turn_completed", _completed(claude)),
        ],
    )

    text = out.getvalue()
    assert "── Gemini · openai:gpt-test · opening · round 1 ──\nGemini says no.\n" in text
    assert "── Claude · openai:gpt-test · opening · round 1 ──\nClaude says yes.\n" in text
    assert text.index("Gemini says no.") < text.index("Claude says yes.")
    assert "openings: Claude 4 tok … · Gemini 7 tok ✓\n" in text
    assert text.rstrip().endswith("openings: Claude 7 tok ✓ · Gemini 7 tok ✓")
    assert "[100 in / 7 out tokens · 1.5s]" in text


def test_a_live_progress_line_is_redrawn_in_place_and_cleared() -> None:
    out = io.StringIO()
    view = TerminalView(out, live=True)
    claude, gemini = _info("a", "Claude"), _info("b", "Gemini")

    _play(
        view,
        [
            ("batch", {"keys": ["a", "b"], "size": 2}),
            ("turn_started", claude),
            ("turn_started", gemini),
            ("delta", {"key": "a", "text": "one two three four"}),
        ],
    )

    assert out.getvalue().endswith("\r\x1b[2Kopenings: Claude 5 tok … · Gemini 0 tok …")
    view.handle("turn_completed", _completed(claude))
    assert "\r\x1b[2K\n── Claude" in out.getvalue()


def test_a_single_turn_streams_inline_then_shows_tokens_and_verdict() -> None:
    out = io.StringIO()
    view = TerminalView(out, live=False)
    check = _info("r2.convergence.claude", "Claude", phase="convergence", round=2)
    verdict = {"converged": False, "reason": "Gemini's cost point stands.", "parsed": True}

    _play(
        view,
        [
            ("turn_started", check),
            ("delta", {"key": check["key"], "text": "CONVERGED: no"}),
            ("delta", {"key": check["key"], "text": "\nREASON: Gemini's cost point stands."}),
            ("turn_completed", _completed(check, verdict=verdict)),
            ("end", {"status": "completed", "reason": None}),
        ],
    )

    assert out.getvalue() == (
        "\n── Claude · openai:gpt-test · convergence · round 2 ──\n"
        "CONVERGED: no\nREASON: Gemini's cost point stands.\n"
        "  [100 in / 7 out tokens · 1.5s]\n"
        "  verdict: not converged — Gemini's cost point stands.\n"
    )
    assert view.end == {"status": "completed", "reason": None}


def test_a_retry_voids_the_streamed_text_and_says_why() -> None:
    out = io.StringIO()
    view = TerminalView(out, live=False)
    turn = _info("r2.rebuttal.claude", "Claude", phase="rebuttal", round=2)
    retry = {
        "key": turn["key"],
        "attempt": 2,
        "delay": 2.0,
        "error_kind": "rate_limit",
        "error_status": 429,
        "error_message": "Rate limit exceeded",
    }

    _play(view, [("turn_started", turn), ("delta", {"key": turn["key"], "text": "Half"})])
    view.handle("retrying", retry)

    assert out.getvalue().endswith(
        "Half\n  ↻ retrying after 429: Rate limit exceeded in 2.0s (attempt 2)"
        " — the text above is void\n"
    )


def test_a_failed_turn_in_a_batch_shows_its_error() -> None:
    out = io.StringIO()
    view = TerminalView(out, live=False)
    claude, gemini = _info("a", "Claude"), _info("b", "Gemini")
    failure = {**gemini, "error_kind": "server", "error_status": 500, "error_message": "boom"}

    _play(
        view,
        [
            ("batch", {"keys": ["a", "b"], "size": 2}),
            ("turn_started", claude),
            ("turn_started", gemini),
            ("turn_failed", failure),
        ],
    )

    assert "  ✗ Gemini failed (server 500): boom\n" in out.getvalue()
    assert "openings: Claude 0 tok … · Gemini 0 tok ✗" in out.getvalue()


def test_retry_line_falls_back_to_the_error_kind() -> None:
    data = {"attempt": 3, "delay": 0.5, "error_kind": "overloaded", "error_message": "busy"}

    assert retry_line(data) == "retrying after an overload: busy in 0.5s (attempt 3)"


def test_judgement_verdicts_show_grades_and_scores() -> None:
    verdict = {
        "criteria": [
            {"name": "Originality", "pro_grade": "A", "pro_reason": "", "con_grade": "B"},
        ],
        "overall": {"pro_grade": "A", "pro_score": 8.5, "con_grade": "B", "con_score": 7},
        "synthesis": "…",
        "parsed": True,
    }

    assert verdict_lines(verdict) == [
        "scores: Pro A (8.5/10) · Con B (7/10)",
        "  Originality: Pro A · Con B",
    ]
