"""The duel (seed 000, "argue"): two seats argue until they converge or reach the round cap.

Turns, by key (``r<round>.<phase>.<role>``), in the order they run; a line is one batch:

    r0.seed.gemini                          only with ``spec.seed``: find_bug / plan / audit
    r1.opening.claude + r1.opening.gemini   in parallel; neither sees the other's
    rN.rebuttal.claude                      N = 2 .. rounds: Claude counters Gemini
    rN.response.gemini                      Gemini answers, seeing the whole conversation
    rN.convergence.claude                   verdict {"converged", "reason", "parsed"}
    rR.synthesis.claude                     R = rounds run
    q<n>.followup.{claude,gemini}           follow-up question n, once asked (followups.py)

The loop stops after two consecutive converged checks, or after round ``spec.rounds``; with
``rounds`` = 1 there is no loop. A check that cannot be read counts as not converged.

Transcripts. Roles must alternate and begin with ``user``, so each seat's conversation starts
with its own opening request. The Claude seat (any provider) sees its own turns as
``assistant`` and Gemini's as ``user``; the instruction of the turn closes the last message:

    user       briefing + opening request          (its opening prompt)
    assistant  Claude's opening
    user       Gemini's opening                    [+ instruction, if nothing follows]
    assistant  rebuttal 2
    user       Gemini's response 2                 [+ instruction, if nothing follows]
    …

The Gemini seat sees Claude's turns as ``user`` and its own as ``assistant`` — the seed's
"user = Claude's turns, model = Gemini's turns" — with Claude's opening, which it has not seen
yet, arriving together with the first counterargument:

    user       briefing + "Form a clear position on this topic with specific supporting arguments."
    assistant  Gemini's opening
    user       Claude's opening + Claude's counterargument (round 2)
    assistant  response 2
    user       counterargument 3
    …
    user       counterargument N                   (the turn being planned answers this)

Convergence checks are Claude's own evaluation; they enter no transcript.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date as Date
from typing import TYPE_CHECKING, Any

from app.formats import Format, Heading, Judging, Layout, Phase, prompts
from app.formats.followups import Answerer, Entry, plan_followups
from app.formats.language import Language, detect_language
from app.formats.markdown import nest_headings
from app.formats.verdicts import parse_convergence
from app.spec import CompletedTurn, DebateSpec, Message, Outcome, Seat, TurnPlan

if TYPE_CHECKING:
    from app.models import Debate, Turn

__all__ = ["CLAUDE", "FORMAT", "GEMINI", "SEED_KEY", "Duel", "normalize_synthesis", "turn_key"]

CLAUDE = "claude"
GEMINI = "gemini"
SEED_KEY = "r0.seed.gemini"
_DEFAULT_LABELS = {CLAUDE: "Claude", GEMINI: "Gemini"}
# Two converged checks in a row end the loop.
_STREAK_TO_STOP = 2


def turn_key(round_number: int, phase: str, role: str) -> str:
    return f"r{round_number}.{phase}.{role}"


@dataclass(frozen=True)
class _Setting:
    """What every prompt of one duel shares."""

    me: str  # the Claude seat's label
    other: str  # the Gemini seat's label
    language: Language
    briefing: str


@dataclass(frozen=True)
class _Openings:
    claude: str
    gemini: str


@dataclass(frozen=True)
class _Exchange:
    round: int
    rebuttal: str
    response: str


@dataclass(frozen=True)
class _Progress:
    """Where a duel stands: the next batch, and what the finished part concluded."""

    pending: tuple[TurnPlan, ...]
    rounds_run: int
    converged: bool
    synthesis: CompletedTurn | None


def _label(spec: DebateSpec, role: str) -> str:
    try:
        label = spec.seat(role).label
    except KeyError:
        label = ""
    return label or _DEFAULT_LABELS[role]


def _setting(spec: DebateSpec, seed: CompletedTurn | None) -> _Setting:
    other = _label(spec, GEMINI)
    briefing = prompts.briefing(
        topic=spec.topic,
        topic_type=spec.topic_type,
        context=spec.context,
        seed_tool=spec.seed,
        seed_text=seed.text if seed is not None else None,
        seed_author=other,
    )
    return _Setting(
        me=_label(spec, CLAUDE),
        other=other,
        language=detect_language(spec.topic),
        briefing=briefing,
    )


def _user(text: str) -> Message:
    return Message(role="user", content=text)


def _assistant(text: str) -> Message:
    return Message(role="assistant", content=prompts.said(text))


def _claude_plan(
    s: _Setting, *, round_number: int, phase: str, messages: tuple[Message, ...]
) -> TurnPlan:
    return TurnPlan(
        key=turn_key(round_number, phase, CLAUDE),
        role=CLAUDE,
        phase=phase,
        round=round_number,
        system=prompts.claude_system(me=s.me, other=s.other, language=s.language),
        messages=messages,
    )


def _claude_view(
    s: _Setting,
    openings: _Openings,
    exchanges: list[_Exchange],
    *,
    instruction: str,
) -> tuple[Message, ...]:
    """The conversation as the Claude seat sees it, ending with ``instruction``."""
    messages = [
        _user(prompts.claude_opening_request(s.briefing, other=s.other)),
        _assistant(openings.claude),
    ]
    incoming = prompts.other_opening(s.other, openings.gemini)
    for exchange in exchanges:
        messages += [_user(incoming), _assistant(exchange.rebuttal)]
        incoming = prompts.other_response(s.other, exchange.round, exchange.response)
    messages.append(_user(f"{incoming}\n\n---\n\n{instruction}"))
    return tuple(messages)


def _gemini_view(
    s: _Setting,
    openings: _Openings,
    exchanges: list[_Exchange],
    *,
    round_number: int,
    rebuttal: str,
) -> tuple[Message, ...]:
    """The conversation as the Gemini seat sees it, ending with Claude's new counterargument."""
    messages = [
        _user(prompts.gemini_opening_request(s.briefing)),
        _assistant(openings.gemini),
    ]
    # Claude's opening was written blind to Gemini's; Gemini first reads it here.
    unread = [prompts.other_opening(s.me, openings.claude)]
    for exchange in exchanges:
        unread.append(prompts.counterargument(s.me, exchange.round, exchange.rebuttal))
        messages += [_user("\n\n".join(unread)), _assistant(exchange.response)]
        unread = []
    unread.append(prompts.counterargument(s.me, round_number, rebuttal))
    messages.append(_user("\n\n".join(unread)))
    return tuple(messages)


