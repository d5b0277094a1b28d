"""``argue followup ID "question"``: ask a completed debate a follow-up question and watch
its seats answer in the terminal.

The question is saved with the debate and its answers run as new turns of it (as
``argue resume`` runs unfinished ones), shown live as ``argue run`` shows a debate; they
join the debate's reports. Exit codes: 0 answered, 1 the debate cannot take a question now
(or an answer failed: resume with ``argue resume ID``), 2 a bad question or id, 130 Ctrl-C.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from app.status import DebateStatus

EXIT_CODES = {DebateStatus.COMPLETED: 0, DebateStatus.FAILED: 1, DebateStatus.CANCELLED: 130}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from app.cli.lookup import ID_HELP

    parser.add_argument("id", help=ID_HELP)
    parser.add_argument("question", nargs="+", help="the follow-up question")
    parser.add_argument(
        "--json", action="store_true", help="print the answers as JSON (live text goes to stderr)"
    )


def run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from app import store
    from app.cli.lookup import UnknownDebate, debate_named
    from app.cli.run import style_for
    from app.cli.session import drive, open_context
    from app.cli.terminal import TerminalView
    from app.db import session_scope
    from app.followups import FollowUpRefused, FollowUpRequest, refusal

    try:
        question = FollowUpRequest(question=" ".join(args.question)).question
    except ValidationError as error:
        message = "; ".join(
            str(item["msg"]).removeprefix("Value error, ") for item in error.errors()
        )
        print(f"argue followup: {message}", file=sys.stderr)
        return 2
    context = open_context(runs_debates=True)
    with session_scope(context.engine) as session:
        try:
            debate = debate_named(session, args.id)
        except UnknownDebate as error:
            return error.report("argue followup")
        debate_id = debate.id
        refused, topic = refusal(debate), debate.topic
        number = len(debate.followups or ()) + 1
    if refused is not None:
        hint = f" (argue resume {debate_id})" if "resume" in refused else ""
        print(f"argue followup: {refused}{hint}", file=sys.stderr)
        return 1
    out = sys.stderr if args.json else sys.stdout
    print(f"Follow-up {number} to debate {debate_id}: {topic}", file=out)
    print(f"Question: {question}", file=out)
    out.flush()

    def start(jobs: Any) -> bool:
        try:
            jobs.follow_up(debate_id, question)
        except FollowUpRefused as error:
            print(f"argue followup: {error}", file=sys.stderr)
            return False
        return True

    result = drive(context, debate_id, TerminalView(out, style=style_for(out)), start)
    with session_scope(context.engine) as session:
        turns = store.turns_of(session, debate_id=debate_id)
    prefix = f"q{number}.followup."
    answers = [turn for turn in turns if turn.key.startswith(prefix)]
    _report(debate_id, result.status, result.reason, answers, out)
    if args.json:
        import json

        summary = {
            "id": debate_id,
            "status": result.status,
            "reason": result.reason,
            "number": number,
            "question": question,
            "answers": [
                {"role": t.role, "label": t.label, "status": t.status, "text": t.text}
                for t in answers
            ],
        }
        print(json.dumps(summary, indent=2, ensure_ascii=False))
    return EXIT_CODES.get(result.status, 1)


def _report(
    debate_id: str, status: str, reason: str | None, answers: list[Any], out: TextIO
) -> None:
    print(file=out)
    if status == DebateStatus.COMPLETED:
        seats = ", ".join(turn.label for turn in answers if turn.status == "completed")
        print(f"Answered by {seats}. The answers are in the debate's reports:", file=out)
        print(f"  argue show {debate_id}  ·  argue export {debate_id}", file=out)
    elif status == DebateStatus.CANCELLED:
        print(f"Cancelled; resume with: argue resume {debate_id}", file=out)
    else:
        print(f"Debate {debate_id} {status}: {reason or 'no reason given'}", file=out)
        print(f"resume with: argue resume {debate_id}", file=out)
    out.flush()
