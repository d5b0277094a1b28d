"""``argue eval``: measure whether debating helps, on questions with known answers.

    argue eval arithmetic --items 100 --seed 0 --conditions single,majority,duel \\
        --provider openai --model gpt-4o-mini

Owns turning the command line into a stored eval run (task, conditions, each condition's
seats), driving it, and printing its table (or JSON). ``--provider``/``--model`` put every
seat of every condition on that model; ``--seat ROLE=PROVIDER[:MODEL]`` then changes one
role (``solver`` is the seat of ``single`` and ``majority``). Ctrl-C stops the run with its
finished items kept; ``argue eval --resume RUN_ID`` goes on with the rest. Exit codes: 0 a
completed run, 1 a failed one (resumable), 2 a bad request, 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from app.cli.session import CliContext
    from app.models import EvalItem
    from app.spec import Seat

DEFAULT_CONDITIONS = "single,majority,duel"
MIN_ROUNDS, MAX_ROUNDS = 1, 8
MAX_ITEMS = 10_000
MAX_SAMPLES = 64
MIN_PREFIX = 4


class UsageError(Exception):
    """A request the command cannot run; the message says what to change (exit 2)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from app.evals.conditions import CONDITIONS

    parser.add_argument(
        "task", nargs="?", help="'arithmetic' (generated, seeded) or a JSONL file of questions"
    )
    parser.add_argument("--items", "-n", type=int, default=10, help="questions to ask (10)")
    parser.add_argument("--seed", type=int, default=0, help="which questions (0)")
    parser.add_argument(
        "--conditions",
        default=DEFAULT_CONDITIONS,
        help=f"comma-separated, of: {', '.join(CONDITIONS)} (default {DEFAULT_CONDITIONS})",
    )
    parser.add_argument("--provider", "-p", help="every seat of every condition on this provider")
    parser.add_argument("--model", "-m", help="every seat on this model (with --provider)")
    parser.add_argument(
        "--seat",
        action="append",
        default=[],
        metavar="ROLE=PROVIDER[:MODEL]",
        help="one role on another model, e.g. gemini=openai:gpt-5 or solver=local (repeatable)",
    )
    parser.add_argument(
        "--rounds", "-r", type=int, default=2, help="debate rounds (2, as Du et al.)"
    )
    parser.add_argument(
        "--samples",
        type=int,
        default=3,
        help="majority's k when no debate condition runs (with one, k = the debate's calls)",
    )
    parser.add_argument("--resume", metavar="RUN_ID", help="continue an interrupted run")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")


def run(args: argparse.Namespace) -> int:
    from app.cli.session import open_context
    from app.evals.tasks import TaskError

    try:
        context = open_context()
        run_id = _resume_id(context, args.resume) if args.resume else _new_run(context, args)
    except (UsageError, TaskError) as error:
        print(f"argue eval: {error}", file=sys.stderr)
        return 2
    return drive(context, run_id, as_json=args.json)


# -- a new run ----------------------------------------------------------------------------


def _new_run(context: CliContext, args: argparse.Namespace) -> str:
    from app.db import session_scope
    from app.evals import store as eval_store
    from app.evals import tasks

    if not args.task:
        raise UsageError("give a task: argue eval arithmetic --items 20 (or --resume RUN_ID)")
    _check_counts(args)
    conditions = parse_conditions(args.conditions)
    seats, notes = choose_seats(
        conditions, provider=args.provider, model=args.model, overrides=args.seat, context=context
    )
    questions = tasks.load(args.task, count=args.items, seed=args.seed)
    with session_scope(context.engine) as session:
        run = eval_store.create_run(
            session,
            task=args.task,
            seed=args.seed,
            rounds=args.rounds,
            samples=args.samples,
            conditions=conditions,
            seats=seats,
            questions=questions,
        )
        run_id = run.id
    for note in notes:
        print(f"Note: {note}", file=sys.stderr)
    return run_id


def _check_counts(args: argparse.Namespace) -> None:
    if not 1 <= args.items <= MAX_ITEMS:
        raise UsageError(f"--items must be between 1 and {MAX_ITEMS} (got {args.items})")
    if not MIN_ROUNDS <= args.rounds <= MAX_ROUNDS:
        raise UsageError(f"--rounds must be between {MIN_ROUNDS} and {MAX_ROUNDS}")
    if not 1 <= args.samples <= MAX_SAMPLES:
        raise UsageError(f"--samples must be between 1 and {MAX_SAMPLES}")
    if args.model and not args.provider:
        raise UsageError("--model needs --provider (the model of which provider?)")


def parse_conditions(text: str) -> list[str]:
    from app.evals.conditions import CONDITIONS

    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    if not names:
        raise UsageError("--conditions is empty")
    unknown = [name for name in names if name not in CONDITIONS]
    if unknown:
        raise UsageError(
            f"unknown condition {', '.join(unknown)}; choose from {', '.join(CONDITIONS)}"
        )
    return list(dict.fromkeys(names))


