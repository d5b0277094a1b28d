"""The runner: the only loop. It asks a format for the next turns, runs each batch
concurrently, saves each finished turn, and publishes what happened.

    while plans := fmt.plan(spec, done):
        results = await gather(run_turn(p) for p in plans)
        done += results

It receives the database engine, the event hub and the providers as arguments, so tests can
hand it fakes. Cancellation is checked between steps (the debate's status is re-read), and a
debate resumes by re-planning from its saved turns: only unfinished turns run again.
A turn that ends early is saved as completed with the reason: cut at the output limit (as
its provider reported), or stopped here because the model fell into a runaway repetition.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy.engine import Engine

from app import pricing
from app.bus import EventBus
from app.config import Settings
from app.endings import OUTPUT_LIMIT, REPETITION, EndedEarly
from app.event_types import RetryingData, StatusData, TurnStartedData
from app.formats import Format, get_format
from app.leases import Fence
from app.ledger import Ledger, TurnRecord, ledger_lane
from app.models import utcnow
from app.pacing import Spacing
from app.providers.base import (
    ErrorKind,
    Finished,
    Provider,
    ProviderError,
    Retrying,
    TextDelta,
    Usage,
    estimate_tokens,
)
from app.providers.registry import default_model
from app.providers.resilience import stream_with_retries
from app.repetition import RepetitionWatch
from app.spec import CompletedTurn, DebateSpec, Outcome, TurnPlan
from app.status import DebateStatus

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]

# Deltas are gathered into short windows: one event per window instead of one per token
# keeps the viewers' browsers and the event log cheap without a visible delay.
DELTA_WINDOW_SECONDS = 0.05


@dataclass(frozen=True)
class RunResult:
    status: DebateStatus
    reason: str | None = None


@dataclass(frozen=True)
class _SavedTurn:
    """A turn of the batch just run, and the debate's status its save found."""

    completed: CompletedTurn
    status: DebateStatus


def _status_after(batch: list[_SavedTurn]) -> DebateStatus:
    """Running only if every save of the batch found it running."""
    stopped = [turn.status for turn in batch if turn.status != DebateStatus.RUNNING]
    return stopped[0] if stopped else DebateStatus.RUNNING


class DebateStopped(Exception):
    """The debate's status changed under the runner (cancelled): stop between steps."""


class TurnFailed(Exception):
    def __init__(self, plan: TurnPlan, error: ProviderError) -> None:
        super().__init__(str(error))
        self.plan = plan
        self.error = error


