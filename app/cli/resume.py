"""``argue resume ID``: continue a failed, cancelled or interrupted debate in the terminal.

The runner re-plans from the saved turns, so only the turns that never completed run again;
the live view and the end report are ``argue run``'s. A debate still marked queued or
running was interrupted (its process stopped); it is continued as it stands.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

INTERRUPTED_STATUSES = ("queued", "running")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", help="the debate's id (see argue list)")
    parser.add_argument(
        "--json", action="store_true", help="print the result as JSON (live text goes to stderr)"
    )


def run(args: argparse.Namespace) -> int:
    from app import store
    from app.cli.run import finish
    from app.cli.session import drive, open_context
    from app.cli.terminal import TerminalView
    from app.db import session_scope
    from app.jobs import RESUMABLE_STATUSES

    context = open_context()
    with session_scope(context.engine) as session:
        debate = store.get_debate(session, debate_id=args.id)
        if debate is None:
            print(f"argue resume: no debate {args.id!r} (see argue list)", file=sys.stderr)
            return 1
        status, topic = debate.status, debate.topic
        done = len(store.completed_turns(session, debate_id=args.id))
    if status not in (*RESUMABLE_STATUSES, *INTERRUPTED_STATUSES):
        print(
            f"argue resume: debate {args.id} is {status}; nothing to resume "
            f"(see argue show {args.id})",
            file=sys.stderr,
        )
        return 1
    out = sys.stderr if args.json else sys.stdout
    print(f"Resuming {args.id} ({status}): {topic}", file=out)
    print(f"{done} completed turn(s) kept; only unfinished turns run again.", file=out)
    if status in INTERRUPTED_STATUSES:
        print(
            "Note: it was left "
            f"{status} by a process that stopped; if the web app is still running it, "
            "stop that first.",
            file=out,
        )
    out.flush()

    def start(jobs: Any) -> bool:
        if status in INTERRUPTED_STATUSES:
            jobs.submit(args.id)
            return True
        return bool(jobs.resume(args.id))

    result = drive(context, args.id, TerminalView(out), start)
    return finish(context, args.id, result, out=out, as_json=args.json)
