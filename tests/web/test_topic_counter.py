"""The topic's live count in a real browser (Debian's Chromium, Playwright): as one types it
says "1,234 / 2,000"; past the limit it turns to an error, nothing typed or pasted is cut, and
submitting brings the server's own message back beside the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.debates import MAX_TOPIC_CHARS
from tests.web.conftest import LiveServer
from tests.web.test_browser import page, pinned_scripts

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]
# Chromium driven by Playwright, as the live-page test sets it up: imported to be used here.
BROWSER_FIXTURES = (page, pinned_scripts)

COUNTER = "#topic-count"


def counter(page: Any) -> dict[str, Any]:
    result: dict[str, Any] = page.evaluate(
        """() => { const c = document.querySelector('#topic-count');
          return {text: c.textContent.trim(), visible: !c.hidden && c.offsetHeight > 0,
                  over: c.classList.contains('over'),
                  invalid: document.querySelector('#topic').getAttribute('aria-invalid')}; }"""
    )
    return result


def test_the_topic_counter_counts_as_one_types_and_turns_to_an_error_past_the_limit(
    page: Any, live_server: LiveServer, tmp_path: Path
) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{live_server.url}/")
    assert counter(page) == {
        "text": f"0 / {MAX_TOPIC_CHARS:,}",
        "visible": True,
        "over": False,
        "invalid": None,
    }
    page.fill("#topic", "é" * 1_234)
    assert counter(page)["text"] == f"1,234 / {MAX_TOPIC_CHARS:,}"
    page.fill("#topic", "a\nb")  # a line break is one character, as the server counts it
    assert counter(page)["text"] == f"3 / {MAX_TOPIC_CHARS:,}"

    page.fill("#topic", "x" * 10_000)
    state = counter(page)
    assert state["over"] and state["invalid"] == "true"
    assert state["text"].startswith(f"10,000 / {MAX_TOPIC_CHARS:,}")
    assert "8,000 too many" in state["text"]
    assert page.evaluate("() => document.querySelector('#topic').value.length") == 10_000
    page.screenshot(path=str(tmp_path / "topic-over.png"), full_page=True)

    page.click("button[type=submit]")
    page.wait_for_load_state()
    error = page.locator("#topic-error")
    assert error.text_content() == "The topic is at most 2,000 characters; this one has 10,000."
    assert counter(page)["over"]  # the page it comes back on counts the kept text again
    page.screenshot(path=str(tmp_path / "topic-refused.png"), full_page=True)

    page.fill("#topic", "Tabs or spaces")
    state = counter(page)
    assert state["text"] == f"14 / {MAX_TOPIC_CHARS:,}"
    assert not state["over"]  # the server's message stays until the next submit says otherwise
    # The refusal's 422 is logged as a failed load; anything else would be the script's error.
    errors = [e for e in page.errors if "status of 422" not in e]
    assert errors == []
