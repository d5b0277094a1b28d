"""What the page stream renders each debate's events from, kept in memory between events.

A started, completed or failed turn brings the page's header up to date (the step being run,
an estimate of what is left), and that needs the debate and every turn saved so far. Read
from the database for every such event, it cost most of a busy server's time: at 50 duels
with short replies, a hundred turns start and a hundred end every second. A ``Timeline``
holds the debate and its saved turns; it is read once, then each completed turn's event puts
in the saved turn it carries (``TurnCompletedData``), each failed turn's event reads only that
turn's row (a later attempt with the same key replaces the earlier one), and each status
event puts in the status and the start it carries (``StatusData``). A debate no event has
touched for a while drops out (least recently used first); reading it again gives the same
result, only later.

A viewer opening a debate's stream reads its timeline then, in the request's own thread
(``watch``), with the status it needs anyway. Read on its first event instead, the timeline
was read in the few rendering threads, behind every other debate's events: on PostgreSQL,
with fifty debates starting at once on every web node, their first text waited for it.

Only the streams of its viewers keep a timeline current: with none in this process, nothing
renders the turns saved meanwhile. So a viewer reads only the status when another viewer's
stream is open here (``Watch``: it counts while its stream holds it), and the whole timeline
again when none is: a reader who left the page and came back saw the progress of when they
left.

Events are rendered in worker threads (``app.web.offload``), so every access is under a lock.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from app import store
from app.db import read_scope
from app.models import Debate, Turn
from app.status import DebateStatus
from app.web.view import (
    GroupView,
    Progress,
    TurnView,
    group_turns,
    parse_moment,
    progress_of,
    turn_from_live,
    turn_from_row,
)

DEFAULT_CAPACITY = 512


@dataclass
class Timeline:
    """A debate as the page stream last saw it: the debate row (detached) and its saved
    turns by key."""

    debate: Debate
    seat_order: tuple[str, ...]
    turns: dict[str, TurnView] = field(default_factory=dict)

    def groups(self, started: Mapping[str, Any] | None = None) -> list[GroupView]:
        """The page's groups of turns, with ``started`` (a turn that has just begun, not
        saved yet) among them unless its key already completed."""
        turns = dict(self.turns)
        if started is not None:
            live = turn_from_live(started)
            saved = turns.get(live.key)
            if saved is None or saved.status != "completed":
                turns[live.key] = live
        return group_turns(
            list(turns.values()), format=self.debate.format, seat_order=self.seat_order
        )

    def progress(self, started: Mapping[str, Any] | None = None) -> Progress:
        return progress_of(self.debate, self.groups(started))


@dataclass(frozen=True, eq=False, slots=True, weakref_slot=True)
class Watch:
    """A viewer's hold on a debate's timeline: its stream keeps it while it renders the
    debate's events, and the timeline counts as kept current until it is let go."""

    status: DebateStatus


