"""``argue run``: ask for a debate in the terminal and watch it happen.

Owns turning command-line words into a ``DebateRequest`` (topic prefixes, rounds, paths,
seats), and the end-of-debate report shared with ``argue resume``: the synthesis, the files
written (finals, history, plan, workspace) and the skipped paths. Exit codes: 0 completed,
1 failed (resume with ``argue resume ID``), 2 a bad request, 130 cancelled with Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from app.formats import default_rounds_text, format_names, formats, get_format
from app.spec import SEEDS, TOPIC_TYPES
from app.status import DebateStatus

if TYPE_CHECKING:
    from app.cli.session import CliContext, DriveResult
    from app.cli.style import Style
    from app.debates import DebateRequest

TYPE_PREFIXES = ("plan", "bug", "tech")
MIN_ROUNDS, MAX_ROUNDS = 1, 8
EXIT_CODES = {DebateStatus.COMPLETED: 0, DebateStatus.FAILED: 1, DebateStatus.CANCELLED: 130}


class UsageError(Exception):
    """A request the command cannot run; the message says what to change (exit 2)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "topic",
        nargs="*",
        help="the question (asked for when missing); a leading 'plan', 'bug' or 'tech' "
        "sets the type",
    )
    default = format_names()[0]
    described = "; ".join(f"{fmt.name}: {fmt.description}" for fmt in formats())
    parser.add_argument(
        "--format", "-f", choices=format_names(), default=default,
        help=f"{described} (default {default})",
    )  # fmt: skip
    parser.add_argument(
        "--type", "-t", dest="topic_type", choices=TOPIC_TYPES, help="default general"
    )
    parser.add_argument(
        "--rounds",
        "-r",
        type=int,
        help=f"{MIN_ROUNDS}-{MAX_ROUNDS}; default: {default_rounds_text(', ')}",
    )
    parser.add_argument(
        "--paths",
        action="append",
        default=[],
        metavar="A,B",
        help="context files, comma-separated (each cut to its first 300 lines)",
    )
    parser.add_argument("--seed", choices=SEEDS, help="an analysis the Gemini seat runs first")
    parser.add_argument("--model", "-m", help="the Gemini seat's model")
    parser.add_argument("--history", action="store_true", help="keep the transcript file")
    parser.add_argument(
        "--budget-usd",
        metavar="DOLLARS",
        help="stop once the debate has spent this much, in US dollars at list prices "
        "(checked between turns; every seat's model needs a price)",
    )
    parser.add_argument(
        "--blind-judge",
        action="store_true",
        help="panel: the judge sees 'Side 1'/'Side 2' and numbered debaters, never pro/con "
        "or model names; its marks are read back to pro/con",
    )
    parser.add_argument(
        "--swap-judge",
        action="store_true",
        help="panel: the judge judges again with the sides' order swapped; the report says "
        "whether both verdicts agree",
    )
    parser.add_argument(
        "--seat",
        action="append",
        default=[],
        metavar="NAME=PROVIDER[:MODEL]",
        help="who sits in a seat, e.g. claude=openai:gpt-5 (repeatable)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the result as JSON (live text goes to stderr)"
    )


def run(args: argparse.Namespace) -> int:
    try:
        topic_type, topic = split_type_prefix(_topic(args), args.topic_type)
        request = build_request(args, topic=topic, topic_type=topic_type)
    except UsageError as error:
        print(f"argue run: {error}", file=sys.stderr)
        return 2
    return start(request, paths=_paths(args.paths), as_json=args.json)


# -- the request ----------------------------------------------------------------------


def _topic(args: argparse.Namespace) -> str:
    topic = " ".join(args.topic).strip()
    if topic:
        return topic
    if sys.stdin is None or not sys.stdin.isatty():
        raise UsageError('give a topic, e.g. argue run "Should we use SQLite?"')
    prompt = get_format(args.format).topic_prompt
    try:
        topic = input(prompt).strip()
    except EOFError:
        topic = ""
    if not topic:
        raise UsageError("no topic given")
    return topic


def split_type_prefix(topic: str, topic_type: str | None) -> tuple[str, str]:
    """A topic starting with ``plan ``, ``bug `` or ``tech `` sets the type and loses the
    word — unless the type was given outright, when the topic is taken as written."""
    if topic_type is not None:
        return topic_type, topic
    first, _, rest = topic.partition(" ")
    if first.lower() in TYPE_PREFIXES and rest.strip():
        return first.lower(), rest.strip()
    return "general", topic


