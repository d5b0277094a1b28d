"""The pages' layout in a real browser (Debian's Chromium driven by Playwright) at a desktop
width (1600 px) and a phone width (390 px): no page scrolls sideways, no word in a table of
debates is broken in the middle, and on a phone the history is a list of cards whose every
value carries its own column's name. Screenshots of each page go to the test's tmp folder.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from app import store
from app.db import session_scope
from app.models import utcnow
from app.spec import DebateSpec, Seat
from tests.web.conftest import LiveServer
from tests.web.test_browser import page, pinned_scripts

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]
# Chromium driven by Playwright, as the live-page test sets it up: imported to be used here.
BROWSER_FIXTURES = (page, pinned_scripts)

DESKTOP = {"width": 1600, "height": 1000}
PHONE = {"width": 390, "height": 844}
WIDTHS = {"desktop": DESKTOP, "phone": PHONE}
TOPICS = (
    "Should a small team adopt microservices or keep the monolith for another year",
    "Tabs or spaces for Python code",
    "Is Rust better than Go for command-line tools",
    "Plan the migration of the billing database to PostgreSQL without downtime",
    "Why does the nightly export job time out on the first of the month",
)
STATUSES = ("completed", "failed", "cancelled", "running", "queued")
SYNTHESIS = (
    "**Verdict.** Keep the monolith; split out the billing service once it has an owner.\n\n"
    "| Option | Cost | Risk |\n| --- | --- | --- |\n| Monolith | low | medium |\n"
    "| Microservices | high | high |\n\n"
    "A model may write one enormous word: " + "supercalifragilistic" * 12 + "\n"
)
# Each word of each cell, measured: a word drawn on more than one line was broken. A line may
# end after a hyphen ("smollm2-135m-instruct"), as in print: the parts between are the words.
BROKEN_WORDS = """() => {
  const broken = [];
  for (const cell of document.querySelectorAll('table.debates th, table.debates td')) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const text = node.textContent;
      for (const match of text.matchAll(/[^\\s-]+/g)) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
        if (tops.size > 1) broken.push(match[0]);
      }
    }
  }
  return broken;
}"""
SIDEWAYS = "() => document.documentElement.scrollWidth - window.innerWidth"
# On a phone each value in a row of the history says which column it is.
CELL_LABELS = """() => [...document.querySelectorAll('table.debates tbody tr')].map(row =>
  [...row.querySelectorAll('td')]
    .filter(td => getComputedStyle(td).display !== 'none')
    .map(td => getComputedStyle(td, '::before').content.replace(/^"|"$/g, '')))"""
HEADERS = """() => [...document.querySelectorAll('table.debates thead th')].map(
  th => th.textContent.trim())"""


def seed_history(engine: Engine, count: int) -> list[str]:
    """``count`` debates of every status, with seats that name their models, oldest first."""
    ids = []
    with session_scope(engine) as session:
        for index in range(count):
            spec = DebateSpec(
                topic=TOPICS[index % len(TOPICS)],
                format="duel" if index % 3 else "panel",
                seats=(
                    Seat("claude", "Claude", "local", "smollm2-135m-instruct"),
                    Seat("gemini", "Gemini", "openai", "gpt-5.5"),
                ),
            )
            debate = store.create_debate(session, spec=spec)
            debate.created_at = utcnow() - timedelta(hours=count - index)
            debate.status = STATUSES[index % len(STATUSES)]
            debate.input_tokens = 5_000 + 37 * index
            debate.output_tokens = 3_418 + index
            debate.rounds_run = 2
            debate.converged = index % 2 == 0
            if debate.status == "completed":
                debate.synthesis = SYNTHESIS
            ids.append(debate.id)
    return ids


@pytest.fixture
def history(live_server: LiveServer) -> list[str]:
    return seed_history(live_server.app.state.engine, 45)


def show(page: Any, url: str, size: dict[str, int], shot: Path) -> None:
    page.set_viewport_size(size)
    page.goto(url)
    page.screenshot(path=str(shot), full_page=True)


@pytest.mark.parametrize("width", WIDTHS)
def test_no_page_scrolls_sideways_at_desktop_or_phone_width(
    page: Any, live_server: LiveServer, history: list[str], width: str, tmp_path: Path
) -> None:
    completed = history[0]  # index 0: a completed panel with a table and a very long word
    pages = {
        "home": "/",
        "history": "/debates",
        "debate": f"/debates/{completed}",
        "api": "/docs",
        "missing": "/debates/" + "x" * 300,  # the error page repeats the unbroken id
    }
    for name, path in pages.items():
        show(page, live_server.url + path, WIDTHS[width], tmp_path / f"{name}-{width}.png")
        assert page.evaluate(SIDEWAYS) <= 0, f"{path} scrolls sideways at {width} width"


@pytest.mark.parametrize("width", WIDTHS)
def test_no_word_in_a_table_of_debates_is_broken_in_the_middle(
    page: Any, live_server: LiveServer, history: list[str], width: str, tmp_path: Path
) -> None:
    for name, path in (("home", "/"), ("history", "/debates")):
        show(page, live_server.url + path, WIDTHS[width], tmp_path / f"{name}-{width}.png")
        assert page.locator("table.debates td").count() > 0
        assert page.evaluate(BROKEN_WORDS) == [], f"words broken on {path} at {width} width"


def test_on_a_phone_each_value_in_the_history_is_labelled_with_its_column(
    page: Any, live_server: LiveServer, history: list[str], tmp_path: Path
) -> None:
    show(page, f"{live_server.url}/debates", PHONE, tmp_path / "history-phone.png")
    headers = page.evaluate(HEADERS)
    rows = page.evaluate(CELL_LABELS)
    assert len(rows) == 20
    for labels in rows:
        # The topic leads the card on its own; every other value is named by its column.
        assert labels[0] in ("", "none")
        assert labels[1:] == [h for h in headers[1:] if h in labels[1:]]
        assert set(labels[1:]) >= {"Format", "Status", "Tokens", "Date (UTC)"}
    assert page.locator("table.debates thead").is_hidden()


@pytest.mark.parametrize("width", [390, 800, 1000, 1101, 1600])
def test_the_table_of_debates_fits_its_box_at_every_width(
    page: Any, live_server: LiveServer, history: list[str], width: int, tmp_path: Path
) -> None:
    size = {"width": width, "height": 900}
    show(page, f"{live_server.url}/debates", size, tmp_path / f"history-{width}.png")
    box = page.evaluate(
        "() => { const box = document.querySelector('.table-scroll');"
        " return box.scrollWidth - box.clientWidth; }"
    )
    assert box <= 0, f"the table scrolls inside its box at {width} px"
    assert page.evaluate(SIDEWAYS) <= 0
    assert page.evaluate(BROKEN_WORDS) == []
