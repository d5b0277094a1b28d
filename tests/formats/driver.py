"""A tiny debate player for planner tests: ask the format for plans, fabricate replies, repeat.

It is the runner's loop without a model, a database or a clock, so a test reads as the debate
it describes: ``play(duel.FORMAT, spec, checks=["no", "yes", "yes"])``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from app.formats import Format
from app.spec import CompletedTurn, DebateSpec, Outcome, TurnPlan

Reply = Callable[[TurnPlan], str]

# A debate that plans more batches than this is looping.
MAX_BATCHES = 100


def marker(plan: TurnPlan) -> str:
    """A reply nobody else writes, so a test can tell which turns a prompt shows."""
    return f"<<text of {plan.key}>>"


def with_checks(checks: Sequence[str], otherwise: Reply = marker) -> Reply:
    """Replies that answer the n-th convergence check with ``checks[n]`` ("no" when run out)."""
    answers = iter(checks)

    def reply(plan: TurnPlan) -> str:
        if plan.phase == "convergence":
            return next(answers, "CONVERGED: no\nREASON: checks ran out")
        return otherwise(plan)

    return reply


def yes(reason: str = "we agree") -> str:
    return f"CONVERGED: yes\nREASON: {reason}"


def no(reason: str = "we still disagree") -> str:
    return f"CONVERGED: no\nREASON: {reason}"


def complete(fmt: Format, plan: TurnPlan, text: str) -> CompletedTurn:
    return CompletedTurn(
        key=plan.key,
        role=plan.role,
        phase=plan.phase,
        round=plan.round,
        text=text,
        verdict=fmt.verdict(plan, text),
    )


@dataclass(frozen=True)
class Played:
    batches: list[list[TurnPlan]]
    done: tuple[CompletedTurn, ...]
    outcome: Outcome

    @property
    def plans(self) -> list[TurnPlan]:
        return [plan for batch in self.batches for plan in batch]

    @property
    def keys(self) -> list[str]:
        return [plan.key for plan in self.plans]

    def batch_keys(self) -> list[list[str]]:
        return [[plan.key for plan in batch] for batch in self.batches]

    def plan(self, key: str) -> TurnPlan:
        return next(plan for plan in self.plans if plan.key == key)

    def text(self, key: str) -> str:
        return next(turn.text for turn in self.done if turn.key == key)

    def turn(self, key: str) -> CompletedTurn:
        return next(turn for turn in self.done if turn.key == key)


def play(
    fmt: Format,
    spec: DebateSpec,
    reply: Reply = marker,
    *,
    checks: Sequence[str] | None = None,
) -> Played:
    """Run ``spec`` to its end with fabricated replies; ``checks`` answers convergence checks."""
    if checks is not None:
        reply = with_checks(checks, reply)
    done: tuple[CompletedTurn, ...] = ()
    batches: list[list[TurnPlan]] = []
    while plans := fmt.plan(spec, done):
        batches.append(plans)
        assert len(batches) <= MAX_BATCHES, "the format never finishes"
        done += tuple(complete(fmt, plan, reply(plan)) for plan in plans)
    return Played(batches=batches, done=done, outcome=fmt.outcome(spec, done))


def all_text(plan: TurnPlan) -> str:
    """Everything a model receives for ``plan``: system text and every message."""
    return "\n".join([plan.system, *(message.content for message in plan.messages)])


def roles(plan: TurnPlan) -> list[str]:
    return [message.role for message in plan.messages]


def alternates_from_user(plan: TurnPlan) -> bool:
    expected = ["user" if index % 2 == 0 else "assistant" for index in range(len(plan.messages))]
    return roles(plan) == expected and roles(plan)[-1] == "user"
