"""Writing a finished debate's files under the data folder.

The layout:

    finals/<slug>.md                               always; overwritten
    history/<slug>-<type>-<YYYYMMDDTHHMMSS>.md     when the debate asked for history; then
                                                   only the 5 newest of that slug are kept
    plans/<adjective>-<gerund>-<noun>.md           when the format hands the debate's synthesis
                                                   over as a plan (a duel of topic_type plan):
                                                   the synthesis under a header naming its
                                                   debate
    workspaces/debate_<YYYYMMDD_HHMMSS>_<id>/      when the format has a workspace (the
                                                   panel's 1_claims, 2_summaries, 3_report);
                                                   the id keeps debates begun in the same
                                                   second apart

The content comes from ``app.export`` (pure) and which files a debate has from its format
(``app.formats``); this module only decides paths and writes.
A topic that slugs to "" (a Japanese topic) is named ``debate-<id>`` (``export.file_slug``).
"""

from __future__ import annotations

import os
import random
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from app import export
from app.formats import get_format
from app.models import Debate, Turn
from app.pricing import price_table
from app.spec import TOPIC_TYPES

__all__ = [
    "HISTORY_KEEP",
    "OUTPUT_FOLDERS",
    "Outputs",
    "prune_history",
    "remove_outputs",
    "write_finals",
    "write_outputs",
]

HISTORY_KEEP = 5
_PLAN_NAME = re.compile(r"[a-z]+-[a-z]+-[a-z]+(?:-\d+)?")


@dataclass(frozen=True)
class Outputs:
    """The files written for one debate."""

    finals: Path
    history: Path | None = None
    plan: Path | None = None
    workspace: Path | None = None

    def as_json(self) -> dict[str, str | None]:
        """For ``Debate.outputs``: a later export reuses the plan name found here."""
        return {
            "finals": str(self.finals),
            "history": _str_or_none(self.history),
            "plan": _str_or_none(self.plan),
            "workspace": _str_or_none(self.workspace),
        }


def write_outputs(
    *,
    data_dir: Path,
    debate: Debate,
    turns: Sequence[Turn],
    now: datetime,
    rng: random.Random | None = None,
) -> Outputs:
    """Write every file the debate calls for and return their paths."""
    slug = export.file_slug(debate)
    fmt = get_format(debate.format)
    finals = write_finals(data_dir=data_dir, debate=debate, turns=turns, now=now)
    return Outputs(
        finals=finals,
        history=_write_history(data_dir, debate, turns, slug, now) if debate.history else None,
        plan=_write_plan(data_dir, debate, turns, now, rng)
        if fmt.hands_over_plan(debate.topic_type)
        else None,
        workspace=_write_workspace(data_dir, debate, turns, now)
        if fmt.workspace is not None
        else None,
    )


def write_finals(*, data_dir: Path, debate: Debate, turns: Sequence[Turn], now: datetime) -> Path:
    """Write the debate's finals (``finals/<slug>.md``, shared by every debate of the slug:
    the last written wins) and return its path."""
    finals = data_dir / "finals" / export.finals_filename(export.file_slug(debate))
    _write_text(finals, export.finals_markdown(debate, turns, date=now))
    return finals


def remove_outputs(*, data_dir: Path, debate_id: str, paths: Sequence[Path]) -> list[Path]:
    """Remove the files a deleted debate wrote and its workspace; return what was
    removed. Only files inside the data folder's own output folders are touched, whatever
    ``paths`` says (a path outside it, or a symlink leading out, is left alone), and a
    workspace only when its name ends with the debate's id."""
    removed: list[Path] = []
    for path in paths:
        if _owned(data_dir, path, OUTPUT_FOLDERS[:-1]) and path.is_file():
            path.unlink(missing_ok=True)
            removed.append(path)
    workspaces = data_dir / "workspaces"
    found = workspaces.glob(f"debate_*_{debate_id}") if workspaces.is_dir() else ()
    for folder in found:
        if _owned(data_dir, folder, ("workspaces",)) and folder.is_dir():
            shutil.rmtree(folder)
            removed.append(folder)
    return removed


