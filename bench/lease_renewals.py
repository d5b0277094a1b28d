"""What keeping a worker's leases alive costs: ``python -m bench.lease_renewals``.

A worker renews the lease of every debate it runs each second (``app.leases``). This takes
that many leases in a throwaway PostgreSQL database and renews them ``--rounds`` times two
ways: one transaction per lease (how each debate's keeper renewed its own lease before) and
one statement for all of them (``renew_all``, what ``Renewals`` sends a round). It prints,
per round, the milliseconds of this process's CPU (the worker's share; the server's is not
counted) and of wall time, the best of ``--repeats`` runs, for each number of leases.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from sqlalchemy.engine import Engine

from app import leases, store
from app.db import make_engine, session_scope
from app.leases import Lease
from app.migrate import migrate
from app.spec import DebateSpec, Seat
from bench.cluster import (
    DEFAULT_POSTGRES_URL,
    create_database,
    drop_database,
    throwaway_database_name,
)

LEASE_SECONDS = 15.0
# Renews the leases, returning how many it renewed.
Renew = Callable[[Engine, list[Lease]], int]


@dataclass(frozen=True)
class Figure:
    leases: int
    way: str
    renewed: int  # leases the last round renewed
    cpu_ms: float  # per round, this process
    wall_ms: float  # per round


def taken_leases(engine: Engine, count: int) -> list[Lease]:
    spec = DebateSpec(
        topic="Is renewing a lease a write?",
        seats=(
            Seat(role="claude", label="Claude", provider="anthropic"),
            Seat(role="gemini", label="Gemini", provider="gemini"),
        ),
    )
    taken: list[Lease] = []
    with session_scope(engine) as session:
        for number in range(count):
            debate_id = store.create_debate(session, spec=spec).id
            lease = leases.take(
                session, debate_id=debate_id, holder=f"bench/job-{number}", seconds=LEASE_SECONDS
            )
            assert isinstance(lease, Lease)
            taken.append(lease)
    return taken


def one_transaction_each(engine: Engine, held: list[Lease]) -> int:
    renewed = 0
    for lease in held:
        with session_scope(engine) as session:
            renewed += leases.renew(session, lease=lease) is not None
    return renewed


def one_statement(engine: Engine, held: list[Lease]) -> int:
    with session_scope(engine) as session:
        return len(leases.renew_all(session, leases=held))


WAYS: dict[str, Renew] = {
    "a transaction per lease": one_transaction_each,
    "one statement for all": one_statement,
}


def per_round(renew: Renew, engine: Engine, held: list[Lease], rounds: int) -> Figure:
    renewed = 0
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(rounds):
        renewed = renew(engine, held)
    return Figure(
        leases=len(held),
        way=renew.__name__,
        renewed=renewed,
        cpu_ms=(time.process_time() - cpu) / rounds * 1000,
        wall_ms=(time.perf_counter() - wall) / rounds * 1000,
    )


def measure(
    admin_url: str, *, counts: list[int], rounds: int, repeats: int, name: str
) -> list[Figure]:
    """Each way at each count (the run of least CPU of ``repeats``), in database ``name``,
    made on ``admin_url``'s server for this and dropped after it."""
    engine = make_engine(create_database(admin_url, name), pool_size=2)
    figures = []
    try:
        migrate(engine)
        for count in counts:
            held = taken_leases(engine, count)
            for way, renew in WAYS.items():
                runs = [per_round(renew, engine, held, rounds) for _ in range(repeats)]
                figures.append(replace(min(runs, key=lambda run: run.cpu_ms), way=way))
    finally:
        engine.dispose()
        drop_database(admin_url, name)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--leases", default="25,100,375", help="comma-separated lease counts")
    parser.add_argument("--rounds", type=int, default=20, help="rounds per run")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each (best is kept)")
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    args = parser.parse_args()
    figures = measure(
        args.postgres_url,
        counts=[int(part) for part in args.leases.split(",")],
        rounds=args.rounds,
        repeats=args.repeats,
        name=throwaway_database_name(),
    )
    for figure in figures:
        print(
            f"{figure.leases:4d} leases, {figure.way:<24} {figure.cpu_ms:8.1f} ms CPU, "
            f"{figure.wall_ms:8.1f} ms wall per round"
        )


if __name__ == "__main__":
    main()
