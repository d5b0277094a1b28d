"""Writing a finished debate's report files and remembering where they went.

Called when a debate completes (``Ledger.complete``, in the transaction that marks it
completed), so the command line and the web app produce the same files; ``argue export`` and
the downloads read the same pure exports.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from sqlmodel import Session

from app import store
from app.files import Outputs, write_outputs


def write_debate_files(
    session: Session, *, debate_id: str, data_dir: Path, now: datetime
) -> Outputs:
    """Write finals (and history, plan, workspace as the debate asks), and save their paths
    in the caller's transaction.

    Raises ``OSError`` when the data folder cannot be written."""
    debate = store.get_debate(session, debate_id=debate_id)
    if debate is None:
        raise LookupError(f"no debate {debate_id}")
    turns = store.turns_of(session, debate_id=debate_id)
    outputs = write_outputs(data_dir=data_dir, debate=debate, turns=turns, now=now)
    store.set_outputs(session, debate_id=debate_id, outputs=outputs.as_json())
    return outputs
