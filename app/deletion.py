"""Deleting a debate and everything it wrote: its row, its turns and its files.

One rule for the page, the API and the command line: a queued or running debate is refused
(``store.DebateActive``); it must be cancelled first, so no job is left writing turns for a
debate that is gone. The rows go in one transaction; the files go after it commits, so a
failed delete never leaves a debate whose files are missing.

Files: the paths the debate's ``outputs`` name (finals, history, plan) and its panel
workspace ``workspaces/debate_<stamp>_<id>/``, and only inside the data folder's own output
folders (``files.remove_outputs``). A finals file is named by the topic's slug, so debates
of one topic share it: while another debate still names it, it is not removed but written
again from the most recently finished of those debates, so it no longer holds the deleted
one's text.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import Engine

from app import files, store
from app.db import session_scope
from app.models import utcnow
from app.store import DebateActive, DeletedDebate

__all__ = ["DebateActive", "Deletion", "delete_debate"]


@dataclass(frozen=True)
class Deletion:
    """A deleted debate's id and the files and folders removed with it."""

    debate_id: str
    removed: tuple[Path, ...]


def delete_debate(engine: Engine, *, debate_id: str, data_dir: Path) -> Deletion:
    """Delete the debate, its turns and its files. Raises ``LookupError`` for an unknown
    id and ``DebateActive`` for a queued or running debate."""
    with session_scope(engine) as session:
        deleted = store.delete_debate(session, debate_id=debate_id)
    shared_finals = _hand_back_shared_finals(engine, deleted, data_dir)
    paths = [
        Path(value)
        for name, value in deleted.outputs.items()
        if isinstance(value, str) and value and name != "workspace"
    ]
    removed = files.remove_outputs(
        data_dir=data_dir,
        debate_id=deleted.debate_id,
        paths=[path for path in paths if path not in shared_finals],
    )
    return Deletion(debate_id=deleted.debate_id, removed=tuple(removed))


def _hand_back_shared_finals(engine: Engine, deleted: DeletedDebate, data_dir: Path) -> set[Path]:
    """The deleted debate's finals paths that other debates still name, each rewritten
    from the most recently finished of them."""
    finals = deleted.outputs.get("finals")
    if not isinstance(finals, str) or not finals:
        return set()
    with session_scope(engine) as session:
        others = store.debates_sharing_slug(session, slug=deleted.slug, exclude=deleted.debate_id)
        owner = next((d for d in others if (d.outputs or {}).get("finals") == finals), None)
        if owner is None:
            return set()
        turns = store.turns_of(session, debate_id=owner.id)
    path = Path(finals)
    if path.parent.resolve() == (data_dir / "finals").resolve():
        files.write_finals(
            data_dir=data_dir, debate=owner, turns=turns, now=owner.finished_at or utcnow()
        )
    return {path}
