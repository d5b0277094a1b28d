"""What a debate costs, worked out from the tokens its turns reported on the wire (the fake
server's counts) at the bundled list prices; and the money budget, which stops a debate like
the token budget does and cannot start without every seat's price."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from app import export, store
from app.cli.browse import render_debate
from app.config import Settings
from app.db import session_scope
from app.debates import BudgetError, DebateRequest, SeatChoice, create, prepare
from app.events import EventHub
from app.pricing import load_table, price_table
from app.providers.registry import build_providers, provider_statuses
from app.runner import Runner
from app.spending import debate_total, turn_cost
from tests.fakes.llm_server import FakeLLMServer

SONNET = "claude-sonnet-4-6"  # $3 in / $15 out per million tokens
FLASH = "gemini-2.5-flash"  # $0.30 in / $2.50 out per million tokens
# Every Claude call: 1000 in, 200 out = $0.003 + $0.003; every Gemini call: 2000 in, 100 out
# = $0.0006 + $0.00025.
SONNET_TURN = Decimal("0.006")
FLASH_TURN = Decimal("0.00085")


def start(engine: Engine, settings: Settings, **request: Any) -> str:
    prepared = prepare(
        DebateRequest(**request),
        statuses=provider_statuses(settings),
        prices=price_table(settings.data_dir),
    )
    return create(engine, prepared=prepared, settings=settings).id


async def run(engine: Engine, hub: EventHub, settings: Settings, debate_id: str) -> Any:
    runner = Runner(engine=engine, hub=hub, providers=build_providers(settings), settings=settings)
    return await runner.run(debate_id)


def saved_turns(engine: Engine, debate_id: str) -> list[Any]:
    with session_scope(engine) as session:
        return store.turns_of(session, debate_id=debate_id)


def script_sonnet_and_flash(fake_llm: FakeLLMServer) -> None:
    fake_llm.script(
        provider="anthropic", reply="Claude says so.", input_tokens=1000, output_tokens=200, times=5
    )
    fake_llm.script(
        provider="gemini", reply="Gemini disagrees.", input_tokens=2000, output_tokens=100, times=5
    )


def sonnet_and_flash() -> dict[str, SeatChoice]:
    return {
        "claude": SeatChoice(provider="anthropic", model=SONNET),
        "gemini": SeatChoice(provider="gemini", model=FLASH),
    }


async def test_a_debate_costs_each_turns_reported_tokens_at_list_prices(
    engine: Engine, hub: EventHub, settings: Settings, fake_llm: FakeLLMServer
) -> None:
    script_sonnet_and_flash(fake_llm)
    debate_id = start(engine, settings, topic="Cost?", rounds=1, seats=sonnet_and_flash())

    result = await run(engine, hub, settings, debate_id)

    assert result.status == "completed"
    turns = saved_turns(engine, debate_id)
    prices = price_table(settings.data_dir)
    by_turn = {(t.phase, t.model): turn_cost(prices, t) for t in turns}
    assert by_turn == {
        ("opening", SONNET): SONNET_TURN,
        ("opening", FLASH): FLASH_TURN,
        ("synthesis", SONNET): SONNET_TURN,
    }
    with session_scope(engine) as session:
        spent = debate_total(session, prices=prices, debate_id=debate_id)
    assert spent.amount == Decimal("0.01285")
    assert spent.text == "$0.0129"


async def test_reports_show_each_turns_cost_and_the_total(
    engine: Engine, hub: EventHub, settings: Settings, fake_llm: FakeLLMServer
) -> None:
    script_sonnet_and_flash(fake_llm)
    debate_id = start(engine, settings, topic="Cost?", rounds=1, seats=sonnet_and_flash())
    await run(engine, hub, settings, debate_id)
    with session_scope(engine) as session:
        debate = store.get_debate(session, debate_id=debate_id)
        assert debate is not None
        turns = store.turns_of(session, debate_id=debate_id)
    prices = price_table(settings.data_dir)

    transcript = export.transcript_markdown(debate, turns, prices)
    assert f"- **Cost**: $0.0129 at list prices as of {prices.as_of}" in transcript
    assert transcript.count("_Cost: $0.0060 · 1,000 in / 200 out tokens_") == 1  # the opening
    assert "_Cost: $0.0009 · 2,000 in / 100 out tokens_" in transcript

    shown = render_debate(debate, turns, prices)
    assert "Cost:     $0.0129 at list prices" in shown
    assert shown.count("· $0.0060") == 2  # the opening and the synthesis


async def test_an_unpriced_model_costs_unknown_never_zero(
    engine: Engine, hub: EventHub, settings: Settings, fake_llm: FakeLLMServer
) -> None:
    fake_llm.script(reply="Words.", input_tokens=1000, output_tokens=200, times=5)
    seats = {
        "claude": SeatChoice(provider="anthropic", model=SONNET),
        "gemini": SeatChoice(provider="openai", model="house-model-7b"),
    }
    debate_id = start(engine, settings, topic="Unpriced?", rounds=1, seats=seats)
    await run(engine, hub, settings, debate_id)
    turns = saved_turns(engine, debate_id)
    prices = price_table(settings.data_dir)
    unpriced = [t for t in turns if t.model == "house-model-7b"]
    assert unpriced and all(turn_cost(prices, t) is None for t in unpriced)
    with session_scope(engine) as session:
        debate = store.get_debate(session, debate_id=debate_id)
        assert debate is not None
        spent = debate_total(session, prices=prices, debate_id=debate_id)
    assert spent.amount is None
    assert spent.text == "at least $0.0120"  # the two Claude turns
    transcript = export.transcript_markdown(debate, turns, prices)
    assert "_Cost: unknown · 1,000 in / 200 out tokens_" in transcript
    assert "$0.00 " not in transcript


async def test_the_money_budget_stops_the_debate_with_a_clear_reason(
    engine: Engine, hub: EventHub, settings: Settings, fake_llm: FakeLLMServer
) -> None:
    fake_llm.script(
        provider="anthropic", reply="Point.", input_tokens=1000, output_tokens=200, times=9
    )
    seats = {role: SeatChoice(provider="anthropic", model=SONNET) for role in ("claude", "gemini")}
    debate_id = start(
        engine, settings, topic="Budget?", rounds=3, seats=seats, budget_usd=Decimal("0.01")
    )

    result = await run(engine, hub, settings, debate_id)

    assert result.status == "failed"
    assert result.reason == "money budget reached: $0.0120 of $0.01 spent"
    assert [t.phase for t in saved_turns(engine, debate_id)] == ["opening", "opening"]
    with session_scope(engine) as session:
        debate = store.get_debate(session, debate_id=debate_id)
        assert debate is not None
        assert debate.status_reason == result.reason
        assert store.debate_spec(debate).budget_usd == Decimal("0.01")


async def test_a_budget_not_yet_spent_lets_the_debate_finish(
    engine: Engine, hub: EventHub, settings: Settings, fake_llm: FakeLLMServer
) -> None:
    script_sonnet_and_flash(fake_llm)
    debate_id = start(
        engine,
        settings,
        topic="Enough?",
        rounds=1,
        seats=sonnet_and_flash(),
        budget_usd=Decimal("0.02"),
    )
    assert (await run(engine, hub, settings, debate_id)).status == "completed"


def test_a_budget_with_an_unpriced_seat_is_refused_naming_the_seat(settings: Settings) -> None:
    request = DebateRequest(
        topic="Budget?",
        seats={
            "claude": SeatChoice(provider="anthropic", model=SONNET),
            "gemini": SeatChoice(provider="openai", model="house-model-7b"),
        },
        budget_usd=Decimal("1"),
    )
    with pytest.raises(BudgetError) as refused:
        prepare(request, statuses=provider_statuses(settings), prices=load_table())
    message = str(refused.value)
    assert "Gemini's model house-model-7b (openai) has no price" in message


def test_a_seat_on_its_providers_unpriced_default_is_refused_with_a_budget(
    settings: Settings,
) -> None:
    # The fake settings leave Claude on the configured default, which the table lacks.
    settings = settings.model_copy(update={"anthropic_model": "claude-unlisted"})
    request = DebateRequest(topic="Budget?", budget_usd=Decimal("1"))
    with pytest.raises(BudgetError) as refused:
        prepare(request, statuses=provider_statuses(settings), prices=load_table())
    assert "Claude's model claude-unlisted (anthropic) has no price" in str(refused.value)


def test_the_local_model_needs_no_price_for_a_budget(settings: Settings) -> None:
    request = DebateRequest(
        topic="Budget?",
        seats={role: SeatChoice(provider="local") for role in ("claude", "gemini")},
        budget_usd=Decimal("0.5"),
    )
    prepared = prepare(request, statuses=provider_statuses(settings), prices=load_table())
    assert prepared.spec.budget_usd == Decimal("0.5")


@pytest.mark.parametrize("budget", [0, -1, True, "lots", 10**9])
def test_a_budget_that_is_no_amount_is_refused(budget: Any) -> None:
    with pytest.raises(ValueError, match="budget_usd"):
        DebateRequest(topic="Budget?", budget_usd=budget)
