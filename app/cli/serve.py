"""``argue serve``: bring the database to the newest schema and serve the web app.

It binds to 127.0.0.1 unless told otherwise: without ``ARGUE_AUTH_TOKEN`` (or
``ARGUE_AUTH_USER`` and ``ARGUE_AUTH_PASSWORD``) anyone who reaches the port can use the app
and spend the provider keys, so exposing it is a choice to make on purpose (``--host
0.0.0.0``, as the container does), and it is warned about. On loopback the app answers only
to loopback host names unless ``ARGUE_ALLOWED_HOSTS`` says otherwise: a web page cannot then
reach it by pointing a name of its own at 127.0.0.1 (DNS rebinding).

With ``ARGUE_ASSETS=local`` it first makes sure the pinned htmx files are kept (fetched once
from the npm registry and checked against their hashes, ``app.vendored``), and stops with a
plain message when they cannot be had, rather than serve pages that cannot go live.
"""

from __future__ import annotations

import argparse
import ipaddress
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.config import Settings

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
MAX_PORT = 65535
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host", default=DEFAULT_HOST, help=f"address to bind (default {DEFAULT_HOST})"
    )
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})"
    )
    parser.add_argument(
        "--log-level",
        default="info",
        choices=("critical", "error", "warning", "info", "debug"),
        help="uvicorn's log level (default info)",
    )


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from app.config import get_settings
    from app.db import get_engine
    from app.migrate import migrate
    from app.web.app import create_app

    if not 0 <= args.port <= MAX_PORT:  # 0: the system picks a free port
        print(
            f"argue serve: --port must be between 0 and {MAX_PORT} (got {args.port})",
            file=sys.stderr,
        )
        return 2
    settings = guarded(get_settings(), args.host)
    if not queue_reachable(settings):
        return 2
    if not assets_ready(settings):
        return 1
    migrate(get_engine(settings))
    host = f"[{args.host}]" if ":" in args.host else args.host
    # The database as its masked label: a PostgreSQL URL's password is never printed.
    print(
        f"Argue is serving on http://{host}:{args.port}  "
        f"(data: {settings.data_dir}; database: {settings.database_label})",
        flush=True,
    )
    uvicorn.run(create_app(settings), host=args.host, port=args.port, log_level=args.log_level)
    return 0


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def guarded(settings: Settings, host: str) -> Settings:
    """The settings to serve with on ``host``: loopback host names only on loopback (unless
    configured), and a warning when the app is exposed with no credential."""
    from app.web.security import Access

    if not is_loopback(host):
        if not Access.from_settings(settings).required:
            print(
                f"warning: serving on {host} with no ARGUE_AUTH_TOKEN (or ARGUE_AUTH_USER and "
                "ARGUE_AUTH_PASSWORD): anyone who can reach this port can read every debate "
                "and start new ones on your provider keys.",
                file=sys.stderr,
                flush=True,
            )
        return settings
    if settings.allowed_hosts:
        return settings
    return settings.model_copy(update={"allowed_hosts": list(LOOPBACK_NAMES)})


def queue_reachable(settings: Settings) -> bool:
    """In workers mode, whether the database can hold the debate queue: said here in one
    line, before the server starts, rather than as the app's start-up traceback."""
    if not settings.runs_in_workers:
        return True
    from app.debate_queue import QueueUnavailable, require_postgresql

    try:
        require_postgresql(settings)
    except QueueUnavailable as error:
        print(f"argue serve: {error}", file=sys.stderr, flush=True)
        return False
    return True


def assets_ready(settings: Settings) -> bool:
    """In ``local`` mode, whether the pinned files are kept (fetching them if need be)."""
    if settings.assets != "local":
        return True
    from app import vendored

    try:
        vendored.ensure_for(settings)
    except vendored.AssetError as error:
        print(
            f"error: ARGUE_ASSETS=local, but the pinned htmx files are not kept in "
            f"{vendored.folder_of(settings)} and could not be fetched: {error}\n"
            "Run `argue assets fetch` where the npm registry can be reached (or set "
            "ARGUE_ASSETS_REGISTRY to a mirror), or unset ARGUE_ASSETS to load htmx from its CDN.",
            file=sys.stderr,
            flush=True,
        )
        return False
    return True
