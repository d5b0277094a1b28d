"""The loop of an eval run: each question under each condition not yet done, in order,
each answer saved as soon as it is known, so a run stopped anywhere resumes where it was.

For each question the debate conditions go first: the majority vote's k is the number of
model calls the question's first debate used (``app.evals.conditions``). Debates are made
like any other (saved spec, the runner's loop), so their turns and synthesis stay browsable.

A provider error or a debate that does not complete stops the run (``failed``, with the
reason); a cancel (Ctrl-C) stops it as ``interrupted``, marking the debate in flight
cancelled. Either way, ``argue eval --resume RUN_ID`` continues with the items not done.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import cast

from sqlalchemy.engine import Engine

from app import spending
from app import store as debate_store
from app.config import Settings
from app.db import session_scope
from app.evals import answers
from app.evals import store as eval_store
from app.evals.conditions import Condition, get_condition
from app.evals.stats import vote
from app.evals.tasks import Question
from app.events import EventHub
from app.models import EvalItem
from app.pricing import ModelUse, PriceTable, total
from app.providers.base import Finished, Provider, ProviderError, Retrying, TextDelta, Usage
from app.providers.registry import default_model
from app.providers.resilience import stream_with_retries
from app.runner import Runner
from app.spec import DebateSpec, Seat
from app.status import DebateStatus

SOLVER_SYSTEM = (
    "You are a careful problem solver. Work the question out step by step, then give the "
    "answer in the form asked."
)


class RunStopped(Exception):
    """The run cannot go on (a provider failed, a debate did not complete)."""


@dataclass(frozen=True)
class Answered:
    answer: str | None
    reply: str
    calls: int
    input_tokens: int
    output_tokens: int
    cost: Decimal | None
    debate_id: str | None = None


ItemDone = Callable[[EvalItem, int], None]


@dataclass
class Harness:
    engine: Engine
    settings: Settings
    providers: Mapping[str, Provider]
    prices: PriceTable

    def __post_init__(self) -> None:
        self._hub = EventHub()

    async def run(self, run_id: str, *, on_item: ItemDone | None = None) -> str:
        """Run every item not yet done; the run's final status."""
        with session_scope(self.engine) as session:
            run = eval_store.get_run(session, run_id=run_id)
            if run is None:
                raise LookupError(f"no eval run {run_id}")
            questions = eval_store.run_questions(run)
            seats = eval_store.run_seats(run)
            conditions = [get_condition(name) for name in run.conditions]
            rounds, samples = run.rounds, run.samples
            done = {
                (item.item_index, item.condition): item.calls
                for item in eval_store.items_of(session, run_id=run_id)
            }
            eval_store.set_run_status(session, run_id=run_id, status="running")
        ordered = sorted(conditions, key=lambda c: not c.is_debate)
        first_debate = next((c.name for c in conditions if c.is_debate), None)
        try:
            for index, question in enumerate(questions):
                for condition in ordered:
                    if (index, condition.name) in done:
                        continue
                    k = done.get((index, first_debate), samples) if first_debate else samples
                    item = await self._item(
                        run_id, index, question, condition, seats[condition.name], rounds, k
                    )
                    done[(index, condition.name)] = item.calls
                    if on_item is not None:
                        on_item(item, len(questions))
        except RunStopped as stopped:
            self._set_status(run_id, "failed", str(stopped))
            return "failed"
        except (asyncio.CancelledError, KeyboardInterrupt):
            self._set_status(run_id, "interrupted", "interrupted")
            raise
        self._set_status(run_id, "completed", None)
        return "completed"

    def _set_status(self, run_id: str, status: str, reason: str | None) -> None:
        with session_scope(self.engine) as session:
            eval_store.set_run_status(session, run_id=run_id, status=status, reason=reason)

    async def _item(
        self,
        run_id: str,
        index: int,
        question: Question,
        condition: Condition,
        seats: Sequence[Seat],
        rounds: int,
        k: int,
    ) -> EvalItem:
        clock = time.monotonic()
        if condition.is_debate:
            answered = await self._debate(question, condition, seats, rounds)
        else:
            answered = await self._direct(question, seats[0], k if condition.votes else 1)
        seconds = time.monotonic() - clock
        with session_scope(self.engine) as session:
            item = eval_store.record_item(
                session,
                run_id=run_id,
                item_index=index,
                condition=condition.name,
                question=question,
                answer=answered.answer,
                reply=answered.reply,
                correct=answers.is_correct(question, answered.answer),
                debate_id=answered.debate_id,
                calls=answered.calls,
                input_tokens=answered.input_tokens,
                output_tokens=answered.output_tokens,
                cost=answered.cost,
                seconds=seconds,
            )
            session.expunge(item)
        return item

    # -- one model, once or k times ------------------------------------------------------

    async def _direct(self, question: Question, seat: Seat, samples: int) -> Answered:
        model = seat.model or default_model(seat.provider, self.settings)
        prompt = answers.ask(question)
        replies = await asyncio.gather(
            *(self._call(seat.provider, model, prompt) for _ in range(max(1, samples)))
        )
        parsed = [answers.parse(text) for text, _ in replies]
        given = [None if p is None else answers.comparable(question, p) for p in parsed]
        chosen = vote(given)
        uses = [ModelUse(seat.provider, model, u.input_tokens, u.output_tokens) for _, u in replies]
        reply = replies[0][0] if len(replies) == 1 else _ballot(parsed)
        return Answered(
            answer=parsed[0] if len(replies) == 1 else chosen,
            reply=reply,
            calls=len(replies),
            input_tokens=sum(use.input_tokens for use in uses),
            output_tokens=sum(use.output_tokens for use in uses),
            cost=total(self.prices, uses).amount,
        )

    async def _call(self, provider_name: str, model: str, prompt: str) -> tuple[str, Usage]:
        from app.providers.base import Message

        provider = self.providers.get(provider_name)
        if provider is None:
            raise RunStopped(f"provider {provider_name!r} is not available")
        parts: list[str] = []
        usage = Usage(0, 0, estimated=True)
        try:
            async for event in stream_with_retries(
                provider,
                model=model,
                system=SOLVER_SYSTEM,
                messages=[Message("user", prompt)],
                max_tokens=self.settings.max_output_tokens,
                settings=self.settings,
            ):
                if isinstance(event, TextDelta):
                    parts.append(event.text)
                elif isinstance(event, Retrying):
                    parts.clear()
                elif isinstance(event, Finished):
                    usage = event.usage
        except ProviderError as error:
            raise RunStopped(f"{provider_name} failed: {error}") from error
        return "".join(parts), usage

    # -- a debate --------------------------------------------------------------------------

    async def _debate(
        self, question: Question, condition: Condition, seats: Sequence[Seat], rounds: int
    ) -> Answered:
        spec = DebateSpec(
            topic=answers.ask(question),
            format=cast(str, condition.format),
            rounds=rounds,
            seats=tuple(seats),
        )
        with session_scope(self.engine) as session:
            debate = debate_store.create_debate(
                session, spec=spec, token_budget=self.settings.debate_token_budget
            )
            debate_id = debate.id
        runner = Runner(
            engine=self.engine, hub=self._hub, providers=self.providers, settings=self.settings
        )
        try:
            result = await runner.run(debate_id)
        except (asyncio.CancelledError, KeyboardInterrupt):
            self._cancel_debate(debate_id)
            raise
        if result.status != DebateStatus.COMPLETED:
            raise RunStopped(f"debate {debate_id} {result.status}: {result.reason}")
        with session_scope(self.engine) as session:
            saved = debate_store.get_debate(session, debate_id=debate_id)
            assert saved is not None
            calls = len(debate_store.completed_turns(session, debate_id=debate_id))
            spent = spending.debate_total(session, prices=self.prices, debate_id=debate_id)
            synthesis = saved.synthesis or ""
            return Answered(
                answer=answers.parse(synthesis),
                reply=synthesis,
                calls=calls,
                input_tokens=saved.input_tokens,
                output_tokens=saved.output_tokens,
                cost=spent.amount,
                debate_id=debate_id,
            )

    def _cancel_debate(self, debate_id: str) -> None:
        """A debate left ``running`` would be resumed by the next web app start."""
        with session_scope(self.engine) as session:
            status = debate_store.debate_status(session, debate_id=debate_id)
            if status is not None and status.is_active:
                debate_store.set_status(
                    session,
                    debate_id=debate_id,
                    status=DebateStatus.CANCELLED,
                    reason="eval interrupted",
                )


def _ballot(parsed: Sequence[str | None]) -> str:
    """The votes, one line each, as the reply a majority item shows."""
    return "\n".join(
        f"Sample {number}: {'(unparsable)' if answer is None else answer}"
        for number, answer in enumerate(parsed, start=1)
    )
