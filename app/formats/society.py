"""The society of minds: N agents answer, then revise their answers over R rounds of debate.

Turns, by key (``r<round>.<phase>.<role>``); a line is one batch, run in parallel:

    r1.answer.agent_{1..N}    each agent answers the question alone: it sees only the
                              question, never another agent's answer
    r<k>.update.agent_{1..N}  for k = 2 .. R + 1: each agent sees every agent's answer of
                              round k - 1 (its own marked as its own) and gives an updated
                              answer

N is the number of seats (``agent_1`` .. ``agent_N``; default three, any providers); R is
``spec.rounds``, the further rounds after the first answers (2 when the request names none,
as Du et al. ran it). Every answer ends with a
closing line ``Answer: …`` — the short final answer.

The final answer is the majority of the last round's parsed answers, compared after
normalising (spaces trimmed, case folded, thousands commas and a trailing ``.0`` dropped —
the evaluation harness's reader, ``app.evals.answers``). A tie goes to the answer of the
earliest agent among the tied. When every agent gives a different answer there is no
majority: the earliest agent's answer is reported, and the synthesis says no majority
exists. An answer without a readable ``Answer:`` line counts for nobody.

The outcome's ``rounds_run`` is the last round with answers; ``converged`` is whether all
agents agree in it; the synthesis states the final answer and the agreement
("3 of 3 agents agree"), and closes on the line ``Answer: <final answer>``.
``spec.seed``, ``spec.context`` and the judge controls do not apply.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date as Date
from typing import TYPE_CHECKING, Any

from app.evals.answers import normalise, parse
from app.formats import Format, Heading, Layout, Phase
from app.formats.markdown import quoted, reading_order, turn_message
from app.spec import CompletedTurn, DebateSpec, Message, Outcome, Seat, TurnPlan

if TYPE_CHECKING:
    from app.models import Debate, Turn

__all__ = ["DEFAULT_AGENTS", "DEFAULT_ROUNDS", "FORMAT", "Consensus", "Society", "agent_role"]

DEFAULT_AGENTS = 3
# The finals list agents in their order up to this many; any more, in the order they answered.
_MOST_AGENTS = 32
DEFAULT_ROUNDS = 2
_PROVIDERS = ("anthropic", "openai", "gemini")
ANSWER_PHASE = "answer"
UPDATE_PHASE = "update"

_CLOSING = (
    'End your reply with a final line of the form "Answer: X", where X is only your short '
    "final answer (no other words on that line)."
)
_SYSTEM = (
    "You are one of several agents answering the same question. Reason carefully and "
    "answer for yourself. " + _CLOSING
)


def agent_role(number: int) -> str:
    return f"agent_{number}"


def default_seats(agents: int = DEFAULT_AGENTS) -> tuple[Seat, ...]:
    return tuple(
        Seat(
            role=agent_role(number),
            label=f"Agent {number}",
            provider=_PROVIDERS[(number - 1) % len(_PROVIDERS)],
        )
        for number in range(1, agents + 1)
    )


def _roles(spec: DebateSpec) -> tuple[str, ...]:
    roles = tuple(seat.role for seat in spec.seats if seat.role.startswith("agent_"))
    return roles or tuple(seat.role for seat in default_seats())


def _label(spec: DebateSpec, role: str) -> str:
    try:
        return spec.seat(role).label or role
    except KeyError:
        return f"Agent {role.removeprefix('agent_')}"


def _key(round_number: int, role: str) -> str:
    phase = ANSWER_PHASE if round_number == 1 else UPDATE_PHASE
    return f"r{round_number}.{phase}.{role}"


def _answer_plan(spec: DebateSpec, role: str) -> TurnPlan:
    request = f"Question: {spec.topic}\n\n{_CLOSING}"
    return TurnPlan(
        key=_key(1, role),
        role=role,
        phase=ANSWER_PHASE,
        round=1,
        system=_SYSTEM,
        messages=(Message(role="user", content=request),),
    )


def _update_plan(
    spec: DebateSpec, round_number: int, role: str, previous: dict[str, CompletedTurn]
) -> TurnPlan:
    others = "\n\n".join(
        f"--- {_label(spec, other)}'s answer ---\n{turn.text.strip()}"
        for other, turn in previous.items()
        if other != role
    )
    own = previous[role].text.strip()
    request = (
        f"Question: {spec.topic}\n\n"
        f"Your previous answer:\n{own}\n\n"
        f"The other agents' answers:\n\n{others}\n\n"
        "Using their reasoning as additional advice, examine your answer and theirs, and "
        f"give an updated answer. {_CLOSING}"
    )
    return TurnPlan(
        key=_key(round_number, role),
        role=role,
        phase=UPDATE_PHASE,
        round=round_number,
        system=_SYSTEM,
        messages=(Message(role="user", content=request),),
    )


def _last_round(spec: DebateSpec) -> int:
    return max(1, spec.rounds) + 1


@dataclass(frozen=True)
class Consensus:
    """The majority reading of one round: ``answer`` None when no agent gave one."""

    answer: str | None
    agree: int
    agents: int
    majority: bool

    def agreement(self) -> str:
        return f"{self.agree} of {self.agents} agents agree"


def consensus(answers: list[str | None]) -> Consensus:
    """Majority of ``answers`` (in agent order); ties go to the earliest agent's answer."""
    readable = [(normalise(answer), answer) for answer in answers if answer is not None]
    if not readable:
        return Consensus(answer=None, agree=0, agents=len(answers), majority=False)
    counts = Counter(norm for norm, _ in readable)
    top = max(counts.values())
    for norm, answer in readable:
        if counts[norm] == top:
            return Consensus(answer=answer, agree=top, agents=len(answers), majority=top > 1)
    raise AssertionError("unreachable")


