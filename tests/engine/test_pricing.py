"""The price table: exact names, dated variants, the free local model, the data folder's
file replacing and adding prices, and a malformed file refused with its path and fault."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest

from app import pricing
from app.pricing import ModelUse, PriceFileError, load_table, money, price_table, total


def write_prices(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "prices.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_bundled_table_states_list_prices_and_their_date() -> None:
    text = pricing.BUNDLED_PRICES.read_text(encoding="utf-8")
    table = load_table()
    assert "LIST PRICES" in text
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", table.as_of)
    assert f'as_of = "{table.as_of}"' in text


def test_each_provider_has_priced_models_in_the_bundled_table() -> None:
    table = load_table()
    assert table.price("anthropic", "claude-sonnet-4-5") == pricing.Price(
        Decimal("3.00"), Decimal("15.00")
    )
    assert table.price("gemini", "gemini-2.5-flash") == pricing.Price(
        Decimal("0.30"), Decimal("2.50")
    )
    assert table.price("openai", "gpt-5-mini") == pricing.Price(Decimal("0.25"), Decimal("2.00"))


@pytest.mark.parametrize(
    ("model", "listed"),
    [
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-3-5-haiku@20241022", "claude-3-5-haiku"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gemini-2.5-flash-preview-09-2025", "gemini-2.5-flash"),
        ("gemini-2.5-flash-latest", "gemini-2.5-flash"),
        ("models/gemini-2.5-pro", "gemini-2.5-pro"),
    ],
)
def test_a_dated_variant_costs_what_its_listed_name_costs(model: str, listed: str) -> None:
    table = load_table()
    assert table.price("anthropic", model) is not None
    assert table.price("anthropic", model) == table.price("anthropic", listed)


@pytest.mark.parametrize("model", ["claude-opus-4-9", "gpt-5-turbo", "gpt-5.5x", "llama3.1:8b"])
def test_a_name_that_only_starts_like_a_listed_one_has_no_price(model: str) -> None:
    assert load_table().price("openai", model) is None


def test_the_embedded_local_model_costs_nothing_whatever_its_name() -> None:
    table = load_table()
    cost = table.cost(provider="local", model="anything", input_tokens=5000, output_tokens=900)
    assert cost == Decimal(0)


def test_a_cost_is_tokens_times_the_price_per_million() -> None:
    cost = load_table().cost(
        provider="anthropic", model="claude-sonnet-4-5", input_tokens=1000, output_tokens=200
    )
    assert cost == Decimal("0.006")  # 1000 × $3/M + 200 × $15/M


def test_the_data_folder_file_replaces_and_adds_prices(tmp_path: Path) -> None:
    write_prices(
        tmp_path,
        '[models]\n"claude-sonnet-4-5" = { input = 1, output = 2.5 }\n'
        '"llama3.1:8b" = { input = 0, output = 0 }\n',
    )
    table = price_table(tmp_path)
    assert table.price("anthropic", "claude-sonnet-4-5") == pricing.Price(
        Decimal(1), Decimal("2.5")
    )
    assert table.price("openai", "llama3.1:8b") == pricing.Price(Decimal(0), Decimal(0))
    # The rest of the bundled table stays.
    assert table.price("openai", "gpt-5-mini") == load_table().price("openai", "gpt-5-mini")
    # A dated variant follows its replaced price.
    assert table.price("anthropic", "claude-sonnet-4-5-20250929") == table.price(
        "anthropic", "claude-sonnet-4-5"
    )


def test_an_edited_price_file_is_read_again(tmp_path: Path) -> None:
    path = write_prices(tmp_path, '[models]\n"my-model" = { input = 1, output = 1 }\n')
    assert price_table(tmp_path).price("openai", "my-model") == pricing.Price(
        Decimal(1), Decimal(1)
    )
    path.write_text('[models]\n"my-model" = { input = 20, output = 40 }\n', encoding="utf-8")
    assert price_table(tmp_path).price("openai", "my-model") == pricing.Price(
        Decimal(20), Decimal(40)
    )


def test_malformed_toml_is_refused_with_its_path_and_line(tmp_path: Path) -> None:
    path = write_prices(tmp_path, '[models]\n"my-model" = { input = 1, output = }\n')
    with pytest.raises(PriceFileError) as refused:
        price_table(tmp_path)
    message = str(refused.value)
    assert str(path) in message
    assert "line 2" in message


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ('[models]\n"my-model" = { input = "cheap", output = 1 }\n', "models.my-model.input"),
        ('[models]\n"my-model" = { input = 1 }\n', "output is missing"),
        ('[models]\n"my-model" = { input = -1, output = 1 }\n', "models.my-model.input"),
        ('[models]\n"my-model" = { input = true, output = 1 }\n', "models.my-model.input"),
        ('[models]\n"my-model" = { input = 1, output = 2, cached = 3 }\n', "'cached'"),
        ('[models]\n"my-model" = 3\n', "models.my-model must be a table"),
        ('[model]\n"my-model" = { input = 1, output = 2 }\n', "unknown key 'model'"),
        ("models = 3\n", "'models' must be a table"),
    ],
)
def test_a_bad_entry_is_refused_naming_the_file_and_key(
    tmp_path: Path, text: str, names: str
) -> None:
    path = write_prices(tmp_path, text)
    with pytest.raises(PriceFileError) as refused:
        price_table(tmp_path)
    assert str(path) in str(refused.value)
    assert names in str(refused.value)


def test_a_file_gone_bad_while_running_keeps_the_last_good_prices(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write_prices(tmp_path, '[models]\n"my-model" = { input = 1, output = 1 }\n')
    good = price_table(tmp_path)
    path.write_text("[models\n", encoding="utf-8")
    assert price_table(tmp_path) is good
    assert str(path) in caplog.text


def test_an_unknown_cost_reads_unknown_never_zero() -> None:
    assert money(None) == "unknown"
    assert money(Decimal(0)) == "$0.00"
    assert money(Decimal("0.0128")) == "$0.0128"
    assert money(Decimal("0.00003")) == "<$0.0001"
    assert money(Decimal("12.345")) == "$12.35"
    assert money(Decimal("0.5")) == "$0.50"


def test_a_total_with_an_unpriced_model_is_unknown_or_at_least_the_priced_part() -> None:
    table = load_table()
    priced = ModelUse("anthropic", "claude-sonnet-4-5", 1000, 200)
    unpriced = ModelUse("openai", "llama3.1:8b", 500, 500)
    free = ModelUse("local", "smollm2", 500, 500)

    mixed = total(table, [priced, unpriced])
    assert mixed.amount is None
    assert mixed.unpriced_models == ("llama3.1:8b",)
    assert mixed.text == "at least $0.0060"

    only_unpriced = total(table, [free, unpriced])
    assert only_unpriced.amount is None and only_unpriced.text == "unknown"

    known = total(table, [priced, free])
    assert known.amount == Decimal("0.006") and known.text == "$0.0060"
