"""In a real browser (Debian's Chromium via Playwright), a finished debate whose topic, turns,
provider error and synthesis are hostile text runs nothing (no dialog opens, no script
errors) and a 5,000-character unbroken token does not widen the page."""

from __future__ import annotations

from typing import Any

import pytest

from tests.validation.conftest import (
    GIANT_TOKEN,
    HOSTILE_TEXT,
    IMG,
    SCRIPT,
    hostile_turns,
    save_debate,
)
from tests.web.conftest import LiveServer
from tests.web.test_browser import page, pinned_scripts  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]

HOSTILE_TOPIC = f"Tabs {SCRIPT} or {IMG} spaces {GIANT_TOKEN}"
# A scrollbar or rounding may add a few pixels; a 5,000-character token adds thousands.
SLACK_PX = 4
WIDTH = "() => [document.documentElement.scrollWidth, window.innerWidth]"


def watch_dialogs(browser_page: Any) -> list[str]:
    dialogs: list[str] = []

    def on_dialog(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    browser_page.on("dialog", on_dialog)
    return dialogs


def assert_not_widened(browser_page: Any) -> None:
    scroll_width, inner_width = browser_page.evaluate(WIDTH)
    assert scroll_width <= inner_width + SLACK_PX, (scroll_width, inner_width)


@pytest.mark.parametrize("viewport", [(1280, 900), (390, 844)], ids=["desktop", "phone"])
def test_hostile_debate_page_runs_nothing_and_keeps_its_width(
    page: Any,  # noqa: F811
    live_server: LiveServer,
    viewport: tuple[int, int],
) -> None:
    engine = live_server.app.state.engine
    debate_id = save_debate(
        engine, topic=HOSTILE_TOPIC, turns=hostile_turns(), synthesis=HOSTILE_TEXT
    )
    dialogs = watch_dialogs(page)
    page.set_viewport_size({"width": viewport[0], "height": viewport[1]})

    page.goto(f"{live_server.url}/debates/{debate_id}")
    page.wait_for_load_state("load")
    # Everything a click could trigger, too: the [x](javascript:…) text is not a link.
    page.hover("article.turn .text")
    page.evaluate("() => document.querySelectorAll('a').length")

    assert dialogs == []
    assert page.locator(".text.md script, .text.md img, .text.md iframe, .text.md svg").count() == 0
    assert page.locator("a[href^='javascript']").count() == 0
    assert SCRIPT in page.locator("h1.topic").inner_text()
    assert SCRIPT in page.title()
    assert page.locator("article.turn-completed").count() == 2
    assert GIANT_TOKEN in page.locator("section.outcome").inner_text().replace("\n", "")
    assert_not_widened(page)
    assert page.errors == []  # type: ignore[attr-defined]


def test_hostile_topics_in_the_history_and_home_keep_the_width(
    page: Any,  # noqa: F811
    live_server: LiveServer,
) -> None:
    engine = live_server.app.state.engine
    save_debate(engine, topic=HOSTILE_TOPIC, status="failed", reason=f"{SCRIPT} {GIANT_TOKEN}")
    dialogs = watch_dialogs(page)
    page.set_viewport_size({"width": 800, "height": 900})

    for path in ("/debates", "/"):
        page.goto(f"{live_server.url}{path}")
        page.wait_for_load_state("load")
        assert_not_widened(page)
        assert "Tabs <script>" in page.locator("td.topic-cell").first.inner_text()

    assert dialogs == []
    assert page.errors == []  # type: ignore[attr-defined]