@dataclass
class Runner:
    engine: Engine
    hub: EventBus
    providers: Mapping[str, Provider]
    settings: Settings
    sleep: Sleep = asyncio.sleep
    # A worker's lease on the debate (``app.workers``): every write checks it first, and a
    # lost lease (``LeaseLost``) ends the run with nothing more written. The worker also
    # cancels the run when the debate's status changes under it (a cancel from any node).
    fence: Fence | None = None

    def __post_init__(self) -> None:
        self._ledger = Ledger(self.engine, fence=self.fence)

    async def run(self, debate_id: str) -> RunResult:
        begun = await ledger_lane.run(self._ledger.start, debate_id)
        if not begun.running:
            # Cancelled while this job was on its way: the cancel stands, and says so itself.
            status = await ledger_lane.run(self._ledger.status, debate_id)
            return RunResult(status or DebateStatus.CANCELLED)
        running: StatusData = {"status": DebateStatus.RUNNING}
        if begun.started_at is not None:
            running["started_at"] = begun.started_at.isoformat()
        self.hub.publish(debate_id, "status", running)
        spec, done, budget = begun.spec, begun.done, begun.token_budget
        fmt = get_format(spec.format)
        # What the last save found (``SavedTurn.status``): a cancel made on another process
        # while a batch ran stops the run before the next, without reading it again.
        status = DebateStatus.RUNNING
        try:
            while plans := fmt.plan(spec, done):
                if status != DebateStatus.RUNNING:
                    raise DebateStopped(status)
                if (reason := await self._budget_exceeded(debate_id, budget)) is not None:
                    return await self._finish(debate_id, DebateStatus.FAILED, None, reason)
                if (reason := await self._money_spent(debate_id, spec.budget_usd)) is not None:
                    return await self._finish(debate_id, DebateStatus.FAILED, None, reason)
                batch = await self._run_batch(debate_id, spec, fmt, plans)
                done += tuple(turn.completed for turn in batch)
                status = _status_after(batch)
        except DebateStopped:
            self.hub.publish(debate_id, "end", {"status": DebateStatus.CANCELLED})
            return RunResult(DebateStatus.CANCELLED)
        except TurnFailed as failure:
            reason = f"{failure.plan.key} failed: {failure.error}"
            return await self._finish(debate_id, DebateStatus.FAILED, None, reason)
        except asyncio.CancelledError:
            self._on_cancelled(debate_id)
            raise
        return await self._complete(debate_id, fmt.outcome(spec, done))

    # -- steps --------------------------------------------------------------------------

    async def _budget_exceeded(self, debate_id: str, budget: int | None) -> str | None:
        if budget is None:
            return None
        used = await ledger_lane.run(self._ledger.tokens_used, debate_id)
        if used >= budget:
            return f"token budget reached: {used} of {budget} tokens used"
        return None

    async def _money_spent(self, debate_id: str, budget: Decimal | None) -> str | None:
        """Why the debate stops for its money budget (spent, or no longer known), or None.

        A debate with a budget starts only when every seat's model has a price; a price
        missing now (the price file changed) stops it rather than spend blind."""
        if budget is None:
            return None
        try:
            prices = pricing.price_table(self.settings.data_dir)
        except pricing.PriceFileError as error:
            return f"money budget cannot be kept: {error}"
        uses = await ledger_lane.run(self._ledger.tokens_by_model, debate_id)
        spent = pricing.total(prices, uses)
        if not spent.known:
            models = ", ".join(spent.unpriced_models)
            return f"money budget cannot be kept: no price for {models}"
        if spent.priced >= budget:
            return (
                f"{pricing.BUDGET_REACHED}: {pricing.money(spent.priced)} of "
                f"{pricing.money(budget)} spent"
            )
        return None

    async def _run_batch(
        self, debate_id: str, spec: DebateSpec, fmt: Format, plans: list[TurnPlan]
    ) -> list[_SavedTurn]:
        if len(plans) > 1:
            self.hub.publish(
                debate_id, "batch", {"keys": [plan.key for plan in plans], "size": len(plans)}
            )
        window = _DeltaWindow()
        tasks = [
            asyncio.ensure_future(self._run_turn(debate_id, spec, fmt, plan, window))
            for plan in plans
        ]
        try:
            results = await asyncio.gather(*tasks, return_exceptions=True)
        except asyncio.CancelledError:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        completed: list[_SavedTurn] = []
        failures: list[TurnFailed] = []
        for result in results:
            if isinstance(result, TurnFailed):
                failures.append(result)
            elif isinstance(result, BaseException):
                raise result
            else:
                completed.append(result)
        if failures:
            raise failures[0]
        return completed

    async def _run_turn(
        self,
        debate_id: str,
        spec: DebateSpec,
        fmt: Format,
        plan: TurnPlan,
        window: _DeltaWindow,
    ) -> _SavedTurn:
        seat = spec.seat(plan.role)
        model = seat.model or default_model(seat.provider, self.settings)
        info: TurnStartedData = {
            "key": plan.key,
            "role": plan.role,
            "label": seat.label,
            "provider": seat.provider,
            "model": model,
            "phase": plan.phase,
            "round": plan.round,
        }
        self.hub.publish(debate_id, "turn_started", info)
        started = utcnow()
        clock = time.monotonic()
        streamed = _TurnText(self.hub, debate_id, plan.key, window)
        usage = Usage(0, 0, estimated=True)
        attempts = 1
        watch = RepetitionWatch()
        ended_early: EndedEarly | None = None
        try:
            provider = self._provider(seat.provider)
            events = stream_with_retries(
                provider,
                model=model,
                system=plan.system,
                messages=plan.messages,
                max_tokens=self.settings.max_output_tokens,
                settings=self.settings,
                sleep=self.sleep,
            )
            async for event in events:
                if isinstance(event, TextDelta):
                    streamed.add(event.text)
                    if (loop := watch.feed(event.text)) is not None:
                        # A runaway loop goes on until the output cap: stop paying for it.
                        ended_early = REPETITION
                        usage = _estimated_usage(plan, generated=streamed.text)
                        streamed.cut(loop.keep)
                        break
                elif isinstance(event, Retrying):
                    attempts += 1
                    streamed.reset()
                    watch = RepetitionWatch()
                    self.hub.publish(debate_id, "retrying", _retry_info(plan.key, event))
                elif isinstance(event, Finished):
                    usage = event.usage
                    if event.hit_output_limit:
                        ended_early = OUTPUT_LIMIT
            # Closing the stream left early cancels its request (an HTTP call, a generation).
            await _close(events)
        except ProviderError as error:
            streamed.flush()
            await self._save_failed(debate_id, info, error, started, attempts, streamed.text)
            raise TurnFailed(plan, error) from error
        except BaseException:
            streamed.discard()
            raise
        streamed.flush()
        text = streamed.text
        verdict = fmt.verdict(plan, text)
        latency = time.monotonic() - clock
        record = TurnRecord(
            **info,
            status="completed",
            text=text,
            verdict=verdict,
            error_kind=None,
            error_message=None,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            usage_estimated=usage.estimated,
            attempts=attempts,
            started_at=started,
            finished_at=started + timedelta(seconds=latency),
            ended_early=ended_early,
        )
        saved = await ledger_lane.run(self._ledger.save_turn, debate_id, record)
        # Announced only now that it is committed: a viewer never sees what the database
        # does not have. The event carries the saved turn whole, so no viewer's process
        # reads it back.
        self.hub.publish(
            debate_id,
            "turn_completed",
            {
                **info,
                "turn_id": saved.turn_id,
                "text": text,
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "usage_estimated": usage.estimated,
                "latency_ms": int(latency * 1000),
                "attempts": attempts,
                "started_at": record.started_at.isoformat(),
                "finished_at": record.finished_at.isoformat(),
                "verdict": verdict,
                "ended_early": ended_early,
            },
        )
        self.hub.publish(
            debate_id,
            "usage",
            {"input_tokens": saved.input_tokens, "output_tokens": saved.output_tokens},
        )
        completed = CompletedTurn(
            key=plan.key,
            role=plan.role,
            phase=plan.phase,
            round=plan.round,
            text=text,
            verdict=verdict,
        )
        return _SavedTurn(completed, saved.status)

    def _provider(self, name: str) -> Provider:
        provider = self.providers.get(name)
        if provider is None:
            raise ProviderError(
                kind=ErrorKind.BAD_REQUEST,
                provider=name,
                message=f"provider {name!r} is not available",
                retryable=False,
            )
        return provider

    async def _save_failed(
        self,
        debate_id: str,
        info: TurnStartedData,
        error: ProviderError,
        started: datetime,
        attempts: int,
        partial_text: str,
    ) -> None:
        record = TurnRecord(
            **info,
            status="failed",
            text=partial_text,
            verdict=None,
            error_kind=error.kind.value,
            error_message=error.message,
            input_tokens=0,
            output_tokens=0,
            usage_estimated=True,
            attempts=attempts,
            started_at=started,
            finished_at=utcnow(),
        )
        saved = await ledger_lane.run(self._ledger.save_turn, debate_id, record)
        self.hub.publish(
            debate_id,
            "turn_failed",
            {
                **info,
                "turn_id": saved.turn_id,
                "error_kind": error.kind.value,
                "error_status": error.status,
                "error_message": error.message,
            },
        )

    async def _finish(
        self, debate_id: str, status: DebateStatus, outcome: Outcome | None, reason: str | None
    ) -> RunResult:
        await ledger_lane.run(
            self._ledger.finish, debate_id, status=status, outcome=outcome, reason=reason
        )
        self.hub.publish(debate_id, "end", {"status": status, "reason": reason})
        return RunResult(status, reason)

    async def _complete(self, debate_id: str, outcome: Outcome) -> RunResult:
        files_error = await ledger_lane.run(
            self._ledger.complete,
            debate_id,
            outcome=outcome,
            data_dir=self.settings.data_dir,
            now=utcnow().astimezone(),
        )
        if files_error is not None:
            log.warning("debate %s: %s", debate_id, files_error)
        self.hub.publish(
            debate_id,
            "end",
            {"status": DebateStatus.COMPLETED, "reason": None, "files_error": files_error},
        )
        return RunResult(DebateStatus.COMPLETED, files_error)

    def _on_cancelled(self, debate_id: str) -> None:
        """The task was cancelled: by a cancel request (status already says so) or by a
        shutdown (status stays ``running`` so the next start resumes it). Synchronous: a
        cancelled task must not await again before it re-raises."""
        cancelled = self._ledger.status(debate_id) == DebateStatus.CANCELLED
        if cancelled and not self.hub.has_ended(debate_id):
            self.hub.publish(debate_id, "end", {"status": DebateStatus.CANCELLED})


