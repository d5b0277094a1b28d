"""``argue rerun ID --seat ROLE=PROVIDER[:MODEL] …``: run a finished debate again with other
models, in the terminal.

The new debate has the same topic, format, options and context; the seats named change and
the others keep their provider and model. It is linked to the one it re-runs (``argue show``
and the page name both), and is watched and reported exactly as ``argue run``'s. Exit codes
as ``argue run``'s: 0 completed, 1 failed, 2 a bad request, 130 cancelled.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from app.cli.lookup import ID_HELP

    parser.add_argument("id", help=ID_HELP)
    parser.add_argument(
        "--seat",
        action="append",
        default=[],
        metavar="ROLE=PROVIDER[:MODEL]",
        help="a seat to change, e.g. gemini=openai:gpt-5 (repeatable; others stay as they were)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the result as JSON (live text goes to stderr)"
    )


def run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from app import debates, reruns
    from app.cli.lookup import UnknownDebate, resolve_debate_id
    from app.cli.run import UsageError, finish, parse_seats, style_for
    from app.cli.session import drive, open_context
    from app.cli.terminal import TerminalView
    from app.db import session_scope
    from app.providers.registry import provider_statuses

    try:
        seats = debates.seat_overrides(parse_seats(args.seat))
    except UsageError as error:
        print(f"argue rerun: {error}", file=sys.stderr)
        return 2
    except ValidationError as error:
        message = "; ".join(
            str(item["msg"]).removeprefix("Value error, ") for item in error.errors()
        )
        print(f"argue rerun: --seat: {message}", file=sys.stderr)
        return 2
    context = open_context(runs_debates=True)
    with session_scope(context.engine) as session:
        try:
            original_id = resolve_debate_id(session, args.id)
        except UnknownDebate as error:
            return error.report("argue rerun")
    try:
        debate, prepared = reruns.start_rerun(
            context.engine,
            debate_id=original_id,
            seats=seats,
            statuses=provider_statuses(context.settings),
            settings=context.settings,
        )
    except reruns.RerunRefused as error:
        print(f"argue rerun: {error}", file=sys.stderr)
        return 1
    except debates.SeatError as error:
        print(f"argue rerun: {error}", file=sys.stderr)
        return 2
    out = sys.stderr if args.json else sys.stdout
    spec = prepared.spec
    print(
        f"Debate {debate.id} · re-run of {original_id} · {spec.format} · {spec.topic_type}"
        f" · up to {spec.rounds} round(s)",
        file=out,
    )
    print(f"Topic: {spec.topic}", file=out)
    print(f"Seats: {debate.seats_summary}", file=out)
    for note in prepared.notes:
        print(f"Note: {note}", file=out)
    out.flush()

    def submit(jobs: Any) -> bool:
        jobs.submit(debate.id)
        return True

    result = drive(context, debate.id, TerminalView(out, style=style_for(out)), submit)
    return finish(context, debate.id, result, out=out, as_json=args.json, notes=prepared.notes)
