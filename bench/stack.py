"""The system under test: the fake providers and the real app (uvicorn serving
``app.web.app:create_app``), each in its own process, over a fresh data folder.

The app is configured only through its environment, as a deployment would be: the data
folder, the providers' base URLs pointing at the fake, dummy keys, no concurrency cap that
the benchmark would hit, and retry/stall settings that fail fast instead of hiding trouble.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench import fake_providers, processes
from bench.clients import DUEL_PROVIDERS
from bench.fake_providers import Pace
from bench.stream_tap import StreamTap


@dataclass(frozen=True)
class StackOptions:
    paces: dict[str, Pace]
    tokens: int
    history_debates: int
    keep_home: bool = False
    access_log: bool = False
    # None: the app's own default (what a user who sets nothing gets).
    provider_worker: bool | None = None
    # Which live stream the viewers watch: "page" (a browser's) or "json".
    viewer_stream: str = "page"
    # The providers of a duel's two seats.
    duel_providers: tuple[str, str] = DUEL_PROVIDERS
    # A cluster's: time tokens to their Redis streams too (``bench.stream_tap``).
    stream_tap: bool = False


@dataclass
class Stack:
    options: StackOptions
    home: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="argue-bench-")))
    fake_url: str = ""
    app_url: str = ""
    fake_pid: int = 0
    app_pid: int = 0
    seed_seconds: float = 0.0

    def start(self) -> None:
        from bench.seed import seed_history, sqlite_url  # imports the app's database layer

        started = time.monotonic()
        seed_history(sqlite_url(self.home), count=self.options.history_debates)
        self.seed_seconds = time.monotonic() - started
        self._start_fake()
        self._start_app()

    def _start_fake(self) -> None:
        process, self.fake_url = fake_providers.start(
            tokens=self.options.tokens, paces=self.options.paces, log=self.home / "fake.log"
        )
        self.fake_pid = process.pid

    def _start_app(self) -> None:
        port = processes.free_port()
        args = app_command(port, access_log=self.options.access_log)
        process = processes.spawn(args, env=self.app_env(), log=self.home / "app.log")
        self.app_url = f"http://{processes.HOST}:{port}"
        processes.wait_until_ready(f"{self.app_url}/healthz", process)
        self.app_pid = process.pid
        self._wait_until_settled()

    def _wait_until_settled(self, *, limit: float = 20.0) -> None:
        """Until the app's start-up work is done (its provider worker imports the SDKs in
        the background): figures measured during it would be start-up, not service."""
        deadline = time.monotonic() + limit
        before = self.app_usage()
        while time.monotonic() < deadline:
            time.sleep(0.5)
            after = self.app_usage()
            settled = self.worker_pid() is not None or not self.options.provider_worker
            if settled and after.cpu_seconds - before.cpu_seconds < 0.05:
                return
            before = after

    def app_env(self) -> dict[str, str]:
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("ARGUE_", "ANTHROPIC_", "OPENAI_", "GEMINI_", "GOOGLE_"))
        }
        env.update(
            ARGUE_HOME=str(self.home),
            ANTHROPIC_BASE_URL=self.fake_url,
            OPENAI_BASE_URL=f"{self.fake_url}/v1",
            GOOGLE_GEMINI_BASE_URL=self.fake_url,
            ANTHROPIC_API_KEY="bench-dummy-key",
            OPENAI_API_KEY="bench-dummy-key",
            GEMINI_API_KEY="bench-dummy-key",
            ARGUE_MAX_CONCURRENT_DEBATES="100000",
            ARGUE_RETRY_MAX_ATTEMPTS="2",
            ARGUE_RETRY_BASE_DELAY="0.5",
            ARGUE_STALL_TIMEOUT="30",
            ARGUE_REQUEST_TIMEOUT="300",
            PYTHONUNBUFFERED="1",
        )
        if self.options.provider_worker is not None:
            env["ARGUE_PROVIDER_WORKER"] = "1" if self.options.provider_worker else "0"
        return env

    def viewer_url(self, debate_id: str) -> str:
        """The app the viewers of ``debate_id`` watch through: the one app here."""
        return self.app_url

    def process_usages(self) -> dict[str, processes.Usage]:
        """Each of the app's processes by name, for CPU per process over a window."""
        parts = {"web": processes.usage(self.app_pid)}
        worker = self.worker_pid()
        if worker is not None:
            with contextlib.suppress(OSError):  # it just stopped
                parts["provider worker"] = processes.usage(worker)
        return parts

    def app_usage(self) -> processes.Usage:
        """The app's CPU and memory: the web process and, when it runs, its provider worker."""
        web = processes.usage(self.app_pid)
        worker = self.worker_pid()
        if worker is None:
            return web
        try:
            extra = processes.usage(worker)
        except OSError:  # it just stopped
            return web
        return processes.Usage(
            web.at, web.cpu_seconds + extra.cpu_seconds, web.rss_bytes + extra.rss_bytes
        )

    def stream_tap(self, seconds: float) -> StreamTap | None:
        """A reader of the live events from outside the app for a measuring window: only a
        cluster's are there to read (in its Redis streams)."""
        return None

    def worker_pid(self) -> int | None:
        """The app's provider worker process, once its first call has started it."""
        return processes.child_running(self.app_pid, "app.providers.worker")

    def app_log_tail(self, lines: int = 20) -> str:
        path = self.home / "app.log"
        if not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        processes.stop_all()
        if not self.options.keep_home:
            shutil.rmtree(self.home, ignore_errors=True)


def app_command(port: int, *, access_log: bool) -> list[str]:
    """uvicorn serving the app on 127.0.0.1:``port``, configured by its environment."""
    args = processes.python(
        "-m",
        "uvicorn",
        "--factory",
        "app.web.app:create_app",
        "--host",
        processes.HOST,
        "--port",
        str(port),
        "--log-level",
        "warning",
        "--timeout-graceful-shutdown",
        "3",
    )
    if not access_log:
        args.append("--no-access-log")
    return args