def _paths(values: Sequence[str]) -> list[str]:
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def parse_seats(values: Sequence[str]) -> dict[str, str]:
    """``NAME=PROVIDER[:MODEL]`` pairs, names lower-cased (``Claude`` = ``claude``)."""
    seats: dict[str, str] = {}
    for value in values:
        name, sep, choice = value.partition("=")
        if not sep or not name.strip() or not choice.strip():
            raise UsageError(f"--seat {value!r}: write NAME=PROVIDER[:MODEL], e.g. claude=openai")
        seats[name.strip().lower()] = choice.strip()
    return seats


def build_request(args: argparse.Namespace, *, topic: str, topic_type: str) -> DebateRequest:
    from pydantic import ValidationError

    from app.debates import DebateRequest, seat_overrides

    if args.rounds is not None and not MIN_ROUNDS <= args.rounds <= MAX_ROUNDS:
        raise UsageError(
            f"--rounds must be between {MIN_ROUNDS} and {MAX_ROUNDS} (got {args.rounds})"
        )
    # Left out, the rounds are the format's own default.
    rounds = {} if args.rounds is None else {"rounds": args.rounds}
    try:
        return DebateRequest(
            **rounds,
            topic=topic,
            format=args.format,
            topic_type=topic_type,
            seats=seat_overrides(parse_seats(args.seat)),
            seed=args.seed,
            model=args.model,
            history=args.history,
            budget_usd=_budget(args.budget_usd),
            blind_judge=getattr(args, "blind_judge", False),
            swap_judge=getattr(args, "swap_judge", False),
        )
    except ValidationError as error:
        raise UsageError(_validation_message(error)) from error


def _budget(value: str | None) -> str | None:
    """The ``--budget-usd`` amount as typed, less a leading ``$``; the request checks it."""
    if value is None:
        return None
    return value.strip().removeprefix("$").strip() or None


def _validation_message(error: Any) -> str:
    problems = []
    for item in error.errors():
        where = ".".join(str(part) for part in item.get("loc", ()))
        message = str(item.get("msg", "invalid")).removeprefix("Value error, ")
        problems.append(f"{where}: {message}" if where else message)
    return "; ".join(problems)


# -- running ----------------------------------------------------------------------------


def start(request: DebateRequest, *, paths: Sequence[str], as_json: bool) -> int:
    from app import debates
    from app.cli.session import drive, open_context
    from app.cli.terminal import TerminalView
    from app.context import read_context_files
    from app.formats.judging import same_provider_warnings
    from app.pricing import price_table
    from app.providers.registry import provider_statuses

    context = open_context(runs_debates=True)
    files, skipped = read_context_files(paths)
    try:
        prepared = debates.prepare(
            request,
            statuses=provider_statuses(context.settings),
            extra_context=files,
            skipped_paths=skipped,
            prices=price_table(context.settings.data_dir),
        )
    except (debates.SeatError, debates.BudgetError) as error:
        print(f"argue run: {error}", file=sys.stderr)
        return 2
    debate = debates.create(context.engine, prepared=prepared, settings=context.settings)
    out = sys.stderr if as_json else sys.stdout
    spec = prepared.spec
    print(
        f"Debate {debate.id} · {spec.format} · {spec.topic_type} · up to {spec.rounds} round(s)",
        file=out,
    )
    print(f"Topic: {spec.topic}", file=out)
    print(f"Seats: {debate.seats_summary}", file=out)
    for note in prepared.notes:
        print(f"Note: {note}", file=out)
    for warning in same_provider_warnings(spec):
        print(f"Warning: {warning}", file=out)
    if spec.context:
        print(f"Context: {', '.join(item.path for item in spec.context)}", file=out)
    if skipped:
        print(f"Skipped paths (could not be read): {', '.join(skipped)}", file=out)
    out.flush()

    def submit(jobs: Any) -> bool:
        jobs.submit(debate.id)
        return True

    result = drive(context, debate.id, TerminalView(out, style=style_for(out)), submit)
    return finish(context, debate.id, result, out=out, as_json=as_json, notes=prepared.notes)


