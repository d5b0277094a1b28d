"""Where the app's files that are not Python live: the Jinja templates, the static files and the
Alembic migrations.

An installed wheel carries them inside the package (``app/templates``, ``app/static``,
``app/migrations``, mapped in pyproject.toml); a checkout, editable install included, keeps
them at the top level beside ``app/``.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def resource_dir(name: str) -> Path:
    bundled = PACKAGE_DIR / name
    return bundled if bundled.is_dir() else PACKAGE_DIR.parent / name


TEMPLATES_DIR = resource_dir("templates")
STATIC_DIR = resource_dir("static")
MIGRATIONS_DIR = resource_dir("migrations")
