"""Chromium with every request off this machine blocked, as on a computer with no internet.

On the default setting (htmx from the CDN) the debate page says in plain words that htmx could
not be loaded and still follows the debate to its end; the same holds when the CDN never answers
at all. With ``ARGUE_ASSETS=local`` the app serves the pinned files itself and the page streams
with htmx as usual. The API reference at ``/docs`` needs nothing from outside.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from fastapi import FastAPI

from app import vendored
from app.config import Settings
from app.web.app import create_app
from tests.fakes.llm_server import FakeLLMServer
from tests.web.conftest import LiveServer, http_providers, serve, stop
from tests.web.htmx_assets import pinned_file
from tests.web.test_browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    FINISHED,
    REPLY,
    SCREENSHOTS,
    unavailable,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")
NOTICE = "#htmx-missing"
LIVE_TEXT_LONGER_THAN = """(n) => [...document.querySelectorAll('.text.live')]
  .some(e => e.textContent.length > n)"""


@dataclass
class OfflineBrowser:
    page: Any
    blocked: list[str] = field(default_factory=list)  # every off-machine URL asked for
    errors: list[str] = field(default_factory=list)  # uncaught script errors


def _is_loopback(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("data", "blob", "about") or parts.hostname in LOOPBACK_HOSTS


@pytest.fixture
def hang_cdn() -> bool:
    """Whether the blocked requests hang forever instead of failing at once."""
    return False


@pytest.fixture
def offline(hang_cdn: bool) -> Iterator[OfflineBrowser]:
    if not CHROMIUM.exists():
        unavailable("no Chromium at /usr/bin/chromium (apt-get install chromium)")
    from playwright.sync_api import Route, sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        state = OfflineBrowser(page)

        def only_this_machine(route: Route) -> None:
            url = route.request.url
            if _is_loopback(url):
                route.continue_()
                return
            state.blocked.append(url)
            if not hang_cdn:
                route.abort("internetdisconnected")
            # else: never answered, as behind a firewall that drops the packets

        context.route("**/*", only_this_machine)
        page.on("pageerror", lambda error: state.errors.append(str(error)))
        try:
            yield state
        finally:
            context.close()
            browser.close()


def start_duel_from_the_form(page: Any, url: str) -> None:
    page.goto(f"{url}/")
    page.fill("#topic", "Tabs or spaces in Python")
    page.fill("#rounds", "1")
    page.select_option("#seat-duel-claude", "openai")
    page.select_option("#seat-duel-gemini", "openai")
    page.click(".new-debate button[type=submit]")
    page.wait_for_url("**/debates/*")


def wait_for(page: Any, expression: str, arg: Any = None, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if page.evaluate(expression, arg):
            return
        page.wait_for_timeout(40)
    raise AssertionError(f"timed out waiting for {expression}")


def assert_the_debate_was_followed_to_its_end(page: Any) -> None:
    """Part of a turn shows while it is written, then the finished debate."""
    wait_for(page, LIVE_TEXT_LONGER_THAN, 40)
    wait_for(page, FINISHED)
    assert page.locator("article.turn-completed").count() == 3
    assert page.locator("article.turn-live").count() == 0
    assert page.locator("section.outcome").count() == 1
    assert page.locator("#waiting").count() == 0


@pytest.mark.parametrize("hang_cdn", [False, True], ids=["cdn-refused", "cdn-never-answers"])
def test_with_the_cdn_unreachable_the_debate_page_says_so_and_follows_the_debate_to_its_end(
    offline: OfflineBrowser, live_server: LiveServer, fake_llm: FakeLLMServer, hang_cdn: bool
) -> None:
    fake_llm.rule(contains="", reply=REPLY, token_delay=0.05)
    page = offline.page
    if hang_cdn:
        # The first page would wait for the CDN before it could be used: start from the API.
        created = page.request.post(
            f"{live_server.url}/api/debates",
            data={"topic": "Tabs or spaces in Python", "rounds": 1, "seats": _openai_seats()},
        )
        assert created.status == 201, created.text()
        page.goto(f"{live_server.url}/debates/{created.json()['id']}", wait_until="commit")
    else:
        start_duel_from_the_form(page, live_server.url)
    assert page.evaluate("() => window.htmx === undefined")

    page.wait_for_selector(NOTICE, timeout=15_000)
    notice = page.inner_text(NOTICE)
    assert "htmx" in notice and "could not be loaded" in notice and "cdn.jsdelivr.net" in notice
    assert_the_debate_was_followed_to_its_end(page)
    assert page.locator(NOTICE).count() == 1  # still says why, after the final swap
    page.screenshot(
        path=str(SCREENSHOTS / f"debate-offline-{'hung' if hang_cdn else 'refused'}.png"),
        full_page=True,
    )
    assert offline.blocked and all("cdn.jsdelivr.net" in url for url in offline.blocked)
    assert offline.errors == []


def _openai_seats() -> dict[str, dict[str, str]]:
    return {"claude": {"provider": "openai"}, "gemini": {"provider": "openai"}}


def keep_pinned_files(folder: Path) -> None:
    """The pinned files where ``ARGUE_ASSETS=local`` keeps them, as ``argue assets fetch``
    leaves them (the real files, checked against their hashes)."""
    for script in vendored.SCRIPTS:
        target = folder / script.local_path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(pinned_file(script))


@pytest.fixture
def local_server(settings: Settings, tmp_path: Path) -> Iterator[LiveServer]:
    try:
        keep_pinned_files(tmp_path / "assets")
    except OSError as error:
        unavailable(f"cannot fetch the pinned htmx files: {error}")
    local = settings.model_copy(update={"assets": "local", "assets_dir": tmp_path / "assets"})
    app: FastAPI = create_app(local, providers=http_providers(local))
    live = serve(app)
    try:
        yield live
    finally:
        stop(live)


def test_with_local_assets_htmx_comes_from_the_app_and_the_page_streams_as_usual(
    offline: OfflineBrowser, local_server: LiveServer, fake_llm: FakeLLMServer
) -> None:
    fake_llm.rule(contains="", reply=REPLY, token_delay=0.05)
    page = offline.page
    start_duel_from_the_form(page, local_server.url)
    assert page.evaluate("() => Boolean(window.htmx && window.htmx.createEventSource)")
    assert_the_debate_was_followed_to_its_end(page)
    assert page.locator(NOTICE).count() == 0
    assert offline.blocked == []
    assert offline.errors == []


def test_the_api_reference_needs_nothing_from_outside(
    offline: OfflineBrowser, live_server: LiveServer
) -> None:
    page = offline.page
    page.goto(f"{live_server.url}/docs")
    page.wait_for_load_state("load")
    assert page.locator("h1").inner_text() == "Argue API"
    operations = page.locator("[data-operation]")
    ids = [operations.nth(i).get_attribute("data-operation") for i in range(operations.count())]
    assert "POST /api/debates" in ids and "GET /api/debates/{debate_id}/events" in ids
    assert "Start a debate" in page.inner_text("body")
    page.screenshot(path=str(SCREENSHOTS / "api-reference.png"))
    assert page.locator("script").count() == 0
    assert offline.blocked == []
    assert offline.errors == []
