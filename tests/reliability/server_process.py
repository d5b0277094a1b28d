"""The real ``argue serve`` as a child process: started on a data folder, killed with
SIGKILL like a crashed or OOM-killed server, and started again on the same folder.

Its output (uvicorn's and the app's logs) goes to one file across restarts, so a test can
assert what never appeared there ("database is locked", tracebacks).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from app.config import PROJECT_ROOT
from tests.fakes.llm_server import FakeLLMServer

START_TIMEOUT = 30.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def fake_provider_env(server: FakeLLMServer, home: Path) -> dict[str, str]:
    """The environment of a server whose three HTTP providers all talk to the fake."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("ARGUE_", "ANTHROPIC_", "OPENAI_", "GEMINI_", "GOOGLE_"))
    }
    env.update(
        {
            "ARGUE_HOME": str(home),
            "ARGUE_RETRY_BASE_DELAY": "0.01",
            "ARGUE_RETRY_MAX_DELAY": "0.05",
            "ARGUE_STALL_TIMEOUT": "5",
            "ARGUE_REQUEST_TIMEOUT": "30",
            "ANTHROPIC_API_KEY": "test-anthropic-key",
            "ANTHROPIC_BASE_URL": server.anthropic_base_url,
            "GEMINI_API_KEY": "test-gemini-key",
            "GOOGLE_GEMINI_BASE_URL": server.gemini_base_url,
            "OPENAI_API_KEY": "test-openai-key",
            "OPENAI_BASE_URL": server.openai_base_url,
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


@dataclass
class ServerProcess:
    """``python -m app.cli.main serve`` on 127.0.0.1:``port``; one process at a time."""

    env: dict[str, str]
    log_path: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = START_TIMEOUT) -> None:
        assert self.process is None or self.process.poll() is not None, "already running"
        with self.log_path.open("ab") as log:
            log.write(f"--- start {self.starts + 1} ---\n".encode())
            log.flush()
            self.process = subprocess.Popen(
                [sys.executable, "-m", "app.cli.main", "serve", "--port", str(self.port)],
                cwd=PROJECT_ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.starts += 1
        self._wait_healthy(timeout)

    def _wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        with httpx.Client(timeout=2.0) as client:
            while time.monotonic() < deadline:
                assert self.process is not None
                if self.process.poll() is not None:
                    raise RuntimeError(f"argue serve exited early:\n{self.log_text()}")
                try:
                    if client.get(f"{self.url}/healthz").status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                time.sleep(0.05)
        raise RuntimeError(f"argue serve did not become healthy:\n{self.log_text()}")

    def kill(self) -> None:
        """SIGKILL: no shutdown hook, no flush, no lifespan exit — the process just ends."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)
        assert self.process.returncode == -signal.SIGKILL

    def stop(self) -> None:
        """A graceful stop (SIGTERM), falling back to SIGKILL; safe to call twice."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