def _seed_plan(s: _Setting, tool: str) -> TurnPlan:
    return TurnPlan(
        key=SEED_KEY,
        role=GEMINI,
        phase="seed",
        round=0,
        system=prompts.seed_system(s.language),
        messages=(_user(prompts.seed_request(s.briefing, tool)),),
    )


def _opening_plans(s: _Setting) -> dict[str, TurnPlan]:
    return {
        CLAUDE: _claude_plan(
            s,
            round_number=1,
            phase="opening",
            messages=(_user(prompts.claude_opening_request(s.briefing, other=s.other)),),
        ),
        GEMINI: TurnPlan(
            key=turn_key(1, "opening", GEMINI),
            role=GEMINI,
            phase="opening",
            round=1,
            system=prompts.gemini_system(s.language),
            messages=(_user(prompts.gemini_opening_request(s.briefing)),),
        ),
    }


def _is_converged(turn: CompletedTurn) -> bool:
    """A check's recorded verdict (or, if none was recorded, its text read now)."""
    verdict: dict[str, Any] | None = turn.verdict
    if not isinstance(verdict, dict) or "converged" not in verdict:
        verdict = parse_convergence(turn.text)
    return verdict.get("converged") is True


def _progress(spec: DebateSpec, done: tuple[CompletedTurn, ...]) -> _Progress:
    by_key = {turn.key: turn for turn in done}

    def waiting(*plans: TurnPlan, rounds_run: int) -> _Progress:
        return _Progress(pending=plans, rounds_run=rounds_run, converged=False, synthesis=None)

    seed = by_key.get(SEED_KEY) if spec.seed is not None else None
    if spec.seed is not None and seed is None:
        return waiting(_seed_plan(_setting(spec, None), spec.seed), rounds_run=0)
    s = _setting(spec, seed)

    openings = {role: by_key.get(turn_key(1, "opening", role)) for role in (CLAUDE, GEMINI)}
    claude_opening, gemini_opening = openings[CLAUDE], openings[GEMINI]
    if claude_opening is None or gemini_opening is None:
        plans = _opening_plans(s)
        missing = [plans[role] for role, turn in openings.items() if turn is None]
        return waiting(*missing, rounds_run=1)

    openings_text = _Openings(claude=claude_opening.text, gemini=gemini_opening.text)
    exchanges: list[_Exchange] = []
    streak = 0
    rounds_run = 1
    for n in range(2, spec.rounds + 1):
        if streak >= _STREAK_TO_STOP:
            break
        rounds_run = n
        rebuttal = by_key.get(turn_key(n, "rebuttal", CLAUDE))
        if rebuttal is None:
            instruction = prompts.rebuttal_instruction(round_number=n, other=s.other)
            messages = _claude_view(s, openings_text, exchanges, instruction=instruction)
            return waiting(
                _claude_plan(s, round_number=n, phase="rebuttal", messages=messages),
                rounds_run=n,
            )
        response = by_key.get(turn_key(n, "response", GEMINI))
        if response is None:
            messages = _gemini_view(
                s, openings_text, exchanges, round_number=n, rebuttal=rebuttal.text
            )
            plan = TurnPlan(
                key=turn_key(n, "response", GEMINI),
                role=GEMINI,
                phase="response",
                round=n,
                system=prompts.gemini_system(s.language),
                messages=messages,
            )
            return waiting(plan, rounds_run=n)
        exchanges.append(_Exchange(round=n, rebuttal=rebuttal.text, response=response.text))
        check = by_key.get(turn_key(n, "convergence", CLAUDE))
        if check is None:
            instruction = prompts.convergence_instruction(
                round_number=n, other=s.other, language=s.language
            )
            messages = _claude_view(s, openings_text, exchanges, instruction=instruction)
            return waiting(
                _claude_plan(s, round_number=n, phase="convergence", messages=messages),
                rounds_run=n,
            )
        streak = streak + 1 if _is_converged(check) else 0

    converged = streak >= _STREAK_TO_STOP
    synthesis = by_key.get(turn_key(rounds_run, "synthesis", CLAUDE))
    pending: tuple[TurnPlan, ...] = ()
    if synthesis is None:
        instruction = prompts.synthesis_instruction(
            converged=converged,
            rounds_run=rounds_run,
            me=s.me,
            other=s.other,
            language=s.language,
        )
        messages = _claude_view(s, openings_text, exchanges, instruction=instruction)
        pending = (_claude_plan(s, round_number=rounds_run, phase="synthesis", messages=messages),)
    return _Progress(
        pending=pending, rounds_run=rounds_run, converged=converged, synthesis=synthesis
    )


