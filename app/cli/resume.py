"""``argue resume ID``: continue a failed, cancelled or interrupted debate in the terminal.

The runner re-plans from the saved turns, so only the turns that never completed run again;
the live view and the end report are ``argue run``'s. A debate still marked queued or
running was interrupted (its process stopped); it is continued as it stands. With workers
(``ARGUE_RUN_DEBATES=workers``) the resume goes to their queue and the terminal follows it.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from app.status import ACTIVE_STATUSES as INTERRUPTED_STATUSES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from app.cli.lookup import ID_HELP

    parser.add_argument("id", help=ID_HELP)
    parser.add_argument(
        "--json", action="store_true", help="print the result as JSON (live text goes to stderr)"
    )


def run(args: argparse.Namespace) -> int:
    from app import store
    from app.cli.lookup import UnknownDebate, debate_named
    from app.cli.run import finish, style_for
    from app.cli.session import drive, open_context
    from app.cli.terminal import TerminalView
    from app.db import session_scope
    from app.status import RESUMABLE_STATUSES

    context = open_context(runs_debates=True)
    with session_scope(context.engine) as session:
        try:
            debate = debate_named(session, args.id)
        except UnknownDebate as error:
            return error.report("argue resume")
        debate_id, status, topic = debate.id, debate.status, debate.topic
        done = len(store.completed_turns(session, debate_id=debate_id))
    if status not in (*RESUMABLE_STATUSES, *INTERRUPTED_STATUSES):
        print(
            f"argue resume: debate {debate_id} is {status}; nothing to resume "
            f"(see argue show {debate_id})",
            file=sys.stderr,
        )
        return 1
    out = sys.stderr if args.json else sys.stdout
    print(f"Resuming {debate_id} ({status}): {topic}", file=out)
    print(f"{done} completed turn(s) kept; only unfinished turns run again.", file=out)
    if status in INTERRUPTED_STATUSES and context.settings.runs_in_workers:
        # Queued again: the queue's lock and the debate's lease let one worker run it.
        print(f"Note: it is {status} in the workers' queue; following it here.", file=out)
    elif status in INTERRUPTED_STATUSES:
        print(
            "Note: it was left "
            f"{status} by a process that stopped; if the web app is still running it, "
            "stop that first.",
            file=out,
        )
    out.flush()

    def start(jobs: Any) -> bool:
        if status in INTERRUPTED_STATUSES:
            jobs.submit(debate_id)
            return True
        return bool(jobs.resume(debate_id))

    result = drive(context, debate_id, TerminalView(out, style=style_for(out)), start)
    return finish(context, debate_id, result, out=out, as_json=args.json)
