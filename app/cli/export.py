"""``argue export ID``: a debate's report as a file or on stdout.

Default: the finals (the duel's synthesis block; a panel's final report). ``--transcript``:
the history transcript. ``--workspace``: a panel's three-folder workspace as a zip. Markdown
goes to stdout unless ``-o`` names a file; the zip, which a terminal cannot show, goes to
``./<its default name>`` unless ``-o`` says otherwise. Where a file was written is said on
stderr, so stdout stays the document alone.
"""

from __future__ import annotations

import argparse
import sys
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.models import Debate, Turn


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from app.cli.lookup import ID_HELP

    parser.add_argument("id", help=ID_HELP)
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument(
        "--transcript", action="store_true", help="the whole transcript (history) instead"
    )
    kind.add_argument("--workspace", action="store_true", help="a panel's workspace archive (.zip)")
    parser.add_argument("-o", "--output", type=Path, help="write here instead")


def run(args: argparse.Namespace) -> int:
    from app import store
    from app.cli.lookup import UnknownDebate, debate_named
    from app.cli.session import open_context
    from app.db import session_scope

    context = open_context()
    with session_scope(context.engine) as session:
        try:
            debate = debate_named(session, args.id)
        except UnknownDebate as error:
            return error.report("argue export")
        debate_id = debate.id
        turns = store.turns_of(session, debate_id=debate_id)
    if args.workspace:
        return _export_workspace(debate, turns, args.output)
    text = document(debate, turns, transcript=args.transcript, data_dir=context.settings.data_dir)
    if args.output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return 0
    return _write(args.output, text.encode("utf-8"))


def document(
    debate: Debate, turns: list[Turn], *, transcript: bool, data_dir: Path | None = None
) -> str:
    """The Markdown asked for: the transcript (its costs at the data folder's prices), or
    the finals."""
    from app import export
    from app.pricing import price_table

    if transcript:
        prices = price_table(data_dir) if data_dir is not None else None
        return export.transcript_markdown(debate, turns, prices)
    return export.finals_markdown(debate, turns, date=_day(debate))


def _day(debate: Debate) -> date:
    """The report's date: when the debate finished (its files were dated so), else today."""
    from datetime import UTC

    from app.models import utcnow

    moment = debate.finished_at or utcnow()
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone().date()


def _export_workspace(debate: Debate, turns: list[Turn], output: Path | None) -> int:
    from app import export
    from app.formats import formats, get_format

    if get_format(debate.format).workspace is None:
        having = " and ".join(fmt.name for fmt in formats() if fmt.workspace is not None)
        print(
            f"argue export: --workspace is for {having} debates; {debate.id} is a "
            f"{debate.format} (try --transcript)",
            file=sys.stderr,
        )
        return 2
    data = export.workspace_zip(debate, turns, date=_day(debate))
    return _write(output or Path(f"{export.workspace_name(debate)}.zip"), data)


def _write(path: Path, data: bytes) -> int:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    except OSError as error:
        print(f"argue export: could not write {path}: {error}", file=sys.stderr)
        return 1
    print(f"Written to {path.resolve()}", file=sys.stderr)
    return 0
