"""``argue worker``: run debates from the queue that web nodes fill when
``ARGUE_RUN_DEBATES=workers`` (``app.workers``). Needs PostgreSQL (``ARGUE_DATABASE_URL``),
the same one as the web nodes; ``ARGUE_REDIS_URL`` lets every web node show the live events.

It logs each debate it takes, finishes, gives up or hands back, one line each, to stderr.
SIGTERM or Ctrl-C stops it; its debates go straight back to the queue for another worker.
"""

from __future__ import annotations

import argparse
import logging
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--concurrency",
        type=int,
        default=None,
        metavar="N",
        help="debates run at once (default ARGUE_WORKER_CONCURRENCY, 4)",
    )
    parser.add_argument(
        "--name", default=None, help="this worker's name in logs and leases (default host-pid)"
    )


def run(args: argparse.Namespace) -> int:
    from app import event_loop
    from app.config import get_settings
    from app.debate_queue import QueueUnavailable, require_postgresql
    from app.workers import serve, worker_name

    # Argue's own lines at INFO; the libraries' (each HTTP request, each job the queue
    # library starts) only when they warn.
    logging.basicConfig(
        level=logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("app").setLevel(logging.INFO)
    settings = get_settings()
    try:
        require_postgresql(settings)
    except QueueUnavailable as error:
        print(f"argue worker: {error}", file=sys.stderr)
        return 2
    concurrency = args.concurrency if args.concurrency is not None else settings.worker_concurrency
    if concurrency < 1:
        print("argue worker: --concurrency must be 1 or more", file=sys.stderr)
        return 2
    if not settings.runs_in_workers:
        logging.getLogger(__name__).warning(
            "ARGUE_RUN_DEBATES is not 'workers' here: web nodes set so run their debates "
            "themselves and enqueue nothing for this worker"
        )
    try:
        event_loop.run(serve(settings, concurrency=concurrency, name=args.name or worker_name()))
    except QueueUnavailable as error:
        print(f"argue worker: {error}", file=sys.stderr)
        return 2
    return 0
