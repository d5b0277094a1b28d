"""In a real browser (Debian's Chromium, driven by Playwright): a follow-up question asked
from a completed debate's page streams its answers into the page as they are written, and
the compare page of a debate and its re-run stacks the two syntheses on a phone's width."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from tests.fakes.llm_server import FakeLLMServer
from tests.web import test_browser
from tests.web.conftest import LiveServer

# The browser and the pinned htmx files, as the live page's own browser test has them.
page = test_browser.page
pinned_scripts = test_browser.pinned_scripts

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]

ANSWER = (
    "Then tabs lose their one advantage: a team of one has no second reader to choose a "
    "width for, so the formatter's default wins and the question is settled for good."
)
LIVE_ANSWER = """() => {
  const live = document.querySelector('article[data-key="q1.followup.claude"] .text.live');
  return live ? live.textContent : null;
}"""


def _finished_duel(live_server: LiveServer, **fields: Any) -> str:
    body = {"topic": "Tabs or spaces in Python", "rounds": 1, **fields}
    response = httpx.post(f"{live_server.url}/api/debates", json=body, timeout=10)
    assert response.status_code == 201, response.text
    debate_id: str = response.json()["id"]
    _wait_until(live_server, debate_id, "completed")
    return debate_id


def _wait_until(live_server: LiveServer, debate_id: str, status: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        got = httpx.get(f"{live_server.url}/api/debates/{debate_id}", timeout=10).json()
        if got["status"] == status:
            return
        time.sleep(0.1)
    raise AssertionError(f"debate {debate_id} never became {status}")


def test_a_followup_asked_from_the_page_streams_its_answers_in(
    page: Any, live_server: LiveServer, fake_llm: FakeLLMServer
) -> None:
    debate_id = _finished_duel(live_server)
    fake_llm.rule(contains="Follow-up question 1", reply=ANSWER, token_delay=0.06)
    page.goto(f"{live_server.url}/debates/{debate_id}")

    page.fill("#followup-question", "Does it matter for a team of one?")
    page.click("#followups button[type=submit]")

    # Part of the answer is on the page while it is still being written.
    page.wait_for_function(f"() => ({LIVE_ANSWER})()?.length > 10", timeout=20_000)
    partial = page.evaluate(LIVE_ANSWER)
    assert partial and ANSWER.startswith(partial.strip()) and len(partial) < len(ANSWER)
    # Then it completes, rendered, under the follow-up heading.
    done = page.locator('article.turn-completed[data-key="q1.followup.claude"] .text.md')
    done.wait_for(timeout=30_000)
    assert "formatter's default wins" in done.inner_text()
    assert page.locator("#g-2-followup .group-title").inner_text() == "Follow-up answers"
    page.reload()
    assert "Does it matter for a team of one?" in page.locator("#followups").inner_text()
    assert page.locator('#followups a[href="#g-2-followup"]').count() == 1
    assert page.errors == []  # type: ignore[attr-defined]


def test_the_compare_page_stacks_the_syntheses_on_a_phone(
    page: Any, live_server: LiveServer, fake_llm: FakeLLMServer
) -> None:
    original_id = _finished_duel(live_server)
    response = httpx.post(f"{live_server.url}/api/debates/{original_id}/rerun", timeout=10)
    rerun_id = response.json()["id"]
    _wait_until(live_server, rerun_id, "completed")
    page.set_viewport_size({"width": 390, "height": 844})

    page.goto(f"{live_server.url}/debates/{original_id}/compare/{rerun_id}")

    first = page.locator(f"#side-{original_id}").bounding_box()
    second = page.locator(f"#side-{rerun_id}").bounding_box()
    assert first is not None and second is not None
    assert second["y"] >= first["y"] + first["height"]  # stacked, not side by side
    assert page.evaluate("() => document.scrollingElement.scrollWidth") <= 390
    page.set_viewport_size({"width": 1280, "height": 900})
    first = page.locator(f"#side-{original_id}").bounding_box()
    second = page.locator(f"#side-{rerun_id}").bounding_box()
    assert first is not None and second is not None
    assert abs(second["y"] - first["y"]) < 2 and second["x"] > first["x"]  # side by side