# Where a debate's files go (see the layout above), workspaces last.
OUTPUT_FOLDERS = ("finals", "history", "plans", "workspaces")


def _owned(data_dir: Path, path: Path, folders: Sequence[str]) -> bool:
    """Whether ``path``, symlinks resolved, is directly inside one of ``folders`` of the
    data folder, and is not itself a symlink."""
    if path.is_symlink():
        return False
    try:
        real = path.resolve(strict=True)
        root = data_dir.resolve(strict=True)
    except OSError:
        return False
    return any(real.parent == root / folder for folder in folders)


def _write_history(
    data_dir: Path, debate: Debate, turns: Sequence[Turn], slug: str, now: datetime
) -> Path:
    path = data_dir / "history" / export.history_filename(slug, debate.topic_type, now)
    _write_text(path, export.transcript_markdown(debate, turns, price_table(data_dir)))
    prune_history(data_dir / "history", slug=slug, keep=HISTORY_KEEP)
    return path


def prune_history(folder: Path, *, slug: str, keep: int = HISTORY_KEEP) -> list[Path]:
    """Delete all but the ``keep`` newest (by modification time) history files of ``slug``;
    return what was deleted. The name must be exactly ``<slug>-<type>-<stamp>.md``: a
    prefix match would let slug ``abc`` delete the history of slug ``abc-def``."""
    pattern = re.compile(
        rf"{re.escape(slug)}-(?:{'|'.join(TOPIC_TYPES)})-\d{{8}}T\d{{6}}\.md",
    )
    mine = [path for path in folder.iterdir() if path.is_file() and pattern.fullmatch(path.name)]
    # Newest first; the name (its timestamp) breaks ties between equal mtimes.
    mine.sort(key=lambda path: (path.stat().st_mtime_ns, path.name), reverse=True)
    stale = mine[keep:]
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


def _write_plan(
    data_dir: Path,
    debate: Debate,
    turns: Sequence[Turn],
    now: datetime,
    rng: random.Random | None,
) -> Path:
    folder = data_dir / "plans"
    folder.mkdir(parents=True, exist_ok=True)
    name = _previous_plan_name(debate)
    path = folder / f"{name}.md" if name else _claim_plan_path(folder, rng or random.Random())
    _write_text(path, export.plan_markdown(debate, turns, date=now))
    return path


def _claim_plan_path(folder: Path, rng: random.Random) -> Path:
    """A fresh plan name, claimed by creating its file exclusively: two debates finishing
    at once cannot both take the same name."""
    existing = {path.stem for path in folder.glob("*.md")}
    while True:
        path = folder / f"{export.whimsical_name(existing, rng)}.md"
        try:
            path.touch(exist_ok=False)
        except FileExistsError:
            existing.add(path.stem)
            continue
        return path


def _previous_plan_name(debate: Debate) -> str | None:
    """Exporting a debate again rewrites its plan instead of adding another one."""
    previous = (debate.outputs or {}).get("plan")
    if not isinstance(previous, str):
        return None
    stem = Path(previous).stem
    return stem if _PLAN_NAME.fullmatch(stem) else None


def _write_workspace(data_dir: Path, debate: Debate, turns: Sequence[Turn], now: datetime) -> Path:
    root = data_dir / "workspaces" / export.workspace_name(debate)
    workspace = get_format(debate.format).workspace
    for folder in workspace.folders if workspace is not None else ():
        (root / folder).mkdir(parents=True, exist_ok=True)
    for relative, content in export.workspace_files(debate, turns, date=now).items():
        _write_text(root / relative, content)
    return root


def _write_text(path: Path, text: str) -> None:
    """Write UTF-8 with ``\\n`` line ends, atomically: a reader (a download) never sees half a
    file, and an overwritten finals is replaced whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(text.encode("utf-8"))
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _str_or_none(path: Path | None) -> str | None:
    return None if path is None else str(path)
