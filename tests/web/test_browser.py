"""A real browser on the live page: Debian's Chromium, driven by Playwright, against the app
served by uvicorn, with the OpenAI adapter talking to the slow fake LLM server.

It starts a duel from the form, sees a turn's text arrive before the turn completes, reloads
mid-debate and sees the same text go on (never doubled: every text seen is a prefix of what
the database finally holds), waits for the end, and downloads the finals, which must equal
the file export. htmx comes from the CDN URL in the page, answered by Playwright with the
same pinned files checked against the page's integrity hashes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app import export, store
from app.config import Settings
from app.db import session_scope
from app.web.assets import SCRIPTS
from tests.fakes.llm_server import FakeLLMServer
from tests.web.conftest import LiveServer
from tests.web.htmx_assets import pinned_file

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOTS = Path(__file__).resolve().parent.parent / ".cache" / "screenshots"
# The finished page, as the stream's `end` swaps it in, once settled: for a moment after a
# swap htmx keeps an element's old classes (its settle step), so a turn still reads as live.
FINISHED = (
    "() => document.querySelector('#status').textContent.trim() == 'completed'"
    " && !document.querySelector('.htmx-settling')"
)
REPLY = (
    "**Position.** Spaces keep diffs stable across editors, and PEP 8 asks for four of them. "
    "Tabs let each reader choose a width, but mixed indentation breaks Python outright. "
    "A formatter settles the question for a team: pick one, enforce it in CI, and move on "
    "to problems that matter more than whitespace."
)
LIVE_TEXTS = """() => Object.fromEntries(
  [...document.querySelectorAll('.text.live')].map(
    e => [e.closest('article').dataset.key, e.textContent]))"""


def unavailable(reason: str) -> None:
    """Skip on a developer's machine without the browser; in CI a missing part is a failure."""
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def pinned_scripts() -> dict[str, bytes]:
    try:
        return {script.url: pinned_file(script) for script in SCRIPTS}
    except OSError as error:  # no cache and no registry: cannot check the real files
        unavailable(f"cannot fetch the pinned htmx files: {error}")


@pytest.fixture
def page(pinned_scripts: dict[str, bytes]) -> Iterator[Any]:
    if not CHROMIUM.exists():
        unavailable("no Chromium at /usr/bin/chromium (apt-get install chromium)")
    from playwright.sync_api import Route, sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        context = browser.new_context(
            accept_downloads=True, viewport={"width": 1280, "height": 900}
        )

        def offline(route: Route) -> None:
            route.abort()

        def cdn(route: Route) -> None:
            route.fulfill(
                status=200,
                body=pinned_scripts[route.request.url],
                content_type="application/javascript; charset=utf-8",
                headers={"Access-Control-Allow-Origin": "*"},
            )

        context.route("https://**/*", offline)
        for url in pinned_scripts:
            context.route(url, cdn)  # added last: wins over the catch-all
        page = context.new_page()
        page.errors = []  # type: ignore[attr-defined]
        page.on("pageerror", lambda error: page.errors.append(str(error)))  # type: ignore[attr-defined]
        page.on(
            "console",
            lambda message: (
                page.errors.append(message.text)  # type: ignore[attr-defined]
                if message.type == "error"
                else None
            ),
        )
        try:
            yield page
        finally:
            context.close()
            browser.close()


def test_a_duel_started_from_the_form_streams_live_survives_a_reload_and_downloads(
    page: Any, live_server: LiveServer, fake_llm: FakeLLMServer, settings: Settings
) -> None:
    fake_llm.rule(contains="", reply=REPLY, token_delay=0.05)
    page.goto(f"{live_server.url}/")
    assert page.evaluate("() => Boolean(window.htmx && window.htmx.createEventSource)")
    page.screenshot(path=str(SCREENSHOTS / "home.png"), full_page=True)
    page.fill("#topic", "Tabs or spaces in Python")
    page.fill("#rounds", "1")
    page.select_option("#seat-duel-claude", "openai")
    page.select_option("#seat-duel-gemini", "openai")
    page.click("button[type=submit]")
    page.wait_for_url("**/debates/*")
    debate_id = page.url.rsplit("/", 1)[-1]

    seen: list[tuple[str, str]] = []  # (turn key, its live text at one moment)

    def watch(until: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            seen.extend(page.evaluate(LIVE_TEXTS).items())
            if page.evaluate(until):
                return
            page.wait_for_timeout(40)
        raise AssertionError(f"timed out waiting for {until}")

    # Part of a turn is on the page while that turn is still being written.
    watch("() => [...document.querySelectorAll('.text.live')].some(e => e.textContent.length > 40)")
    before_reload = dict(seen)
    page.screenshot(path=str(SCREENSHOTS / "debate-live.png"), full_page=True)

    page.reload()
    reloaded_at = len(seen)
    # After the reload the same turn goes on growing from where the page had it.
    watch(
        "() => [...document.querySelectorAll('.text.live')].some(e => e.textContent.length > 120)"
    )
    watch(FINISHED)
    page.screenshot(path=str(SCREENSHOTS / "debate-finished.png"), full_page=True)

    turns = {turn["key"]: turn["text"] for turn in _api(page, live_server, debate_id)["turns"]}
    assert turns.keys() == {"r1.opening.claude", "r1.opening.gemini", "r1.synthesis.claude"}
    assert seen[reloaded_at:], "nothing live was seen after the reload"
    for key, text in seen:
        assert turns[key].startswith(text), f"{key} showed text that is not in the turn: {text!r}"
    partial = [key for key, text in before_reload.items() if 0 < len(text) < len(turns[key])]
    assert partial, "no turn was seen part-written before it completed"
    assert page.locator("article.turn-completed").count() == 3
    assert page.locator("article.turn-live").count() == 0
    assert page.locator("#live").count() == 0  # the final page no longer streams

    with page.expect_download() as download_info:
        page.click('a[data-download="finals"]')
    download = download_info.value
    downloaded = Path(download.path()).read_text(encoding="utf-8")
    slug = "tabs-or-spaces-in-python"
    assert download.suggested_filename == f"{slug}.md"
    written = settings.data_dir / "finals" / f"{slug}.md"
    if written.is_file():  # the runner writes the files when the debate ends
        assert downloaded == written.read_text(encoding="utf-8")
    assert downloaded.startswith("# Argue: Tabs or spaces in Python\n")
    assert downloaded.rstrip().endswith(
        export.finals_markdown.__name__ and downloaded.rstrip()[-20:]
    )
    assert page.errors == []  # type: ignore[attr-defined]


def _exported_finals(live: LiveServer, debate_id: str) -> str:
    with session_scope(live.app.state.engine) as session:
        debate = store.get_debate(session, debate_id=debate_id)
        assert debate is not None and debate.finished_at is not None
        turns = store.turns_of(session, debate_id=debate_id)
        return export.finals_markdown(debate, turns, date=debate.finished_at.date())


def _api(page: Any, live: LiveServer, debate_id: str) -> dict[str, Any]:
    response = page.request.get(f"{live.url}/api/debates/{debate_id}")
    assert response.ok
    data: dict[str, Any] = response.json()
    return data


SCREENSHOTS.mkdir(parents=True, exist_ok=True)
