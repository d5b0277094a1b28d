"""Prices: what a model's tokens cost in US dollars, and what turns and debates cost.

The table ships in ``app/prices.toml``: the providers' list prices per million input and
output tokens, as of the date written there. A ``prices.toml`` in the data folder
(``ARGUE_HOME``) replaces or adds entries, model by model. A malformed file is refused with
its path and the line or key at fault (``PriceFileError``), never half read.

Which price a model has:

1. the embedded local provider costs nothing, whatever its model;
2. the model's exact name in the table;
3. the name without a leading ``models/`` (how Gemini lists its models);
4. a dated variant of a listed name: the name followed by ``-`` or ``@`` and a date
   (``20250929``, ``2024-08-06``), a three-digit version (``001``), ``latest``, or ``preview``
   with an optional ``-MM-YYYY`` date. So ``claude-sonnet-4-5-20250929`` is priced as
   ``claude-sonnet-4-5``; ``claude-opus-4-9`` is *not* priced as ``claude-opus-4``.

Anything else has no price. An unknown cost is ``None`` and reads "unknown": never 0. A total
over turns with some unknown costs is unknown as a number (the API's ``null``); in words it
is "at least" what the priced turns cost, or "unknown" when they cost nothing.
"""

from __future__ import annotations

import logging
import re
import threading
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

BUNDLED_PRICES = Path(__file__).with_name("prices.toml")
OVERRIDE_NAME = "prices.toml"
FREE_PROVIDERS = frozenset({"local"})
# How the reason of a debate stopped by its money budget begins (the runner writes it).
BUDGET_REACHED = "money budget reached"
PER_TOKENS = Decimal(1_000_000)
CENT = Decimal("0.01")

_DATED_SUFFIX = re.compile(
    r"[-@](?:\d{8}|\d{4}-\d{2}-\d{2}|\d{3}|latest|preview(?:-\d{2}-\d{4})?)$"
)


