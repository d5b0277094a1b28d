"""``argue serve``: bring the database to the newest schema and serve the web app.

It binds to 127.0.0.1 unless told otherwise: the app has no accounts, so exposing it is a
choice to make on purpose (``--host 0.0.0.0``, as the container does).
"""

from __future__ import annotations

import argparse

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


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

    settings = get_settings()
    migrate(get_engine(settings))
    host = f"[{args.host}]" if ":" in args.host else args.host
    print(f"Argue is serving on http://{host}:{args.port}  (data: {settings.data_dir})", flush=True)
    uvicorn.run(create_app(settings), host=args.host, port=args.port, log_level=args.log_level)
    return 0
