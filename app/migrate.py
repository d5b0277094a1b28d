"""Bringing a database to the newest schema with the Alembic migrations in ``migrations/``."""

from __future__ import annotations

from alembic import command
from alembic.config import Config
from sqlalchemy.engine import Engine

from app.resources import MIGRATIONS_DIR


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def migrate(engine: Engine) -> None:
    """Create or upgrade the schema; safe to call on every start."""
    config = alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
