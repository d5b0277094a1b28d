"""The system under test as a team deploys it: the fake providers, two web nodes and W
``argue worker`` processes, all sharing a throwaway PostgreSQL database and a Redis key prefix.

The web nodes (uvicorn serving ``app.web.app:create_app``, as the in-process stack does) only
enqueue debates (``ARGUE_RUN_DEBATES=workers``); the workers run them and publish their events
to Redis, from where either node streams them. Every process gets the same environment.

The database (``argue_bench_<random>``) is made on the PostgreSQL server, migrated and seeded
with the stored history before anything starts; on the way out, however the run ends, the
processes are stopped, then the database is dropped and every Redis key under the prefix
(``argue-bench-<random>:``) deleted.
"""

from __future__ import annotations

import contextlib
import math
import secrets
import shutil
import time
import zlib
from dataclasses import dataclass, field

import redis
from sqlalchemy import text
from sqlalchemy.engine import Engine, make_url

from bench import processes
from bench.stack import Stack, app_command
from bench.stream_tap import StreamTap

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
NODES = ("a", "b")
HOW_TO_START = (
    "the cluster benchmark needs PostgreSQL (trust authentication for user postgres on "
    "127.0.0.1:5432, or --postgres-url for a user that may create databases) and Redis 6.2+ "
    "(127.0.0.1:6379, or --redis-url): e.g. `pg_ctlcluster 15 main start` and "
    "`redis-server --port 6379 --save '' --appendonly no --daemonize yes`"
)


class ClusterUnavailable(RuntimeError):
    """PostgreSQL or Redis did not answer: the message says which and how to start them."""


@dataclass(frozen=True)
class ClusterOptions:
    workers: int
    worker_concurrency: int
    postgres_url: str = DEFAULT_POSTGRES_URL  # any database there: ours is made beside it
    redis_url: str = DEFAULT_REDIS_URL


def worker_concurrency(largest_step: int, workers: int) -> int:
    """Debates each worker may run at once: its share of the largest step, with a quarter
    more so that a queue that hands one worker more than its share does not hold debates
    back (the app accepts 1 to 1000)."""
    return max(4, min(1000, math.ceil(largest_step * 1.25 / workers)))


def missing_services(options: ClusterOptions) -> str | None:
    """What of PostgreSQL and Redis does not answer, with how to start them; None if both do."""
    problems = []
    try:
        engine = _admin_engine(options.postgres_url)
        try:
            with engine.connect() as connection:
                connection.execute(text("SELECT 1"))
        finally:
            engine.dispose()
    except Exception as error:  # any failure to reach or use the server
        problems.append(f"PostgreSQL: {str(error).splitlines()[0]}")
    client = redis.Redis.from_url(options.redis_url, socket_connect_timeout=1.0, socket_timeout=1.0)
    try:
        client.ping()
    except (redis.RedisError, OSError) as error:
        problems.append(f"Redis: {error}")
    finally:
        client.close()
    return f"{'; '.join(problems)} — {HOW_TO_START}" if problems else None


def _admin_engine(url: str) -> Engine:
    from app.db import make_engine  # the app's database layer, imported when first needed

    engine = make_engine(url, pool_size=1)
    return engine.execution_options(isolation_level="AUTOCOMMIT")


