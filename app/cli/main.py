"""Entry point of ``argue``: builds the parser from each subcommand module and dispatches.

Each subcommand module exposes ``add_arguments(parser)`` and ``run(args) -> int``; modules
keep heavy imports inside ``run`` so ``argue --help`` stays fast and a broken optional part
breaks only its own subcommand. Given the command line, only the command it names is built
(its module imported): ``argue models`` does not pay for the modules of ``argue list``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from app.pricing import PriceFileError

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("app.cli.serve", "serve the web app"),
    "run": ("app.cli.run", "run a debate in the terminal"),
    "resume": ("app.cli.resume", "resume a failed, cancelled or interrupted debate"),
    "followup": ("app.cli.followup", "ask a completed debate a follow-up question"),
    "rerun": ("app.cli.rerun", "run a finished debate again, with any seats changed"),
    "list": ("app.cli.browse", "list debates, newest first"),
    "show": ("app.cli.browse", "show one debate"),
    "export": ("app.cli.export", "write a debate's report"),
    "delete": ("app.cli.delete", "delete a debate, its turns and the files it wrote"),
    "models": ("app.cli.models", "show providers, whether they are ready, and their models"),
    "ask": ("app.cli.ask", "stream one reply from one provider: the smallest proof of a seat"),
    "assets": ("app.cli.assets", "fetch and check the pinned htmx files for ARGUE_ASSETS=local"),
    "worker": ("app.cli.worker", "run queued debates (ARGUE_RUN_DEBATES=workers, PostgreSQL)"),
    "eval": ("app.cli.eval", "measure whether debating helps: accuracy per condition"),
}


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or, given ``argv``, of the command it names (the others
    are listed with their help but left without their arguments)."""
    parser = argparse.ArgumentParser(
        prog="argue", description="Make language models argue a question out."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    wanted = set(SUBCOMMANDS) if argv is None else _commands_named(argv)
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        command = sub.add_parser(name, help=help_text, description=help_text)
        if name in wanted:
            module = importlib.import_module(module_name)
            add = getattr(module, f"add_{name}_arguments", None) or module.add_arguments
            add(command)
            command.set_defaults(handler=getattr(module, f"run_{name}", None) or module.run)
    return parser


def _commands_named(argv: Sequence[str]) -> set[str]:
    """The command ``argv`` runs; none for ``argue`` or ``argue --help``; all of them when
    the first word is no command (argparse then says so, as it would have)."""
    first = next((word for word in argv if not word.startswith("-")), None)
    if first is None:
        return set()
    return {first} if first in SUBCOMMANDS else set(SUBCOMMANDS)


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    try:
        code: int = args.handler(args)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except PriceFileError as error:  # a bad ARGUE_HOME/prices.toml: its path and fault
        print(f"argue: {error}", file=sys.stderr)
        return 2
    except Exception as error:
        # Imported only now: whatever raised a SettingsError has imported app.config already.
        from app.config import SettingsError
        from app.db import database_failure

        if isinstance(error, SettingsError):  # each refused variable: which one, and why
            for fault in str(error).splitlines():
                print(f"argue: {fault}", file=sys.stderr)
            return 2

        failure = database_failure(error)  # the database down: one line, not a traceback
        if failure is None:
            raise
        print(f"argue: {failure}", file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    raise SystemExit(main())
