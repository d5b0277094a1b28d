"""Database URLs: which of the two supported databases a URL names, the form SQLAlchemy is
given, and the form that may be shown.

Argue runs on SQLite (``sqlite:///path``, the default, a file in the data folder) or on
PostgreSQL through psycopg 3. A PostgreSQL URL may be written the way PostgreSQL's own tools
write it (``postgresql://`` or ``postgres://``) or with the driver named
(``postgresql+psycopg://``); all three reach psycopg 3, never psycopg2. Any other scheme is
refused. The password in a URL is a secret: ``masked`` is the only form to print or log, and
no error raised here quotes the URL (a password written without the ``@host`` after it reads
as the port, and the parsers' own errors would quote it).
"""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

Backend = Literal["sqlite", "postgresql"]

POSTGRESQL_DRIVER = "postgresql+psycopg"
_POSTGRESQL_SCHEMES = ("postgresql", "postgres", POSTGRESQL_DRIVER)
_SQLITE_SCHEMES = ("sqlite", "sqlite+pysqlite")


class DatabaseUrlError(ValueError):
    """A URL that names no database Argue runs on. The message never quotes the URL."""


def _scheme(url: str) -> str:
    scheme, separator, _ = url.partition("://")
    if not separator:
        raise DatabaseUrlError(
            "ARGUE_DATABASE_URL is not a URL: expected postgresql://user:password@host:5432/name "
            "or sqlite:///path/to/argue.db"
        )
    return scheme.lower()


def backend_of(url: str) -> Backend:
    scheme = _scheme(url)
    if scheme in _POSTGRESQL_SCHEMES:
        return "postgresql"
    if scheme in _SQLITE_SCHEMES:
        return "sqlite"
    shown = scheme if scheme.isascii() and len(scheme) <= 40 else "that scheme"
    raise DatabaseUrlError(
        f"ARGUE_DATABASE_URL names {shown}://, which Argue does not run on: use "
        "postgresql://user:password@host:5432/name or sqlite:///path/to/argue.db"
    )


def check_readable(url: str) -> None:
    """Refuse a database URL SQLAlchemy cannot take apart, with a message that quotes none of
    it; SQLAlchemy's own message would quote a port that is really the password. A scheme
    Argue does not run on is refused first, by name."""
    driven = for_sqlalchemy(url)
    try:
        make_url(driven)
    except (ArgumentError, ValueError):
        raise DatabaseUrlError(
            "ARGUE_DATABASE_URL cannot be read: its port is not a number, or it lacks a part "
            "(a password needs the @host after it): expected "
            "postgresql://user:password@host:5432/name"
        ) from None


def for_sqlalchemy(url: str) -> str:
    """``url`` with the psycopg 3 driver named when it is a PostgreSQL URL."""
    if backend_of(url) == "sqlite":
        return url
    return POSTGRESQL_DRIVER + url[url.index("://") :]


def passwords_in(url: str) -> list[str]:
    """The URL's password as written (percent-encoded) and as sent, for redaction."""
    try:
        written = urlsplit(url).password
        sent = make_url(url).password
    except (ArgumentError, ValueError):
        return []
    return sorted({str(value) for value in (written, sent) if value})


def masked(url: str) -> str:
    """``url`` with its password replaced by ``***``: the form for messages and logs."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        return "(an unreadable database URL)"