# What a follow-up answer sees of the duel: the exchange itself (the transcript's messages);
# the seed analysis and the convergence checks are not part of it.
_RECORD_PHASES = ("opening", "rebuttal", "response")


def _followup_plans(
    spec: DebateSpec, done: tuple[CompletedTurn, ...], progress: _Progress
) -> list[TurnPlan]:
    """Both seats answer each follow-up question, in parallel, as the debaters they were."""
    me, other = _label(spec, CLAUDE), _label(spec, GEMINI)
    record = [
        Entry(f"{_label(spec, turn.role)} · round {turn.round} · {turn.phase}", turn.text)
        for turn in done
        if turn.phase in _RECORD_PHASES
    ]
    conclusion = ""
    if progress.synthesis is not None:
        conclusion = normalize_synthesis(
            progress.synthesis.text, converged=progress.converged, rounds_run=progress.rounds_run
        )
    return plan_followups(
        spec,
        done,
        answerers=(
            Answerer(CLAUDE, me, prompts.followup_part_debater(other=other)),
            Answerer(GEMINI, other, prompts.followup_part_debater(other=me)),
        ),
        record=record,
        conclusion=conclusion,
        language=detect_language(spec.topic),
    )


_AGREED = re.compile(r"^[\s#>*_]*agreed\s+position[*_]*\s*[:：][*_]*[ \t]*", re.IGNORECASE)
_UNRECONCILED = re.compile(r"^[\s#>*_]*positions\s+not\s+fully\s+reconciled\b", re.IGNORECASE)


def normalize_synthesis(text: str, *, converged: bool, rounds_run: int) -> str:
    """The synthesis in FORMATS.md's shape even when the model ignored it.

    Converged: it starts ``Agreed position: ``. Not converged: it starts with the
    ``Positions not fully reconciled after N round(s). Key tension:`` line.
    """
    body = text.strip()
    if converged:
        match = _AGREED.match(body)
        rest = body[match.end() :] if match else body
        return f"{prompts.AGREED_PREFIX} {rest}".rstrip()
    if _UNRECONCILED.match(body):
        return body
    return f"{prompts.unreconciled_header(rounds_run)}\n{body}".rstrip()


