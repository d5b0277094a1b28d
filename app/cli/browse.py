"""``argue list`` and ``argue show ID``: reading saved debates in the terminal.

The same database the web app shows (``ARGUE_HOME`` / ``ARGUE_DATABASE_URL``). ``list`` is a
table, newest first; ``show`` is one debate whole: its header, every turn (failed ones with
their error) and the synthesis.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from app.endings import ended_early_note
from app.formats import format_names, get_format
from app.models import DEBATE_STATUSES

if TYPE_CHECKING:
    from app.models import Debate, Turn
    from app.pricing import PriceTable

TOPIC_WIDTH = 48
LIST_COLUMNS = (
    "id",
    "date",
    "format",
    "status",
    "converged",
    "rounds",
    "tokens",
    "cost",
    "topic",
)


# -- list -------------------------------------------------------------------------------


def add_list_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", "-f", choices=format_names(), help="only this format")
    parser.add_argument("--status", "-s", choices=DEBATE_STATUSES, help="only this status")
    parser.add_argument("-q", "--query", help="only topics containing this text")
    parser.add_argument("--limit", "-n", type=int, default=20, help="how many (default 20)")


def run_list(args: argparse.Namespace) -> int:
    from app import store
    from app.cli.session import open_context
    from app.db import session_scope
    from app.pricing import price_table
    from app.spending import debate_totals

    if args.limit < 1:
        print("argue list: --limit must be at least 1", file=sys.stderr)
        return 2
    if args.query and (refusal := store.search_refusal(args.query)):
        print(f"argue list: --query: {refusal}", file=sys.stderr)
        return 2
    context = open_context()
    with session_scope(context.engine) as session:
        debates, total = store.list_debates(
            session,
            query=args.query,
            format=args.format,
            status=args.status,
            per_page=args.limit,
        )
        prices = price_table(context.settings.data_dir)
        costs = debate_totals(session, prices=prices, debate_ids=[d.id for d in debates])
    if not debates:
        print("No debates match." if total or _filtered(args) else _EMPTY)
        return 0
    print(render_table(debates, {key: spent.text for key, spent in costs.items()}))
    if total > len(debates):
        print(f"({len(debates)} of {total}; use --limit to see more)")
    return 0


_EMPTY = 'No debates yet. Start one with: argue run "your question"'


def _filtered(args: argparse.Namespace) -> bool:
    return bool(args.format or args.status or args.query)


def list_row(debate: Debate, cost: str = "unknown") -> tuple[str, ...]:
    converged = yes_no(debate.converged)
    rounds = get_format(debate.format).cli_rounds(debate.rounds_run, debate.rounds)
    return (
        debate.id,
        local_time(debate.created_at),
        debate.format,
        debate.status,
        converged,
        rounds,
        str(debate.input_tokens + debate.output_tokens),
        cost,
        _truncate(" ".join(debate.topic.split()), TOPIC_WIDTH),
    )


def yes_no(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "no")


def render_table(debates: Sequence[Debate], costs: Mapping[str, str] | None = None) -> str:
    """``costs``: each debate's cost in words, by id ("unknown" for one not given)."""
    costs = costs or {}
    rows = [LIST_COLUMNS, *(list_row(d, costs.get(d.id, "unknown")) for d in debates)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(LIST_COLUMNS))]
    lines = []
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=True)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def local_time(moment: datetime | None) -> str:
    """A stored time (UTC; SQLite gives it back naive) in the viewer's local time."""
    if moment is None:
        return "-"
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone().strftime("%Y-%m-%d %H:%M")


