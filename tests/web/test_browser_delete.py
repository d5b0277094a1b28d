"""In a real browser (Debian's Chromium via Playwright): the debate page's Delete button asks
first, "Keep it" keeps the debate, and confirming deletes it and lands on the history with a
notice; the report opens as a page of its own with its style applied and no errors."""

from __future__ import annotations

import re
from typing import Any

import pytest

from app import store
from app.db import session_scope
from tests.web.conftest import LiveServer
from tests.web.test_browser import page, pinned_scripts  # noqa: F401  (fixtures)
from tests.web.test_routes import seed_debates

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]


def test_deleting_from_the_debate_page_asks_then_deletes(
    page: Any,  # noqa: F811
    live_server: LiveServer,
) -> None:
    engine = live_server.app.state.engine
    [debate_id] = seed_debates(engine, 1, topic="A debate to throw away")

    page.goto(f"{live_server.url}/debates/{debate_id}")
    page.click("#delete-debate")
    page.wait_for_url(f"**/debates/{debate_id}/delete")
    assert "Delete this debate?" in page.inner_text("h1")
    page.click("text=Keep it")
    page.wait_for_url(re.compile(rf"/debates/{debate_id}$"))
    with session_scope(engine) as session:
        assert store.get_debate(session, debate_id=debate_id) is not None

    page.click("#delete-debate")
    page.click("#confirm-delete")
    page.wait_for_url(f"**/debates?deleted={debate_id}")

    assert (
        page.inner_text("#notice") == f"Debate {debate_id} was deleted, with its turns and files."
    )
    assert "A debate to throw away" not in page.inner_text("main")
    assert page.errors == []  # type: ignore[attr-defined]
    with session_scope(engine) as session:
        assert store.get_debate(session, debate_id=debate_id) is None
    assert page.goto(f"{live_server.url}/debates/{debate_id}").status == 404


def test_the_report_opens_styled_with_nothing_refused(
    page: Any,  # noqa: F811
    live_server: LiveServer,
) -> None:
    engine = live_server.app.state.engine
    [debate_id] = seed_debates(engine, 1, topic="A report to share")

    response = page.goto(f"{live_server.url}/debates/{debate_id}/report.html")

    assert response.status == 200
    assert page.inner_text("h1") == "A report to share"
    # The inline style applied (the policy allowed it by its hash): the page's width is capped.
    assert page.evaluate("() => getComputedStyle(document.body).maxWidth") != "none"
    assert page.evaluate("() => document.scripts.length") == 0
    assert page.errors == []  # type: ignore[attr-defined]