@dataclass
class ClusterStack(Stack):
    """The in-process stack's interface (``app_url`` is node A, where debates are started;
    ``app_usage`` sums every web node and worker) plus what only a cluster has."""

    cluster: ClusterOptions = field(default_factory=lambda: ClusterOptions(1, 4))
    database_name: str = ""
    database_url: str = ""
    redis_prefix: str = ""
    node_urls: list[str] = field(default_factory=list)
    node_pids: list[int] = field(default_factory=list)
    worker_pids: list[int] = field(default_factory=list)

    def start(self) -> None:
        from bench.seed import seed_history  # imports the app's database layer

        problem = missing_services(self.cluster)
        if problem:
            raise ClusterUnavailable(problem)
        self.home.mkdir(parents=True, exist_ok=True)
        self.redis_prefix = f"argue-bench-{secrets.token_hex(6)}:"
        self._create_database()
        started = time.monotonic()
        seed_history(self.database_url, count=self.options.history_debates)
        self.seed_seconds = time.monotonic() - started
        self._start_fake()
        self._start_cluster()

    def _create_database(self) -> None:
        self.database_name = throwaway_database_name()  # a Ctrl-C from here on drops it
        self.database_url = create_database(self.cluster.postgres_url, self.database_name)

    def _start_cluster(self) -> None:
        env = self.app_env()
        # Started together; the schema is already at head, and the queue's tables are made
        # under a lock by whichever process comes first.
        nodes = []
        for name in NODES:
            port = processes.free_port()
            process = processes.spawn(
                app_command(port, access_log=self.options.access_log),
                env=env,
                log=self.home / f"node-{name}.log",
            )
            nodes.append((f"http://{processes.HOST}:{port}", process))
        workers = []
        for number in range(1, self.cluster.workers + 1):
            name = f"bench-worker-{number}"
            log = self.home / f"worker-{number}.log"
            args = processes.python("-m", "app.cli.main", "worker", "--name", name)
            workers.append((name, log, processes.spawn(args, env=env, log=log)))
        try:
            for url, process in nodes:
                processes.wait_until_ready(f"{url}/healthz", process)
                self.node_urls.append(url)
                self.node_pids.append(process.pid)
            for name, log, process in workers:
                processes.wait_for_log(log, f"worker {name}: up to", process)
                self.worker_pids.append(process.pid)
        except RuntimeError as error:  # say why, before stop() removes the logs
            raise RuntimeError(f"{error}\n{self.app_log_tail()}") from error
        self.app_url, self.app_pid = self.node_urls[0], self.node_pids[0]
        self._wait_until_quiet()

    def _wait_until_quiet(self, *, limit: float = 20.0) -> None:
        """Until start-up work (imports, the queue's first polls) stops using CPU."""
        deadline = time.monotonic() + limit
        before = self.app_usage()
        while time.monotonic() < deadline:
            time.sleep(0.5)
            after = self.app_usage()
            if after.cpu_seconds - before.cpu_seconds < 0.05 * len(self.process_usages()):
                return
            before = after

    def app_env(self) -> dict[str, str]:
        env = super().app_env()
        env.update(
            ARGUE_DATABASE_URL=self.database_url,
            ARGUE_REDIS_URL=self.cluster.redis_url,
            ARGUE_REDIS_KEY_PREFIX=self.redis_prefix,
            ARGUE_RUN_DEBATES="workers",
            ARGUE_WORKER_CONCURRENCY=str(self.cluster.worker_concurrency),
        )
        return env

    def viewer_url(self, debate_id: str) -> str:
        """The node the viewers of ``debate_id`` watch through, chosen as the cluster's
        reverse proxy chooses (``deploy/nginx.conf`` hashes on the debate's id; its hash is
        nginx's own, so not always the same node, but the same split): every viewer of a
        debate on one node, the debates spread over both, and each node reading and
        rendering only its own debates' events. Debates start through node A."""
        return self.node_urls[zlib.crc32(debate_id.encode()) % len(self.node_urls)]

    def process_usages(self) -> dict[str, processes.Usage]:
        parts = {
            f"web {name}": processes.usage(pid)
            for name, pid in zip(NODES, self.node_pids, strict=True)
        }
        for number, pid in enumerate(self.worker_pids, start=1):
            parts[f"worker {number}"] = processes.usage(pid)
            calls = processes.child_running(pid, "app.providers.worker")
            if calls is not None:
                with contextlib.suppress(OSError):  # it just stopped
                    parts[f"worker {number} (its provider calls)"] = processes.usage(calls)
        return parts

    def app_usage(self) -> processes.Usage:
        """Every web node and worker: CPU seconds and resident memory summed."""
        parts = list(self.process_usages().values())
        return processes.Usage(
            min(p.at for p in parts),
            sum(p.cpu_seconds for p in parts),
            sum(p.rss_bytes for p in parts),
        )

    def stream_tap(self, seconds: float) -> StreamTap | None:
        if not self.options.stream_tap:
            return None
        return StreamTap(
            redis_url=self.cluster.redis_url,
            prefix=self.redis_prefix,
            seconds=seconds,
            home=self.home,
        )

    def worker_pid(self) -> int | None:
        return None  # web nodes call no provider; the workers' own are in process_usages

    def app_log_tail(self, lines: int = 20) -> str:
        tails = []
        for path in sorted(self.home.glob("node-*.log")) + sorted(self.home.glob("worker-*.log")):
            tail = path.read_text(errors="replace").splitlines()[-lines:]
            if tail:
                tails.append(f"--- {path.name}\n" + "\n".join(tail))
        return "\n".join(tails)

    def stop(self) -> None:
        """Processes first (so nothing writes any more), then the database and the Redis
        keys; each step runs even if one before it failed. Safe to call twice."""
        try:
            processes.stop_all()
        finally:
            try:
                self._drop_database()
            finally:
                try:
                    self._delete_redis_keys()
                finally:
                    if not self.options.keep_home:
                        shutil.rmtree(self.home, ignore_errors=True)

    def _drop_database(self) -> None:
        if not self.database_name:
            return
        drop_database(self.cluster.postgres_url, self.database_name)
        self.database_name = ""

    def _delete_redis_keys(self) -> None:
        if not self.redis_prefix:
            return
        client = redis.Redis.from_url(self.cluster.redis_url)
        try:
            keys = list(client.scan_iter(match=f"{self.redis_prefix}*", count=1000))
            for start in range(0, len(keys), 1000):
                client.delete(*keys[start : start + 1000])
        finally:
            client.close()
        self.redis_prefix = ""


def throwaway_database_name() -> str:
    return f"argue_bench_{secrets.token_hex(5)}"


def create_database(admin_url: str, name: str) -> str:
    """Create database ``name`` on ``admin_url``'s server; its URL."""
    _as_admin(admin_url, f'CREATE DATABASE "{name}"')
    return make_url(admin_url).set(database=name).render_as_string(hide_password=False)


def drop_database(admin_url: str, name: str) -> None:
    _as_admin(admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _as_admin(admin_url: str, statement: str) -> None:
    engine = _admin_engine(admin_url)
    try:
        with engine.connect() as connection:
            connection.execute(text(statement))
    finally:
        engine.dispose()


def redis_keys(url: str, prefix: str) -> list[bytes]:
    """The keys under ``prefix`` (for checking that a run left none behind)."""
    client = redis.Redis.from_url(url)
    try:
        return list(client.scan_iter(match=f"{prefix}*", count=1000))
    finally:
        client.close()


def database_exists(admin_url: str, name: str) -> bool:
    engine = _admin_engine(admin_url)
    try:
        with engine.connect() as connection:
            found = connection.execute(
                text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": name}
            ).first()
    finally:
        engine.dispose()
    return found is not None
