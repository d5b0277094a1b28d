"""A debate's status: the one type for where a debate is in its life.

- ``queued``: waiting for a job (a slot in this process, or a worker) to run it.
- ``running``: a job is running it; a process that stopped mid-debate leaves it so, and the
  next start (or the queue's sweep) resumes it from its saved turns.
- ``completed``: its format planned no more turns; its outcome is saved.
- ``failed``: stopped for good by a failed turn, a spent budget or an internal error; its
  completed turns are kept and it may be resumed.
- ``cancelled``: stopped by a person; its completed turns are kept and it may be resumed.

The transitions the code makes (``app.store``, ``app.ledger``, ``app.leases``, ``app.jobs``,
``app.debate_queue``, ``app.runner``, ``app.workers``):

- created as ``queued``;
- ``queued`` → ``running`` when a job starts it (``running`` → ``running`` when one resumes
  a debate an earlier process left running);
- ``running`` → ``completed`` or ``failed`` when its run ends (an internal error may fail
  it while still ``queued``);
- ``queued`` or ``running`` → ``cancelled`` on a cancel;
- ``failed`` or ``cancelled`` → ``queued`` on a resume, ``completed`` → ``queued`` when a
  follow-up question is asked.

The database column stays a plain string: a ``StrEnum`` member is a ``str`` equal to its
value, so it is written as is, compares equal to the strings templates use, and
``DebateStatus(text)`` reads one back.
"""

from __future__ import annotations

import enum
from typing import Final


class DebateStatus(enum.StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def is_active(self) -> bool:
        """Queued or running: a job has it or will; it can be cancelled, not deleted."""
        return self in ACTIVE_STATUSES

    @property
    def is_ended(self) -> bool:
        """Completed, failed or cancelled: no job runs it until it is queued again."""
        return self in ENDED_STATUSES

    @property
    def is_resumable(self) -> bool:
        """Failed or cancelled: a resume continues it from its last completed turn."""
        return self in RESUMABLE_STATUSES


ACTIVE_STATUSES: Final = (DebateStatus.QUEUED, DebateStatus.RUNNING)
ENDED_STATUSES: Final = (DebateStatus.COMPLETED, DebateStatus.FAILED, DebateStatus.CANCELLED)
RESUMABLE_STATUSES: Final = (DebateStatus.FAILED, DebateStatus.CANCELLED)


def status_of(text: str) -> DebateStatus:
    """The status a stored column holds (``ValueError`` for anything else)."""
    return DebateStatus(text)
