"""Fixtures for the local, CLI and registry tests: a clean environment and fake CLI binaries."""

from __future__ import annotations

import stat
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from app.config import Settings, get_settings

FakeCli = Callable[[str, str], Path]


@pytest.fixture(autouse=True)
def path_of_fakes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """Only fake binaries on PATH (keys and ARGUE_ settings are cleared by tests/conftest.py)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("ARGUE_HOME", str(tmp_path / "home"))
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.fixture
def settings() -> Settings:
    return Settings()


@pytest.fixture
def fake_cli(tmp_path: Path) -> FakeCli:
    """Write an executable Python script named ``name`` into the PATH of fakes.

    The script body runs with ``sys``, ``os``, ``time`` and ``pathlib.Path`` imported, and
    ``STATE`` set to a folder it may use to talk to the test (argv, pid and gate files).
    """

    def write(name: str, body: str) -> Path:
        state = tmp_path / "state"
        state.mkdir(exist_ok=True)
        script = tmp_path / "bin" / name
        header = (
            f"#!{sys.executable}\n"
            "import os, sys, time\n"
            "from pathlib import Path\n"
            f"STATE = Path({str(state)!r})\n"
        )
        script.write_text(header + textwrap.dedent(body), encoding="utf-8")
        script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        return state

    return write


ECHO_STDIN = """
(STATE / "argv.txt").write_text("\\n".join(sys.argv[1:]), encoding="utf-8")
sys.stdout.buffer.write(sys.stdin.buffer.read())
"""


@pytest.fixture
def echo_cli(fake_cli: FakeCli) -> Callable[[str], Path]:
    """A fake CLI that records its arguments in ``argv.txt`` and echoes its stdin."""
    return lambda name: fake_cli(name, ECHO_STDIN)
