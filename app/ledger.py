"""The runner's database work: short synchronous transactions, each run in the thread of
``ledger_lane`` so the event loop that streams every debate never waits on the database.

One thread, shared by every debate of the process. Its work is Python between round trips, and
every thread that runs Python takes its turns of the interpreter lock from the loop that
carries every debate's live text; debates in step (fifty duels whose turns end within the
same few milliseconds) saved their turns two at a time, and the loop waited for both. One
thread saves several hundred turns a second (a save on PostgreSQL is about 1.5 ms of a
thread's CPU, ``bench/HISTORY.md``), and a burst (fifty debates ending and fifty
starting at once) queues for it: the debates start a little later, their tokens do not wait.
Alternate runs of ``python -m bench --cluster 1 --no-profile --only latency --history-debates
0`` on a 2-core machine (``bench/HISTORY.md``, 2026-12-07): token-to-viewer p99 86–105 ms
with one thread, 112–195 ms with two; in-process (``python -m bench --no-profile --only
latency``) 80 and 91 ms against 113 and 124 ms.

One method per thing the runner needs to know or record; each is one unit of work.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from app import store
from app.db import read_scope, session_scope
from app.endings import EndedEarly
from app.leases import Fence
from app.pricing import ModelUse
from app.reports import write_debate_files
from app.spec import CompletedTurn, DebateSpec, Outcome
from app.status import DebateStatus
from app.store import SavedTurn
from app.threads import BACKGROUND_NICENESS, Lane

LEDGER_THREADS = 1
ledger_lane = Lane("ledger", threads=LEDGER_THREADS, niceness=BACKGROUND_NICENESS)


@dataclass(frozen=True)
class TurnRecord:
    """A finished turn, completed or failed, as it is saved."""

    key: str
    role: str
    label: str
    provider: str
    model: str
    phase: str
    round: int
    status: str
    text: str
    verdict: dict[str, Any] | None
    error_kind: str | None
    error_message: str | None
    input_tokens: int
    output_tokens: int
    usage_estimated: bool
    attempts: int
    started_at: datetime
    finished_at: datetime
    ended_early: EndedEarly | None = None


@dataclass(frozen=True)
class Start:
    spec: DebateSpec
    done: tuple[CompletedTurn, ...]
    token_budget: int | None
    # False: the debate was stopped (cancelled) before this job could mark it running.
    running: bool = True
    started_at: datetime | None = None  # when it first ran


class Ledger:
    """With a ``fence`` (a worker's lease on the debate), every write first proves in its own
    transaction that the lease still holds (``app.leases``): a worker that lost the debate to
    another writes nothing."""

    def __init__(self, engine: Engine, fence: Fence | None = None) -> None:
        self.engine = engine
        self.fence = fence
        # A turn's ``seq`` is "one more than the last": parallel turns of one debate are
        # saved one at a time, whatever thread (or however many) each save runs in.
        self._saving = threading.Lock()

    def start(self, debate_id: str) -> Start:
        """Mark the debate running; what it asked for and what is already done.

        Under a fence it only reads: taking the lease marked the debate running (a cancel
        since then is left to stand), and a read needs no proof of the lease. A lease lost
        meanwhile refuses the first write, and the fence keeps any event from going out."""
        if self.fence is None:
            with session_scope(self.engine) as session:
                running = store.mark_running(session, debate_id=debate_id)
                return self._start(session, debate_id, running=running)
        with read_scope(self.engine) as session:
            return self._start(session, debate_id, running=True)

    def _start(self, session: Session, debate_id: str, *, running: bool) -> Start:
        debate = store.get_debate(session, debate_id=debate_id)
        if debate is None:
            raise LookupError(f"no debate {debate_id}")
        return Start(
            spec=store.debate_spec(debate),
            done=store.completed_turns(session, debate_id=debate_id),
            token_budget=debate.token_budget,
            running=running,
            started_at=debate.started_at,
        )

    def status(self, debate_id: str) -> DebateStatus | None:
        with read_scope(self.engine) as session:
            return store.debate_status(session, debate_id=debate_id)

    def tokens_used(self, debate_id: str) -> int:
        with read_scope(self.engine) as session:
            debate = store.get_debate(session, debate_id=debate_id)
            return (debate.input_tokens + debate.output_tokens) if debate else 0

    def tokens_by_model(self, debate_id: str) -> list[ModelUse]:
        """The debate's tokens per model so far: what its money budget is checked against."""
        with read_scope(self.engine) as session:
            return store.tokens_by_model(session, debate_ids=(debate_id,)).get(debate_id, [])

    def save_turn(self, debate_id: str, record: TurnRecord) -> SavedTurn:
        """Commit the turn; the debate's token totals after it."""
        with self._saving, session_scope(self.engine) as session:
            added = None
            if self.fence is not None:  # the lease's check adds the tokens, first
                added = self.fence.check_adding(
                    session, input_tokens=record.input_tokens, output_tokens=record.output_tokens
                )
            saved = store.record_turn(
                session,
                debate_id=debate_id,
                key=record.key,
                role=record.role,
                label=record.label,
                provider=record.provider,
                model=record.model,
                phase=record.phase,
                round=record.round,
                status=record.status,
                text=record.text,
                verdict=record.verdict,
                error_kind=record.error_kind,
                error_message=record.error_message,
                input_tokens=record.input_tokens,
                output_tokens=record.output_tokens,
                usage_estimated=record.usage_estimated,
                attempts=record.attempts,
                started_at=record.started_at,
                finished_at=record.finished_at,
                ended_early=record.ended_early,
                tokens_added=added,
            )
            return saved

    def complete(
        self, debate_id: str, *, outcome: Outcome, data_dir: Path, now: datetime
    ) -> str | None:
        """Mark the debate completed and write its report files, in one transaction; why the
        files could not be written, if they could not. The debate is completed either way:
        its files can be exported again."""
        with session_scope(self.engine) as session:
            self._end(session, debate_id, DebateStatus.COMPLETED, outcome, None)
            # The end and the files' paths go out as one UPDATE, at the commit.
            with session.no_autoflush:
                try:
                    write_debate_files(session, debate_id=debate_id, data_dir=data_dir, now=now)
                except OSError as error:
                    return f"report files not written: {error}"
        return None

    def finish(
        self, debate_id: str, *, status: DebateStatus, outcome: Outcome | None, reason: str | None
    ) -> None:
        with session_scope(self.engine) as session:
            self._end(session, debate_id, status, outcome, reason)

    def _end(
        self,
        session: Session,
        debate_id: str,
        status: DebateStatus,
        outcome: Outcome | None,
        reason: str | None,
    ) -> None:
        """Record the debate's end in ``session``'s transaction, under the fence if any."""
        if self.fence is not None:
            self.fence.check(session)
        store.finish_debate(
            session, debate_id=debate_id, status=status, outcome=outcome, reason=reason
        )
