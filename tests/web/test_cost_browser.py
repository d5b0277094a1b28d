"""Cost in a real browser (Chromium, driven by Playwright, as in test_browser.py): a debate
started from the form with a money budget shows its cost and budget on its page, and the
history shows what it cost."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.fakes.llm_server import FakeLLMServer
from tests.web.conftest import LiveServer
from tests.web.test_browser import page, pinned_scripts  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]


def wait_until_finished(browser_page: Any, base: str, debate_id: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = browser_page.request.get(f"{base}/api/debates/{debate_id}").json()["status"]
        if status not in ("queued", "running"):
            return str(status)
        browser_page.wait_for_timeout(100)
    raise AssertionError("the debate did not finish")


def test_a_budgeted_debate_shows_its_cost_on_its_page_and_in_the_history(
    page: Any,  # noqa: F811
    live_server: LiveServer,
    fake_llm: FakeLLMServer,
) -> None:
    # gpt-5-mini: $0.25 in / $2.00 out per million; 1000 in + 100 out = $0.00045 a call.
    fake_llm.rule(contains="", reply="A short point.", input_tokens=1000, output_tokens=100)
    page.goto(f"{live_server.url}/")
    page.fill("#topic", "Is SQLite enough for a small team?")
    page.fill("#rounds", "1")
    page.fill("#budget_usd", "0.50")
    for seat in ("claude", "gemini"):
        page.select_option(f"#seat-duel-{seat}", "openai")
        page.fill(f"[name=model-duel-{seat}]", "gpt-5-mini")
    page.click("button[type=submit]")
    page.wait_for_url("**/debates/*")
    debate_id = page.url.rsplit("/", 1)[-1]

    assert wait_until_finished(page, live_server.url, debate_id) == "completed"
    page.goto(f"{live_server.url}/debates/{debate_id}")
    # Two openings and a synthesis: 3 × $0.00045 = $0.00135.
    assert page.inner_text("#cost-total") == "$0.0014"
    assert page.inner_text("#budget-usd") == "of a budget of $0.50"

    page.goto(f"{live_server.url}/debates")
    row = page.locator(f"tr:has(a[href='/debates/{debate_id}'])")
    assert row.locator("td[data-label=Cost]").inner_text() == "$0.0014"
    assert page.errors == []
