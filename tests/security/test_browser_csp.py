"""The real browser under the real headers: Chromium signs in on the login page, starts a
duel from the form (a same-origin POST the cross-site check must let through), watches it
stream to the end over SSE, and signs out, with no Content-Security-Policy violation on the
way: none reported by the page and none in the console."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI

from app.config import Settings
from app.web.app import create_app
from app.web.assets import SCRIPTS
from tests.fakes.llm_server import FakeLLMServer
from tests.security.conftest import TOKEN, with_access
from tests.web.conftest import LiveServer, http_providers, serve, stop
from tests.web.htmx_assets import pinned_file
from tests.web.test_browser import CHROMIUM, CHROMIUM_ARGS, FINISHED, unavailable

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]

# Runs in every document before its own scripts; a violation reports through the binding.
REPORT_VIOLATIONS = """
document.addEventListener("securitypolicyviolation", (e) =>
  window.reportViolation(`${e.violatedDirective} blocked ${e.blockedURI || "inline"}`));
"""


@pytest.fixture
def guarded_server(settings: Settings) -> Iterator[LiveServer]:
    secured = with_access(settings, auth_token=TOKEN)
    app: FastAPI = create_app(secured, providers=http_providers(secured))
    live = serve(app)
    try:
        yield live
    finally:
        stop(live)


@pytest.fixture
def browser_page() -> Iterator[tuple[Any, list[str], list[str]]]:
    """A page, the console messages (all of them) and the reported violations."""
    if not CHROMIUM.exists():
        unavailable("no Chromium at /usr/bin/chromium (apt-get install chromium)")
    try:
        pinned = {script.url: pinned_file(script) for script in SCRIPTS}
    except OSError as error:
        unavailable(f"cannot fetch the pinned htmx files: {error}")
    from playwright.sync_api import Route, sync_playwright

    console: list[str] = []
    violations: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        context = browser.new_context()

        def cdn(route: Route) -> None:
            route.fulfill(
                status=200,
                body=pinned[route.request.url],
                content_type="application/javascript; charset=utf-8",
                headers={"Access-Control-Allow-Origin": "*"},
            )

        context.route("https://**/*", lambda route: route.abort())
        for url in pinned:
            context.route(url, cdn)

        def report(text: str) -> None:
            violations.append(text)

        context.expose_function("reportViolation", report)
        context.add_init_script(REPORT_VIOLATIONS)
        page = context.new_page()
        page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
        page.on("pageerror", lambda error: console.append(f"pageerror: {error}"))
        try:
            yield page, console, violations
        finally:
            context.close()
            browser.close()


def test_the_app_works_in_a_browser_under_its_policy_with_no_violation(
    browser_page: tuple[Any, list[str], list[str]],
    guarded_server: LiveServer,
    fake_llm: FakeLLMServer,
) -> None:
    page, console, violations = browser_page
    fake_llm.rule(contains="", reply="Spaces, four of them, as PEP 8 says. " * 4, token_delay=0.01)
    url = guarded_server.url

    response = page.goto(f"{url}/")
    assert response.status == 401 and page.locator("#token").count() == 1
    page.fill("#token", TOKEN)
    with page.expect_navigation():
        page.click(".login button[type=submit]")
    assert page.url == f"{url}/"
    assert page.evaluate("() => Boolean(window.htmx && window.htmx.createEventSource)")
    assert page.evaluate("() => document.querySelectorAll('style').length") == 0

    page.fill("#topic", "Tabs or spaces in Python")
    page.fill("#rounds", "1")
    page.click(".new-debate button[type=submit]")
    page.wait_for_url("**/debates/*")
    page.wait_for_function(FINISHED, timeout=30_000)
    assert page.locator("article.turn-completed").count() == 3

    page.goto(f"{url}/debates")
    assert "Tabs or spaces in Python" in page.content()
    page.click("form.signout button")
    page.wait_for_url("**/login")
    assert page.goto(f"{url}/debates").status == 401

    assert violations == []
    assert [m for m in console if "Content Security Policy" in m] == []
    # The only errors: the two pages that answered 401 on purpose.
    refused = "error: Failed to load resource: the server responded with a status of 401"
    errors = [m for m in console if m.startswith(("error", "pageerror"))]
    assert [m.startswith(refused) for m in errors] == [True, True], errors