class Timelines:
    """The timelines of the debates being watched, at most ``capacity`` of them."""

    def __init__(self, engine: Engine, *, capacity: int = DEFAULT_CAPACITY) -> None:
        self._engine = engine
        self._capacity = capacity
        self._lock = threading.Lock()
        self._timelines: OrderedDict[str, Timeline] = OrderedDict()
        self._watchers: dict[str, int] = {}  # live ``Watch``es by debate

    def get(self, debate_id: str) -> Timeline | None:
        """The debate's timeline (read from the database the first time), or None when
        there is no such debate."""
        return self._get(debate_id)[0]

    def saved_turn(
        self, debate_id: str, key: str, *, carried: TurnView | None = None
    ) -> TurnView | None:
        """The turn ``key`` as saved now (after its completed or failed event), also put
        into the timeline: ``carried`` (what a completed turn's event holds), else its row."""
        timeline, fresh = self._get(debate_id)
        if fresh and timeline is not None and key in timeline.turns:
            return timeline.turns[key]  # read just now, with the rest
        turn = carried if carried is not None else self._read_turn(debate_id, key)
        if turn is not None and timeline is not None:
            with self._lock:
                timeline.turns[turn.key] = turn
        return turn

    def _read_turn(self, debate_id: str, key: str) -> TurnView | None:
        with read_scope(self._engine) as session:
            row = session.exec(
                select(Turn).where(Turn.debate_id == debate_id, Turn.key == key)
            ).first()
            return turn_from_row(row) if row is not None else None

    def watch(self, debate_id: str) -> Watch | None:
        """A viewer about to stream the debate: its status as the database has it now, and
        the timeline of a debate still going read in the same session, unless another
        viewer's stream keeps it current. None when there is no such debate."""
        with self._lock:
            current = self._watchers.get(debate_id, 0) > 0 and debate_id in self._timelines
        with read_scope(self._engine) as session:
            if current:
                status, timeline = store.debate_status(session, debate_id=debate_id), None
            else:
                status, timeline = _status_and_timeline(session, debate_id)
        if status is None:
            return None
        with self._lock:
            others = self._watchers.get(debate_id, 0)
            self._watchers[debate_id] = others + 1
        if timeline is not None:
            # With another viewer come meanwhile, the timeline kept is current, perhaps in
            # use: keep it. With none, what is kept may be stale: this one replaces it.
            self._keep(debate_id, timeline, replace=not others)
        watch = Watch(status)
        weakref.finalize(watch, self._unwatch, debate_id)
        return watch

    def _unwatch(self, debate_id: str) -> None:
        with self._lock:
            left = self._watchers.pop(debate_id, 1) - 1
            if left > 0:
                self._watchers[debate_id] = left

    def note_status(
        self, debate_id: str, status: DebateStatus, *, started_at: str | None = None
    ) -> Timeline | None:
        """The timeline with the status (and start) a status event carries put into its
        debate; None when there is no such debate."""
        timeline = self.get(debate_id)
        if timeline is None:
            return None
        # The bus may be shared with a newer version of Argue: what this one cannot read is
        # left as it was, not allowed to stop the stream.
        known = str(status) if status in DebateStatus.__members__.values() else None
        began = parse_moment(started_at)
        with self._lock:
            debate = timeline.debate
            if known is not None:
                debate.status = known
            if began is not None:
                debate.started_at = began
        return timeline

    def _get(self, debate_id: str) -> tuple[Timeline | None, bool]:
        """The timeline, and whether it was read from the database just now."""
        with self._lock:
            timeline = self._timelines.get(debate_id)
            if timeline is not None:
                self._timelines.move_to_end(debate_id)
                return timeline, False
        # Read outside the lock: fifty debates starting at once are fifty reads, and the
        # other debates' events must not wait behind them.
        timeline = self._read(debate_id)
        if timeline is None:
            return None, True
        return self._keep(debate_id, timeline)

    def _keep(
        self, debate_id: str, timeline: Timeline, *, replace: bool = False
    ) -> tuple[Timeline, bool]:
        """The timeline kept for the debate, and whether it is ``timeline`` (just read)."""
        with self._lock:
            kept = self._timelines.get(debate_id)
            if kept is not None and not replace:  # another thread read it meanwhile: keep it
                return kept, False
            self._timelines[debate_id] = timeline
            self._timelines.move_to_end(debate_id)
            self._drop_past_capacity()
            return timeline, True

    def _drop_past_capacity(self) -> None:
        while len(self._timelines) > self._capacity:
            self._timelines.popitem(last=False)

    def _read(self, debate_id: str) -> Timeline | None:
        with read_scope(self._engine) as session:
            debate = store.get_debate(session, debate_id=debate_id)
            return _timeline_of(session, debate) if debate is not None else None


def _status_and_timeline(
    session: Session, debate_id: str
) -> tuple[DebateStatus | None, Timeline | None]:
    """The debate's status and, while it is still going, its timeline; (None, None) when
    there is no such debate. An ended debate's viewer gets the final page, read whole."""
    debate = store.get_debate(session, debate_id=debate_id)
    if debate is None:
        return None, None
    status = DebateStatus(debate.status)
    return status, None if status.is_ended else _timeline_of(session, debate)


def _timeline_of(session: Session, debate: Debate) -> Timeline:
    rows = store.turns_of(session, debate_id=debate.id)
    seat_order = tuple(seat.role for seat in store.debate_spec(debate).seats)
    turns = {row.key: turn_from_row(row) for row in rows}
    return Timeline(debate=debate, seat_order=seat_order, turns=turns)