def style_for(out: TextIO) -> Style:
    """Colour for ``out`` if it is a terminal that wants it (``app.cli.style``)."""
    from app.cli.style import Style, colour_wanted

    return Style(colour=colour_wanted(out, os.environ))


# -- the report -------------------------------------------------------------------------


def finish(
    context: CliContext,
    debate_id: str,
    result: DriveResult,
    *,
    out: TextIO,
    as_json: bool,
    notes: Sequence[str] = (),
) -> int:
    """After the debate (whose files the runner wrote if it completed): the report, and the
    exit code."""
    from app import store
    from app.db import session_scope
    from app.formats.judging import same_provider_warnings
    from app.pricing import price_table
    from app.scorecard import scorecard_of
    from app.spending import debate_total

    prices = price_table(context.settings.data_dir)
    with session_scope(context.engine) as session:
        debate = store.get_debate(session, debate_id=debate_id)
        assert debate is not None
        spec = store.debate_spec(debate)
        spent = debate_total(session, prices=prices, debate_id=debate_id)
        card = scorecard_of(store.turns_of(session, debate_id=debate_id))
        summary = {
            "id": debate.id,
            "status": debate.status,
            "reason": debate.status_reason,
            "topic": debate.topic,
            "format": debate.format,
            "topic_type": debate.topic_type,
            "rounds_run": debate.rounds_run,
            "converged": debate.converged,
            "synthesis": debate.synthesis,
            "input_tokens": debate.input_tokens,
            "output_tokens": debate.output_tokens,
            # US dollars at list prices; None: a model used has no price ("cost_text" says
            # "at least" what the priced turns cost).
            "cost": None if spent.amount is None else float(spent.amount),
            "cost_text": spent.text,
            "budget_usd": None if spec.budget_usd is None else float(spec.budget_usd),
            "outputs": debate.outputs,
            "files_error": result.files_error,
            "notes": list(notes),
            "warnings": list(same_provider_warnings(spec)),
            # Judged twice with the sides swapped: whether both verdicts agree (else None).
            "agreement": card.agreement_sentence() if card is not None else None,
            "skipped_paths": list(spec.skipped_paths),
        }
        done = len(store.completed_turns(session, debate_id=debate_id))
    _report(summary, done, out, style_for(out))
    if as_json:
        print(json.dumps(summary, indent=2, ensure_ascii=False))
    return EXIT_CODES.get(result.status, 1)


def _report(summary: dict[str, Any], done: int, out: TextIO, style: Style) -> None:
    status, debate_id = summary["status"], summary["id"]
    tokens = f"{summary['input_tokens']} in / {summary['output_tokens']} out tokens"
    print(file=out)
    if status == DebateStatus.COMPLETED:
        converged = {True: "yes", False: "no"}.get(summary["converged"], "n/a")
        print(
            style.bold(
                f"══ Synthesis · rounds: {summary['rounds_run']} · converged: {converged} "
                f"· {tokens} ══"
            ),
            file=out,
        )
        print((summary["synthesis"] or "(no synthesis)").strip(), file=out)
        print(file=out)
        if summary.get("agreement"):
            print(summary["agreement"], file=out)
        _report_files(summary, out)
    elif status == DebateStatus.CANCELLED:
        print(
            style.warning(f"Debate {debate_id} cancelled; {done} completed turn(s) saved."),
            file=out,
        )
        print(f"resume with: argue resume {debate_id}", file=out)
    else:
        failure = f"Debate {debate_id} {status}: {summary['reason'] or 'no reason given'}"
        print(style.error(failure), file=out)
        print(f"resume with: argue resume {debate_id}", file=out)
    print(f"Cost: {summary['cost_text']} at list prices · {tokens}", file=out)
    if summary["skipped_paths"]:
        print(f"Skipped paths (could not be read): {', '.join(summary['skipped_paths'])}", file=out)
    out.flush()


FILE_LINES = (
    ("finals", "Finals written to"),
    ("history", "History written to"),
    ("workspace", "Workspace written to"),
    ("plan", "Plan written to"),
)


def _report_files(summary: dict[str, Any], out: TextIO) -> None:
    outputs = summary["outputs"] or {}
    if not outputs:
        problem = summary["files_error"] or "report files not written"
        print(f"{problem}; write them with: argue export {summary['id']}", file=out)
        return
    for name, words in FILE_LINES:
        if outputs.get(name):
            print(f"{words} {outputs[name]}", file=out)