def _truncate(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


# -- show -------------------------------------------------------------------------------


def add_show_arguments(parser: argparse.ArgumentParser) -> None:
    from app.cli.lookup import ID_HELP

    parser.add_argument("id", help=ID_HELP)


def run_show(args: argparse.Namespace) -> int:
    from app import store
    from app.cli.lookup import UnknownDebate, debate_named
    from app.cli.session import open_context
    from app.db import session_scope
    from app.pricing import price_table

    context = open_context()
    with session_scope(context.engine) as session:
        try:
            debate = debate_named(session, args.id)
        except UnknownDebate as error:
            return error.report("argue show")
        turns = store.turns_of(session, debate_id=debate.id)
        print(render_debate(debate, turns, price_table(context.settings.data_dir)))
    return 0


def render_debate(debate: Debate, turns: Sequence[Turn], prices: PriceTable | None = None) -> str:
    """The whole debate; costs from ``prices`` (the bundled list prices when None)."""
    from app.pricing import bundled_table

    prices = prices or bundled_table()
    turn_lines = [line for turn in turns for line in _turn(turn, prices)]
    return "\n".join([*_header(debate, turns, prices), *turn_lines, *_synthesis(debate)])


def _header(debate: Debate, turns: Sequence[Turn], prices: PriceTable) -> list[str]:
    from app import store
    from app.pricing import ModelUse, money, total

    spec = store.debate_spec(debate)
    uses = [ModelUse(t.provider, t.model, t.input_tokens, t.output_tokens) for t in turns]
    status = debate.status + (f" — {debate.status_reason}" if debate.status_reason else "")
    rounds = f"{debate.rounds_run or 0} of {debate.rounds}"
    converged = yes_no(debate.converged)
    lines = [
        f"Debate {debate.id}",
        f"Topic:    {debate.topic}",
        f"Format:   {debate.format} · type: {debate.topic_type} · rounds: {rounds}"
        f" · converged: {converged}",
        f"Status:   {status}",
        f"Seats:    {debate.seats_summary}",
        f"Tokens:   {debate.input_tokens} in / {debate.output_tokens} out",
        f"Cost:     {total(prices, uses).text} at list prices"
        + (f" · budget: {money(spec.budget_usd)}" if spec.budget_usd is not None else ""),
        f"Created:  {local_time(debate.created_at)} · started: {local_time(debate.started_at)}"
        f" · finished: {local_time(debate.finished_at)}",
    ]
    if debate.seed:
        lines.append(f"Seed:     {debate.seed}")
    if spec.context:
        lines.append(f"Context:  {', '.join(item.path for item in spec.context)}")
    if spec.skipped_paths:
        lines.append(f"Skipped:  {', '.join(spec.skipped_paths)}")
    if debate.rerun_of:
        lines.append(f"Re-run of: {debate.rerun_of}")
    for number, question in enumerate(store.followup_questions(debate), start=1):
        lines.append(f"Follow-up {number}: {' '.join(question.split())}")
    for name, path in (debate.outputs or {}).items():
        if path:
            lines.append(f"{name.capitalize() + ':':<9} {path}")
    return lines


def _synthesis(debate: Debate) -> list[str]:
    if not debate.synthesis:
        return []
    return ["", "══ Synthesis ══", debate.synthesis.strip()]


def _turn(turn: Turn, prices: PriceTable) -> list[str]:
    from app.cli.terminal import turn_header, turn_stats, verdict_lines
    from app.pricing import money
    from app.spending import turn_cost

    info = {
        "label": turn.label,
        "provider": turn.provider,
        "model": turn.model,
        "phase": turn.phase,
        "round": turn.round,
    }
    lines = ["", turn_header(info)]
    if turn.status == "failed":
        lines.append(f"✗ failed ({turn.error_kind}): {turn.error_message}")
        if turn.text.strip():
            lines += ["(text received before the failure:)", turn.text.rstrip()]
        return lines
    lines.append(turn.text.rstrip())
    if note := ended_early_note(turn.ended_early, output_tokens=turn.output_tokens):
        lines.append(f"  [{note}]")
    estimated = " (estimated)" if turn.usage_estimated else ""
    lines.append(
        f"  {turn_stats(turn.input_tokens, turn.output_tokens, turn.latency_ms)}{estimated}"
        f" · {money(turn_cost(prices, turn))}"
    )
    lines += [f"  {line}" for line in verdict_lines(turn.verdict)]
    return lines
