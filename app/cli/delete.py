"""``argue delete ID``: delete a debate, its turns and the files it wrote.

The id may be a unique prefix (``app.cli.lookup``). On a terminal it asks ``y/N`` first;
``--yes`` skips the question, and without a terminal to ask on, ``--yes`` is required. A
queued or running debate is refused, as on the page and in the API: cancel it first
(``app.deletion``).

Exit codes: 0 deleted; 1 no such debate, or declined; 2 a bad id, a debate still queued or
running, or no ``--yes`` without a terminal.
"""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from app.cli.lookup import ID_HELP

    parser.add_argument("id", help=ID_HELP)
    parser.add_argument("-y", "--yes", action="store_true", help="delete without asking")


def run(args: argparse.Namespace) -> int:
    from app import deletion, store
    from app.cli.lookup import UnknownDebate, debate_named
    from app.cli.session import open_context
    from app.db import session_scope
    from app.models import ACTIVE_STATUSES

    context = open_context()
    with session_scope(context.engine) as session:
        try:
            debate = debate_named(session, args.id)
        except UnknownDebate as error:
            return error.report("argue delete")
        debate_id, status, topic = debate.id, debate.status, debate.topic
        turns = len(store.turns_of(session, debate_id=debate_id))
    if status in ACTIVE_STATUSES:
        print(_active_message(debate_id, status), file=sys.stderr)
        return 2
    if not args.yes:
        if sys.stdin is None or not sys.stdin.isatty():
            print(
                f"argue delete: not asking without a terminal; run argue delete {debate_id} --yes",
                file=sys.stderr,
            )
            return 2
        question = f"Delete debate {debate_id} ({status}, {turns} turns): {_short(topic)}? [y/N] "
        if not _confirmed(question):
            print("Not deleted.", file=sys.stderr)
            return 1
    try:
        deleted = deletion.delete_debate(
            context.engine, debate_id=debate_id, data_dir=context.settings.data_dir
        )
    except LookupError:
        print(f"argue delete: no debate {debate_id!r} (deleted meanwhile?)", file=sys.stderr)
        return 1
    except deletion.DebateActive as error:
        print(_active_message(debate_id, error.status), file=sys.stderr)
        return 2
    files = len(deleted.removed)
    print(f"Deleted debate {debate_id} and {files} file{'s' if files != 1 else ''} it wrote.")
    for path in deleted.removed:
        print(f"  removed {path}")
    return 0


def _active_message(debate_id: str, status: str) -> str:
    return (
        f"argue delete: debate {debate_id} is {status}; cancel it before deleting it "
        f"(the Cancel button on its page, or POST /api/debates/{debate_id}/cancel; if the "
        f"process that ran it has stopped, argue resume {debate_id} and press Ctrl-C)"
    )


def _confirmed(question: str) -> bool:
    try:
        answer = input(question)
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def _short(topic: str, limit: int = 60) -> str:
    line = " ".join(topic.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