def choose_seats(
    conditions: Sequence[str],
    *,
    provider: str | None,
    model: str | None,
    overrides: Sequence[str],
    context: CliContext,
) -> tuple[dict[str, tuple[Seat, ...]], list[str]]:
    """Each condition's seats: its defaults, all moved to ``provider``/``model`` when given,
    then ``--seat`` overrides by role; unconfigured providers fall back to local, with a note."""
    from pydantic import ValidationError

    from app.cli.run import UsageError as RunUsageError
    from app.cli.run import parse_seats
    from app.debates import SeatChoice, parse_seat_choice
    from app.evals.conditions import get_condition
    from app.providers.registry import provider_statuses, resolve_seat

    try:
        everyone = SeatChoice(provider=provider, model=model) if provider else None
        chosen = {role: parse_seat_choice(value) for role, value in parse_seats(overrides).items()}
    except (ValidationError, RunUsageError) as error:
        raise UsageError(_first_error(error)) from error
    roles = {seat.role for name in conditions for seat in get_condition(name).default_seats()}
    unknown = sorted(set(chosen) - roles)
    if unknown:
        raise UsageError(
            f"no seat {', '.join(unknown)} here; the roles are {', '.join(sorted(roles))}"
        )
    statuses = provider_statuses(context.settings)
    seats: dict[str, tuple[Seat, ...]] = {}
    notes: list[str] = []
    for name in conditions:
        resolved = []
        for seat in get_condition(name).default_seats():
            choice = chosen.get(seat.role, everyone)
            if choice is not None:
                seat = replace(seat, provider=choice.provider, model=choice.model)
            seat, note = resolve_seat(seat, statuses)
            resolved.append(seat)
            if note and note not in notes:
                notes.append(note)
        seats[name] = tuple(resolved)
    return seats, notes


def _first_error(error: Exception) -> str:
    errors = getattr(error, "errors", None)
    if callable(errors):
        return "; ".join(str(e.get("msg", "")).removeprefix("Value error, ") for e in errors())
    return str(error)


def _resume_id(context: CliContext, text: str) -> str:
    from app.db import session_scope
    from app.evals import store as eval_store

    with session_scope(context.engine) as session:
        run = eval_store.get_run(session, run_id=text)
        if run is None:
            if len(text) < MIN_PREFIX:
                raise UsageError(f"no eval run {text!r}")
            matches = eval_store.run_ids_starting_with(session, prefix=text)
            if len(matches) != 1:
                raise UsageError(
                    f"no eval run {text!r}" if not matches else f"{text!r} names several runs"
                )
            run = eval_store.get_run(session, run_id=matches[0])
            assert run is not None
        if run.status == "completed":
            raise UsageError(f"eval run {run.id} is already complete")
        return run.id


# -- running and the report ---------------------------------------------------------------


def drive(context: CliContext, run_id: str, *, as_json: bool) -> int:
    from app.evals.harness import Harness
    from app.pricing import price_table
    from app.providers.registry import build_provider, close_providers

    seats_by_condition = _seats_of(context, run_id)
    names = sorted({seat.provider for seats in seats_by_condition.values() for seat in seats})
    providers = {name: build_provider(name, context.settings) for name in names}
    harness = Harness(
        engine=context.engine,
        settings=context.settings,
        providers=providers,
        prices=price_table(context.settings.data_dir),
    )
    print(f"Eval {run_id}", file=sys.stderr, flush=True)

    async def go() -> str:
        try:
            return await harness.run(run_id, on_item=_progress)
        finally:
            await close_providers(providers)

    try:
        status = asyncio.run(go())
    except KeyboardInterrupt:
        _mark_interrupted(context, run_id)
        print(f"\ninterrupted; resume with: argue eval --resume {run_id}", file=sys.stderr)
        return 130
    return report(context, run_id, status=status, as_json=as_json)


def _seats_of(context: CliContext, run_id: str) -> dict[str, tuple[Seat, ...]]:
    from app.db import session_scope
    from app.evals import store as eval_store

    with session_scope(context.engine) as session:
        run = eval_store.get_run(session, run_id=run_id)
        assert run is not None
        return eval_store.run_seats(run)


def _mark_interrupted(context: CliContext, run_id: str) -> None:
    from app.db import session_scope
    from app.evals import store as eval_store

    with session_scope(context.engine) as session:
        eval_store.set_run_status(
            session, run_id=run_id, status="interrupted", reason="interrupted"
        )


def _progress(item: EvalItem, total: int) -> None:
    verdict = "unparsable" if item.unparsable else ("right" if item.correct else "wrong")
    debate = f" · debate {item.debate_id}" if item.debate_id else ""
    answer = item.answer if item.answer is not None else "-"
    print(
        f"[{item.item_index + 1}/{total}] {item.condition}: {answer[:40]} ({verdict}, "
        f"expected {item.expected}) · {item.calls} call(s) · {item.seconds:.1f}s{debate}",
        file=sys.stderr,
        flush=True,
    )


def report(context: CliContext, run_id: str, *, status: str, as_json: bool) -> int:
    from app.db import session_scope
    from app.evals import store as eval_store
    from app.evals.summary import summarize, table

    with session_scope(context.engine) as session:
        run = eval_store.get_run(session, run_id=run_id)
        assert run is not None
        items = eval_store.items_of(session, run_id=run_id)
        summaries = summarize(run.conditions, items)
        result: dict[str, Any] = {
            "id": run.id,
            "task": run.task,
            "seed": run.seed,
            "rounds": run.rounds,
            "status": run.status,
            "reason": run.status_reason,
            "questions": len(run.questions),
            "seats": run.seats,
            "conditions": [summary.to_json() for summary in summaries],
        }
    if as_json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        print(f"Eval {run_id} · {result['task']} · {result['questions']} question(s) · {status}")
        print(table(summaries))
    if status != "completed":
        print(
            f"{status}: {result['reason']}; resume with: argue eval --resume {run_id}",
            file=sys.stderr,
        )
        return 1
    return 0
