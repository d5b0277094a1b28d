"""A real install, not an editable one: the wheel that ``pip install .`` or ``pipx install``
builds, installed into a fresh virtualenv outside the checkout, must migrate a database and
serve its pages with the templates, static files and migrations it carries itself.

The new virtualenv borrows the dependencies already installed for the tests (a path file
naming this environment's site-packages), so the test needs no network and no second
llama.cpp build; Argue itself comes only from the wheel.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.config import PROJECT_ROOT
from tests.reliability.server_process import free_port

pytestmark = pytest.mark.timeout(240)

START_TIMEOUT = 60.0


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
            "--quiet", "--wheel-dir", str(out), str(PROJECT_ROOT),
        ],
        check=True,
    )  # fmt: skip
    (built,) = out.glob("argue-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv holding the wheel; returns its ``bin`` folder."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(site, "argue_test_dependencies.pth").write_text("\n".join(sorted(ours)) + "\n")
    subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", str(wheel)],
        check=True,
    )
    return venv / "bin"


def clean_env(home: Path) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("ARGUE_", "ANTHROPIC_", "OPENAI_", "GEMINI_", "GOOGLE_"))
        and name not in ("PYTHONPATH", "VIRTUAL_ENV")
    }
    env["ARGUE_HOME"] = str(home)
    return env


@pytest.fixture
def served(installed: Path, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``argue serve`` from the installed wheel, run from a folder that is not the checkout."""
    home = tmp_path / "home"
    port = free_port()
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [installed / "argue", "serve", "--port", str(port)],
            cwd=tmp_path,
            env=clean_env(home),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, process, log)
        yield url, home
    finally:
        process.terminate()
        process.wait(timeout=20)


def wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    import time

    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"argue serve exited:\n{log.read_text(errors='replace')}")
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError(f"argue serve never became healthy:\n{log.read_text(errors='replace')}")


def test_the_wheel_carries_templates_static_files_and_migrations(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        *(f"app/{path.relative_to(PROJECT_ROOT)}" for path in files_under("templates")),
        *(f"app/{path.relative_to(PROJECT_ROOT)}" for path in files_under("static")),
        *(f"app/{path.relative_to(PROJECT_ROOT)}" for path in files_under("migrations")),
    }
    assert expected - names == set()


def files_under(folder: str) -> list[Path]:
    return [
        path
        for path in (PROJECT_ROOT / folder).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    ]


def test_the_installed_app_comes_from_the_wheel_not_the_checkout(
    installed: Path, tmp_path: Path
) -> None:
    where = subprocess.run(
        [installed / "python", "-c", "import app.resources as r; print(r.TEMPLATES_DIR)"],
        cwd=tmp_path, env=clean_env(tmp_path), check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    assert Path(where).is_relative_to(installed.parent)
    assert not Path(where).is_relative_to(PROJECT_ROOT)


def test_the_installed_wheel_migrates_a_database_and_serves_pages(
    served: tuple[str, Path],
) -> None:
    url, home = served
    page = httpx.get(f"{url}/", timeout=10)
    assert page.status_code == 200
    assert 'name="topic"' in page.text
    style = httpx.get(f"{url}/static/argue.css", timeout=10)
    assert style.status_code == 200
    assert style.text.strip()
    assert httpx.get(f"{url}/debates", timeout=10).status_code == 200
    (database,) = home.glob("*.db")
    with sqlite3.connect(database) as connection:
        (version,) = connection.execute("select version_num from alembic_version").fetchone()
        tables = {row[0] for row in connection.execute("select name from sqlite_master")}
    latest = sorted(p.stem for p in (PROJECT_ROOT / "migrations" / "versions").glob("*.py"))[-1]
    assert latest.startswith(version)
    assert {"debate", "turn"} <= tables
