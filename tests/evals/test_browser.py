"""The eval pages in a real Chromium: from the list to a run, whose chart draws one bar
and one interval per condition with no script and no policy violation, and whose items link
to their debates."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy.engine import Engine

from app.config import Settings
from app.evals.harness import Harness
from app.web.app import create_app
from tests.evals.test_pages import run_eval
from tests.fakes.llm_server import FakeLLMServer
from tests.web.conftest import http_providers, serve, stop
from tests.web.test_browser import CHROMIUM, CHROMIUM_ARGS, unavailable

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]


@pytest.fixture
def run_id(eval_engine: Engine, harness: Harness, fake_llm: FakeLLMServer) -> str:
    """A finished run (its asyncio loop done before Playwright starts its own here)."""
    return run_eval(eval_engine, harness, fake_llm)


@pytest.fixture
def browser_page(run_id: str) -> Iterator[tuple[Any, list[str]]]:
    if not CHROMIUM.exists():
        unavailable("no Chromium at /usr/bin/chromium (apt-get install chromium)")
    from playwright.sync_api import ConsoleMessage, sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page()
        errors: list[str] = []

        def on_console(message: ConsoleMessage) -> None:
            if message.type == "error":
                errors.append(message.text)

        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", on_console)
        try:
            yield page, errors
        finally:
            browser.close()


def test_a_run_s_chart_and_items_show_in_a_browser(
    run_id: str, browser_page: tuple[Any, list[str]], settings: Settings
) -> None:
    page, errors = browser_page
    app: FastAPI = create_app(settings, providers=http_providers(settings))
    live = serve(app)
    try:
        page.goto(f"{live.url}/")
        errors.clear()  # the form's htmx comes from a CDN, out of reach offline
        page.click("nav >> text=Evals")
        page.click(f"a[href='/evals/{run_id}']")
        page.wait_for_url(f"**/evals/{run_id}")

        bars = page.locator("svg.eval-chart rect.bar")
        assert bars.count() == 3
        assert page.locator("svg.eval-chart line.interval").count() == 3
        heights = [bars.nth(i).bounding_box()["height"] for i in range(3)]
        assert all(height > 0 for height in heights)
        assert page.locator("svg.eval-chart text.label").all_text_contents() == [
            "single",
            "majority",
            "duel",
        ]
        assert page.locator("tr.eval-item").count() == 12
        assert page.evaluate("() => document.scripts.length") == 0
        assert errors == []  # no policy violation, nothing failed to load
        page.locator("tr.eval-item a[href^='/debates/']").first.click()
        page.wait_for_url("**/debates/*")
        assert "What is the result of" in page.text_content("main")
    finally:
        stop(live)
