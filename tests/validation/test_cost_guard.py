"""The cost guard is stated where a debate starts (per-turn output caps, the per-debate token
budget, the concurrency limit) and a debate's page shows its budget and, when the budget
stops it, says so plainly."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.web.app import create_app
from tests.conftest import fake_settings
from tests.fakes.llm_server import FakeLLMServer
from tests.validation.conftest import save_debate, visible_text
from tests.web.conftest import http_providers, start_duel, wait_for_debate


@pytest.fixture
def budget_client(fake_llm: FakeLLMServer, tmp_path: Path) -> Iterator[TestClient]:
    settings = fake_settings(
        fake_llm,
        tmp_path / "budget-home",
        debate_token_budget=1,
        max_output_tokens=1000,
        local_max_output_tokens=300,
        max_concurrent_debates=3,
    )
    with TestClient(create_app(settings, providers=http_providers(settings))) as client:
        yield client


def cost_guard(page: str) -> str:
    actions = page.split('<div class="actions">', 1)[1].split("</div>\n  </form>", 1)[0]
    assert 'id="cost-guard"' in actions and 'type="submit"' in actions  # beside the button
    return visible_text(actions)


def test_home_states_the_default_caps_and_no_budget(client: TestClient) -> None:
    guard = cost_guard(client.get("/").text)
    assert "Per turn at most 2,048 output tokens (local model: 384)" in guard
    assert "Per debate no budget" in guard
    assert "At once at most 16 debates run; more wait in a queue" in guard


def test_home_states_the_configured_caps_and_budget(budget_client: TestClient) -> None:
    guard = cost_guard(budget_client.get("/").text)
    assert "at most 1,000 output tokens (local model: 300)" in guard
    assert "a budget of 1 tokens" in guard
    assert "at most 3 debates run" in guard


def test_the_cost_guard_is_also_on_a_refused_form(budget_client: TestClient) -> None:
    page = budget_client.post("/debates", data={"topic": ""}).text
    assert "at most 1,000 output tokens" in cost_guard(page)


def test_a_debate_page_shows_its_budget(client: TestClient) -> None:
    engine = client.app.state.engine  # type: ignore[attr-defined]
    debate_id = save_debate(engine, topic="Budgeted", status="running", token_budget=50_000)
    page = client.get(f"/debates/{debate_id}").text
    assert re.search(r'id="budget"[^>]*>of a budget of <strong>50,000</strong> tokens', page)
    unbudgeted = save_debate(engine, topic="Free", status="running")
    assert 'id="budget"' not in client.get(f"/debates/{unbudgeted}").text


def test_a_debate_stopped_by_its_budget_says_so_prominently(budget_client: TestClient) -> None:
    debate_id = start_duel(budget_client, rounds=2)

    assert wait_for_debate(budget_client, debate_id) == "failed"

    debate = budget_client.get(f"/api/debates/{debate_id}").json()
    assert debate["status_reason"].startswith("token budget reached: ")
    page = budget_client.get(f"/debates/{debate_id}").text
    banner = re.search(r'<div class="reason budget-stop" id="reason"[^>]*>(.*?)</div>', page)
    assert banner is not None
    assert "Stopped: the token budget was reached." in banner.group(1)
    assert debate["status_reason"] in visible_text(banner.group(1))
    used = debate["usage"]["total_tokens"]
    assert f"{used:,}" in page and "of a budget of <strong>1</strong> tokens" in page


def test_other_failures_keep_the_plain_reason(client: TestClient) -> None:
    engine = client.app.state.engine  # type: ignore[attr-defined]
    debate_id = save_debate(engine, topic="t", status="failed", reason="r1.opening.claude failed")
    page = client.get(f"/debates/{debate_id}").text
    assert '<p class="reason" id="reason">r1.opening.claude failed</p>' in page
    assert "budget-stop" not in page