class PriceFileError(ValueError):
    """A price file that cannot be read: the message names the file and what is wrong."""


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens."""

    input: Decimal
    output: Decimal

    def cost(self, *, input_tokens: int, output_tokens: int) -> Decimal:
        return (input_tokens * self.input + output_tokens * self.output) / PER_TOKENS


FREE = Price(Decimal(0), Decimal(0))


@dataclass(frozen=True)
class PriceTable:
    prices: Mapping[str, Price]
    as_of: str
    override_path: Path | None = None

    def price(self, provider: str, model: str) -> Price | None:
        if provider in FREE_PROVIDERS:
            return FREE
        name = model.removeprefix("models/")
        for candidate in (model, name, _DATED_SUFFIX.sub("", name)):
            if candidate in self.prices:
                return self.prices[candidate]
        return None

    def cost(
        self, *, provider: str, model: str, input_tokens: int, output_tokens: int
    ) -> Decimal | None:
        """What the tokens cost; None when the model has no price."""
        price = self.price(provider, model)
        if price is None:
            return None
        return price.cost(input_tokens=input_tokens, output_tokens=output_tokens)

    def where_to_add(self) -> str:
        return str(self.override_path) if self.override_path else f"ARGUE_HOME/{OVERRIDE_NAME}"


@dataclass(frozen=True)
class ModelUse:
    """Tokens one model used (in one turn, or summed over a debate's turns)."""

    provider: str
    model: str
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class Total:
    """What a set of turns cost: the priced part, and the models that have no price."""

    priced: Decimal = Decimal(0)
    unpriced_models: tuple[str, ...] = field(default=())

    @property
    def known(self) -> bool:
        return not self.unpriced_models

    @property
    def amount(self) -> Decimal | None:
        """The total, or None when any model used has no price."""
        return self.priced if self.known else None

    @property
    def text(self) -> str:
        return total_text(self)


def total(prices: PriceTable, uses: Iterable[ModelUse]) -> Total:
    priced = Decimal(0)
    unpriced: list[str] = []
    for use in uses:
        cost = prices.cost(
            provider=use.provider,
            model=use.model,
            input_tokens=use.input_tokens,
            output_tokens=use.output_tokens,
        )
        if cost is None:
            if use.model not in unpriced:
                unpriced.append(use.model)
        else:
            priced += cost
    return Total(priced=priced, unpriced_models=tuple(unpriced))


def money(amount: Decimal | None) -> str:
    """An amount for people: "unknown" for None; cents from $1 up, and for whole cents;
    otherwise four decimals (a turn often costs a fraction of a cent); "<$0.0001" for what
    would read as nothing. Rounded half up."""
    if amount is None:
        return "unknown"
    if amount == 0:
        return "$0.00"
    if amount >= 1 or amount == amount.quantize(CENT):
        return f"${amount.quantize(CENT, ROUND_HALF_UP):,}"
    if amount < Decimal("0.0001"):
        return "<$0.0001"
    return f"${amount.quantize(Decimal('0.0001'), ROUND_HALF_UP)}"


def total_text(spent: Total) -> str:
    """A total for people: the amount; "at least" the priced part when some models have no
    price; "unknown" when only unpriced models cost anything."""
    if spent.known:
        return money(spent.priced)
    if spent.priced > 0:
        return f"at least {money(spent.priced)}"
    return "unknown"


# -- reading the tables -------------------------------------------------------------------


def load_table(override: Path | None = None) -> PriceTable:
    """The bundled table, with ``override``'s entries on top when it is given."""
    bundled = _read(BUNDLED_PRICES)
    prices = dict(_models(BUNDLED_PRICES, bundled))
    if override is not None:
        extra = _read(override)
        prices.update(_models(override, extra))
    return PriceTable(prices=prices, as_of=str(bundled.get("as_of", "")), override_path=override)


@lru_cache(maxsize=1)
def bundled_table() -> PriceTable:
    """The bundled list prices alone (for what has no data folder at hand)."""
    return load_table()


_cache: dict[Path, tuple[tuple[int, int] | None, PriceTable]] = {}
_cache_lock = threading.Lock()


def price_table(data_dir: Path) -> PriceTable:
    """The table for a data folder, read again only when its ``prices.toml`` changes.

    A file that turns bad while the app runs is logged and the last good table kept: the
    app checks the file when it starts (``check``), so a page never fails over it."""
    path = data_dir.expanduser() / OVERRIDE_NAME
    stamp = _stamp(path)
    with _cache_lock:
        cached = _cache.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        try:
            table = load_table(path if stamp is not None else None)
        except PriceFileError as error:
            if cached is None:
                raise
            log.error("%s; keeping the prices read before", error)
            return cached[1]
        if stamp is None:
            table = PriceTable(prices=table.prices, as_of=table.as_of, override_path=path)
        _cache[path] = (stamp, table)
        return table


def check(data_dir: Path) -> PriceTable:
    """Read the data folder's prices now: a bad file stops a command or the server at start."""
    return price_table(data_dir)


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise PriceFileError(f"{path}: cannot be read ({error.strerror})") from error
    return (info.st_mtime_ns, info.st_size)


def _read(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle, parse_float=Decimal)
    except tomllib.TOMLDecodeError as error:
        raise PriceFileError(f"{path}: not valid TOML: {error}") from error
    except UnicodeDecodeError as error:
        raise PriceFileError(f"{path}: not UTF-8 text ({error.reason})") from error
    except OSError as error:
        raise PriceFileError(f"{path}: cannot be read ({error.strerror})") from error


_TOP_KEYS = {"as_of", "models"}
_EXAMPLE = '"model-name" = { input = 3.00, output = 15.00 }'


def _models(path: Path, data: Mapping[str, Any]) -> dict[str, Price]:
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise PriceFileError(
            f"{path}: unknown key {unknown[0]!r}; a price file has a [models] table "
            f"(and optionally as_of)"
        )
    models = data.get("models", {})
    if not isinstance(models, dict):
        raise PriceFileError(f"{path}: 'models' must be a table: [models] then {_EXAMPLE}")
    return {name: _price(path, name, entry) for name, entry in models.items()}


def _price(path: Path, name: str, entry: Any) -> Price:
    where = f"{path}: models.{_key(name)}"
    if not isinstance(entry, dict):
        raise PriceFileError(f"{where} must be a table like {_EXAMPLE}")
    extra = sorted(set(entry) - {"input", "output"})
    if extra:
        raise PriceFileError(f"{where}: unknown key {extra[0]!r}; only input and output")
    return Price(input=_dollars(where, entry, "input"), output=_dollars(where, entry, "output"))


def _dollars(where: str, entry: Mapping[str, Any], key: str) -> Decimal:
    if key not in entry:
        raise PriceFileError(f"{where}: {key} is missing (US dollars per million tokens)")
    value = entry[key]
    if isinstance(value, bool) or not isinstance(value, int | Decimal):
        raise PriceFileError(
            f"{where}.{key} must be a number of US dollars per million tokens, not {value!r}"
        )
    amount = Decimal(value)
    if not amount.is_finite() or amount < 0:
        raise PriceFileError(f"{where}.{key} must be zero or more, not {value}")
    return amount


def _key(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else f'"{name}"'
