"""ARGUE_DATABASE_URL: unset keeps SQLite in the data folder; a PostgreSQL URL in any of its
usual spellings reaches psycopg 3 with a pinging, bounded pool; any other scheme is refused
without quoting the URL; the password stays out of reprs and printed labels and is known to
redaction."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from pydantic import ValidationError

from app.cli.main import main
from app.config import Settings
from app.db import make_engine

PASSWORD = "p@ss:w0rd/5ecret"
QUOTED_PASSWORD = "p%40ss%3Aw0rd%2F5ecret"


@pytest.mark.parametrize(
    "written",
    [
        f"postgresql://argue:{QUOTED_PASSWORD}@db.example:5433/argue",
        f"postgres://argue:{QUOTED_PASSWORD}@db.example:5433/argue",
        f"postgresql+psycopg://argue:{QUOTED_PASSWORD}@db.example:5433/argue",
    ],
)
def test_every_spelling_of_a_postgresql_url_reaches_psycopg_3(
    monkeypatch: pytest.MonkeyPatch, written: str
) -> None:
    monkeypatch.setenv("ARGUE_DATABASE_URL", written)
    settings = Settings()

    assert settings.sqlalchemy_url == (
        f"postgresql+psycopg://argue:{QUOTED_PASSWORD}@db.example:5433/argue"
    )
    engine = make_engine(settings.sqlalchemy_url, pool_size=settings.database_pool_size)
    assert (engine.dialect.name, engine.dialect.driver) == ("postgresql", "psycopg")
    assert engine.url.password == PASSWORD
    assert engine.pool.size() == settings.database_pool_size  # type: ignore[attr-defined]
    engine.dispose()


def test_the_password_is_masked_in_the_label_and_repr_and_known_to_redaction(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ARGUE_DATABASE_URL", f"postgresql://argue:{QUOTED_PASSWORD}@db/argue")
    monkeypatch.setenv("ARGUE_DATABASE_POOL_SIZE", "3")
    settings = Settings()

    assert settings.database_label == "postgresql+psycopg://argue:***@db/argue"
    for shown in (settings.database_label, repr(settings), str(settings)):
        assert PASSWORD not in shown and QUOTED_PASSWORD not in shown
    assert {PASSWORD, QUOTED_PASSWORD} <= set(settings.secret_values())
    assert settings.database_pool_size == 3


def test_unset_keeps_sqlite_in_the_data_folder(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home")

    assert settings.sqlalchemy_url == f"sqlite:///{tmp_path / 'home' / 'argue.db'}"
    engine = make_engine(settings.sqlalchemy_url)
    assert engine.dialect.name == "sqlite"
    engine.dispose()


@pytest.mark.parametrize(
    "written",
    ["mysql://root:hunter2-5ecret@db/argue", "hunter2-5ecret", "oracle://u:hunter2-5ecret@h/x"],
)
def test_a_url_of_another_database_is_refused_without_quoting_it(
    monkeypatch: pytest.MonkeyPatch, written: str
) -> None:
    monkeypatch.setenv("ARGUE_DATABASE_URL", written)

    with pytest.raises(ValidationError) as refused:
        Settings()

    message = str(refused.value)
    assert "ARGUE_DATABASE_URL" in message and "postgresql://" in message
    assert "cannot be read" not in message  # the scheme is named as the fault
    assert "hunter2" not in message


@pytest.mark.parametrize("command", [["list"], ["serve", "--port", "0"]])
def test_a_command_on_a_database_that_does_not_answer_says_so_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"postgresql://argue:{QUOTED_PASSWORD}@127.0.0.1:{port}/argue"
    monkeypatch.setenv("ARGUE_DATABASE_URL", url)

    code = main(command)

    printed = capsys.readouterr()
    assert code == 1
    assert printed.err.startswith(
        f"argue: the database postgresql+psycopg://argue:***@127.0.0.1:{port}/argue could not "
        "be used: connection failed"
    )
    assert "Traceback" not in printed.err and len(printed.err.splitlines()) == 1
    for output in (printed.out, printed.err):
        assert PASSWORD not in output and QUOTED_PASSWORD not in output