class _DeltaWindow:
    """When the live text of turns run together goes out: at most once a window, all of
    them at once.

    A delta that arrives after a quiet window goes out at the end of this turn of the event
    loop, with any other turn's that came in the same turn (the provider worker writes what
    came in one turn of its own loop in one message); those that follow within the window,
    from any of the turns, are gathered and go out together when it closes (by timer, so a
    lone token is never held back waiting for the next one). Chunky streams are not delayed
    at all; token-by-token streams cost one event per turn a window instead of one a token,
    and since a batch's turns publish in the same instant, a viewer of the debate gets them
    in one write instead of one write per turn."""

    def __init__(self) -> None:
        self._waiting: dict[_TurnText, None] = {}  # in arrival order
        self._timer: asyncio.Handle | None = None
        self._spacing = Spacing(DELTA_WINDOW_SECONDS)

    def offer(self, text: _TurnText) -> None:
        """``text`` has something to publish."""
        self._waiting[text] = None
        if self._timer is None:
            self._timer = self._spacing.call(self.flush)

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        waiting, self._waiting = self._waiting, {}
        if waiting:
            self._spacing.begin()
        for text in waiting:
            text.publish()

    def forget(self, text: _TurnText) -> None:
        self._waiting.pop(text, None)


class _TurnText:
    """The text of one turn as it streams: kept whole, published when its ``_DeltaWindow``
    says (or at once, by ``flush``, before the turn's state changes)."""

    def __init__(self, hub: EventBus, debate_id: str, key: str, window: _DeltaWindow) -> None:
        self._hub = hub
        self._debate_id = debate_id
        self._key = key
        self._window = window
        self._parts: list[str] = []
        self._pending: list[str] = []

    @property
    def text(self) -> str:
        return "".join(self._parts)

    def add(self, text: str) -> None:
        if not text:
            return
        self._parts.append(text)
        self._pending.append(text)
        self._window.offer(self)

    def publish(self) -> None:
        if self._pending:
            chunk = "".join(self._pending)
            self._pending.clear()
            self._hub.publish(self._debate_id, "delta", {"key": self._key, "text": chunk})

    def flush(self) -> None:
        self._window.forget(self)
        self.publish()

    def reset(self) -> None:
        self.flush()
        self._parts.clear()

    def cut(self, keep: int) -> None:
        """Keep only the first ``keep`` characters (what was published stays published)."""
        self.flush()
        self._parts = [self.text[:keep].rstrip()]

    def discard(self) -> None:
        """The turn was abandoned (cancelled): publish nothing more."""
        self._window.forget(self)
        self._pending.clear()


def _retry_info(key: str, event: Retrying) -> RetryingData:
    return {
        "key": key,
        "attempt": event.attempt,
        "delay": round(event.delay, 3),
        "error_kind": event.error.kind.value,
        "error_status": event.error.status,
        "error_message": event.error.message,
    }


async def _close(events: AsyncIterator[Any]) -> None:
    aclose = getattr(events, "aclose", None)
    if aclose is not None:
        await aclose()


def _estimated_usage(plan: TurnPlan, *, generated: str) -> Usage:
    """The usage of a stream stopped before the provider reported any."""
    prompt = estimate_tokens(plan.system) + sum(estimate_tokens(m.content) for m in plan.messages)
    return Usage(input_tokens=prompt, output_tokens=estimate_tokens(generated), estimated=True)