def last_round_consensus(spec: DebateSpec, done: tuple[CompletedTurn, ...]) -> Consensus:
    rounds = [turn.round for turn in done if turn.phase in (ANSWER_PHASE, UPDATE_PHASE)]
    if not rounds:
        return Consensus(answer=None, agree=0, agents=len(_roles(spec)), majority=False)
    last = max(rounds)
    phases = (ANSWER_PHASE, UPDATE_PHASE)
    by_role = {t.role: t for t in done if t.round == last and t.phase in phases}
    return consensus([parse(by_role[r].text) if r in by_role else None for r in _roles(spec)])


def synthesis_text(result: Consensus) -> str:
    if result.answer is None:
        return f"No agent gave a readable final answer (0 of {result.agents} agents agree)."
    if not result.majority and result.agents > 1:
        stated = (
            f"No majority: all {result.agents} agents give different answers. "
            f"The first agent's answer is {result.answer}."
        )
    else:
        stated = f"Final answer: {result.answer} ({result.agreement()})."
    # The closing line is the one every answer ends with, so a reader of answers (the
    # evaluation harness) reads the majority's answer alone.
    return f"{stated}\n\nAnswer: {result.answer}"


class Society(Format):
    """N agents answer independently, then revise over R rounds; the majority decides."""

    name = "society"
    title = "Society"
    description = "three agents answer, then update over the rounds; the majority answers"
    # Its phases repeat round after round, so its groups name their round.
    layout = Layout(
        phases=(
            Phase(ANSWER_PHASE, "Answers", message=True, numbered=True),
            Phase(UPDATE_PHASE, "Updates", message=True, numbered=True),
        )
    )
    topic_prompt = "What question should the agents answer? "
    eval_summary = "N agents over R rounds, majority of the last"
    workspace = None
    rounds_meaning = "update rounds"
    default_rounds = 2
    judging = ()  # the agents are peers and a vote decides: nobody judges anybody

    def default_seats(self) -> tuple[Seat, ...]:
        return default_seats()

    def plan(self, spec: DebateSpec, done: tuple[CompletedTurn, ...]) -> list[TurnPlan]:
        by_key = {turn.key: turn for turn in done}
        roles = _roles(spec)
        previous: dict[str, CompletedTurn] = {}
        for round_number in range(1, _last_round(spec) + 1):
            missing: list[TurnPlan] = []
            current: dict[str, CompletedTurn] = {}
            for role in roles:
                turn = by_key.get(_key(round_number, role))
                if turn is not None:
                    current[role] = turn
                elif round_number == 1:
                    missing.append(_answer_plan(spec, role))
                else:
                    missing.append(_update_plan(spec, round_number, role, previous))
            if missing:
                return missing
            previous = current
        return []

    def verdict(self, plan: TurnPlan, text: str) -> dict[str, Any] | None:
        if plan.phase in (ANSWER_PHASE, UPDATE_PHASE):
            return {"answer": parse(text)}
        return None

    def outcome(self, spec: DebateSpec, done: tuple[CompletedTurn, ...]) -> Outcome:
        rounds_run = max(
            (t.round for t in done if t.phase in (ANSWER_PHASE, UPDATE_PHASE)), default=0
        )
        result = last_round_consensus(spec, done)
        converged = result.answer is not None and result.agree == result.agents
        return Outcome(rounds_run=rounds_run, converged=converged, synthesis=synthesis_text(result))

    def round_limit(self, rounds: int) -> int | None:
        return None

    def notes(self, spec: DebateSpec) -> tuple[str, ...]:
        return ()

    def outcome_heading(self, *, converged: bool | None, rounds_run: int) -> Heading:
        return Heading("The agents' final answer")

    def report_heading(self, *, completed: bool, converged: bool | None, rounds_run: int) -> str:
        return "The agents' final answer"

    def convergence_note(self, converged: bool | None) -> str | None:
        return None

    def cli_rounds(self, rounds_run: int | None, rounds: int) -> str:
        # The first round answers; ``rounds`` counts the update rounds after it.
        return f"{rounds_run or '-'}/{rounds + 1}"

    def finals_markdown(self, debate: Debate, turns: Sequence[Turn], *, date: Date) -> str:
        """The question, the majority answer with its agreement (the synthesis states both),
        and each agent's answer of the last round."""
        answered = [turn for turn in turns if turn.phase in (ANSWER_PHASE, UPDATE_PHASE)]
        last = max((turn.round for turn in answered if turn.status == "completed"), default=0)
        agents = tuple(agent_role(number) for number in range(1, _MOST_AGENTS + 1))
        finals = reading_order([turn for turn in answered if turn.round == last], (), agents)
        parts = [
            f"# Argue: {debate.topic}\n"
            f"**Format**: society  **Rounds**: {debate.rounds_run or 0}\n"
            f"**Date**: {date:%Y-%m-%d}",
            f"## Question\n\n{quoted(debate.topic)}",
            f"## Final answer\n\n{(debate.synthesis or '').strip()}",
            f"## Last answers (round {last})",
            *(turn_message(turn) for turn in finals),
        ]
        return "\n\n".join(parts) + "\n"

    def hands_over_plan(self, topic_type: str) -> bool:
        return False  # its answer is a majority's short answer, not a plan


FORMAT = Society()