def _rounds_word(count: int) -> str:
    return f"{count} round{'s' if count != 1 else ''}"


class Duel(Format):
    """Claude vs Gemini (any providers): openings, rebuttal rounds, convergence, synthesis."""

    name = "duel"
    title = "Duel"
    description = "two seats, rebuttal rounds, a synthesis"
    # Duels are read round by round; the seed comes before the rounds and the synthesis
    # closes the debate whatever round it carries. The transcript's messages are the
    # exchange itself: not the seed analysis, the private convergence checks, nor the
    # synthesis (already the finals).
    layout = Layout(
        phases=(
            Phase("seed", "Seed analysis"),
            Phase("opening", "Openings", message=True, round_heading=True),
            Phase("rebuttal", "Rebuttal", message=True, round_heading=True),
            Phase("response", "Response", message=True, round_heading=True),
            Phase("convergence", "Convergence check", round_heading=True),
            Phase("synthesis", "Synthesis", closing=True),
        )
    )
    topic_prompt = "What should Claude and Gemini debate? "
    eval_summary = "a duel; its synthesis gives the answer"
    workspace = None
    rounds_meaning = ""
    # The synthesis is written by the Claude seat, which weighs the Gemini seat's arguments
    # against its own.
    judging = (Judging(CLAUDE, "the synthesizer", (GEMINI,)),)

    def default_seats(self) -> tuple[Seat, ...]:
        return (
            Seat(role=CLAUDE, label="Claude", provider="anthropic"),
            Seat(role=GEMINI, label="Gemini", provider="gemini"),
        )

    def plan(self, spec: DebateSpec, done: tuple[CompletedTurn, ...]) -> list[TurnPlan]:
        progress = _progress(spec, done)
        if progress.pending:
            return list(progress.pending)
        return _followup_plans(spec, done, progress)

    def verdict(self, plan: TurnPlan, text: str) -> dict[str, Any] | None:
        if plan.phase == "convergence":
            return parse_convergence(text)
        return None

    def outcome(self, spec: DebateSpec, done: tuple[CompletedTurn, ...]) -> Outcome:
        progress = _progress(spec, done)
        synthesis = ""
        if progress.synthesis is not None:
            synthesis = normalize_synthesis(
                progress.synthesis.text,
                converged=progress.converged,
                rounds_run=progress.rounds_run,
            )
        return Outcome(
            rounds_run=progress.rounds_run, converged=progress.converged, synthesis=synthesis
        )

    def round_limit(self, rounds: int) -> int | None:
        return rounds

    def notes(self, spec: DebateSpec) -> tuple[str, ...]:
        return ()

    def outcome_heading(self, *, converged: bool | None, rounds_run: int) -> Heading:
        # A duel that did not converge is no result to celebrate: the heading leaves "not
        # fully reconciled" to the synthesis, which opens with it.
        lead = "Converged after" if converged else "Synthesis after"
        return Heading(f"{lead} {_rounds_word(rounds_run)}", settled=bool(converged))

    def report_heading(self, *, completed: bool, converged: bool | None, rounds_run: int) -> str:
        if not completed:
            return "Synthesis"
        reached = "converged" if converged else "not fully reconciled"
        return f"Synthesis: {reached} after {_rounds_word(rounds_run)}"

    def convergence_note(self, converged: bool | None) -> str | None:
        return "converged" if converged else "not converged"

    def cli_rounds(self, rounds_run: int | None, rounds: int) -> str:
        return f"{rounds_run}/{rounds}" if rounds_run else f"-/{rounds}"

    def finals_markdown(self, debate: Debate, turns: Sequence[Turn], *, date: Date) -> str:
        """The seed's exact block: the header and the synthesis."""
        converged = "yes" if debate.converged else "no"
        return (
            f"# Argue: {debate.topic}\n"
            f"**Type**: {debate.topic_type}  **Rounds**: {debate.rounds_run or 0}"
            f"  **Converged**: {converged}\n"
            f"**Date**: {date:%Y-%m-%d}\n"
            "\n"
            "## Synthesis\n"
            "\n"
            f"{nest_headings((debate.synthesis or '').strip(), under=2)}\n"
        )

    def hands_over_plan(self, topic_type: str) -> bool:
        return topic_type == "plan"


FORMAT = Duel()
