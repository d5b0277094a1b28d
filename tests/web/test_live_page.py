"""The debate page while a debate is live, in a real browser (Debian's Chromium driven by
Playwright, at 1600 px and 390 px) against the app served by uvicorn, the seats answering
slowly from the fake LLM server; and the finished page's cards, read from the test client.

Live: the header says which round and step runs, how long it has run (ticking) and, once a
full round is behind it, an estimate of what is left; a turn whose seat has not written yet
says "waiting", then "writing…"; its token count grows as it is written; the page keeps the
turn being written in view until the reader scrolls up, and "Follow live" brings it back; a
live turn is rendered as the finished one will be (no paragraph merge when it completes); a
dropped live connection is said, and so is its return. Comfort: copy buttons copy a turn's
and the synthesis's Markdown; the page goes dark with the system; cancel asks first, with or
without JavaScript. The page's own Markdown renderer agrees with the server's on a set of
samples; the estimate is checked on its own. Finished cards say each thing once, and the icon
needs no sign-in.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.models import Debate
from app.web.render import markdown_html
from app.web.view import Progress, TurnView, duration_text, group_turns, progress_of
from tests.fakes.llm_server import FakeLLMServer
from tests.security.conftest import TOKEN, running, with_access
from tests.web.conftest import LiveServer, start_duel, wait_for_debate
from tests.web.test_browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    SCREENSHOTS,
    pinned_scripts,
    unavailable,
)

BROWSER_FIXTURES = (pinned_scripts,)  # imported to be used here
DESKTOP = {"width": 1600, "height": 1000}
PHONE = {"width": 390, "height": 844}
WIDTHS = {"desktop": DESKTOP, "phone": PHONE}

PARAGRAPHS = (
    "**Position.** Spaces keep diffs stable across editors,\n"
    "and PEP 8 asks for four of them.\n\n"
    "- Tabs let each reader choose a width.\n"
    "- Mixed indentation breaks Python outright.\n\n"
    "A formatter settles the question for a team: pick one, enforce it in CI, and move on "
    "to problems that matter more than whitespace. "
)
REPLY = PARAGRAPHS * 2
GREEN = "rgb(43, 138, 62)"  # --ok, the success colour
STATUS_IS = "(s) => document.querySelector('#status').textContent.trim() == s"
# Each live turn: its key, badge, live token count and how much source it holds. (While htmx
# settles a swap, for a moment, a finished turn still wears the live one's class.)
LIVE_TURNS = """() => [...document.querySelectorAll('article.turn-live')]
  .filter(a => a.querySelector('.text.live')).map(a => ({
    key: a.dataset.key,
    badge: a.querySelector('.badge').textContent.trim(),
    tokens: a.querySelector('.live-tokens').textContent,
    chars: a.querySelector('.text.live').textContent.length,
  }))"""
# The turn being written (of the live ones with text, the lowest): where its bottom is.
WRITING_BOTTOM = """() => {
  const live = [...document.querySelectorAll('article.turn-live .text.live')]
    .filter(e => e.textContent.length > 0).map(e => e.closest('article'));
  if (!live.length) return null;
  return Math.max(...live.map(a => a.getBoundingClientRect().bottom)) - window.innerHeight;
}"""
IN_VIEWPORT = """(selector) => {
  const box = document.querySelector(selector).getBoundingClientRect();
  return box.top >= 0 && box.bottom <= window.innerHeight;
}"""
SHOWN_CHARS = """() => [...document.querySelectorAll('.text.live')]
  .reduce((n, e) => n + e.textContent.length, 0)"""
# A rendered text as (tag, words) per block, and all its words: what a reader sees.
STRUCTURE = """(selector) => {
  const el = document.querySelector(selector);
  if (!el) return null;
  const words = e => e.innerText.replace(/\\s+/g, ' ').trim();
  return {blocks: [...el.children].map(c => [c.tagName, words(c)]), text: words(el)};
}"""


# -- the browser ------------------------------------------------------------------------------


@pytest.fixture
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        unavailable("no Chromium at /usr/bin/chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def open_page(browser: Any, pinned_scripts: dict[str, bytes]) -> Callable[..., Any]:
    """A new page in a context of its own (``options`` as Playwright's ``new_context``),
    offline but for this app and the pinned htmx files."""
    from playwright.sync_api import Route

    def cdn(route: Route) -> None:
        route.fulfill(
            status=200,
            body=pinned_scripts[route.request.url],
            content_type="application/javascript; charset=utf-8",
            headers={"Access-Control-Allow-Origin": "*"},
        )

    def make(**options: Any) -> Any:
        context = browser.new_context(**{"viewport": DESKTOP, **options})
        context.route("https://**/*", lambda route: route.abort())
        for url in pinned_scripts:
            context.route(url, cdn)
        return context.new_page()

    return make


def start(live: LiveServer, **fields: Any) -> str:
    body = {"topic": "Tabs or spaces for Python code", "rounds": 1, **fields}
    response = httpx.post(f"{live.url}/api/debates", json=body, timeout=10)
    assert response.status_code == 201, response.text
    debate_id: str = response.json()["id"]
    return debate_id


def turns_of(live: LiveServer, debate_id: str) -> dict[str, str]:
    data = httpx.get(f"{live.url}/api/debates/{debate_id}", timeout=10).json()
    return {turn["key"]: turn["text"] for turn in data["turns"]}


def poll(page: Any, until: Callable[[], Any], timeout: float = 30, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = until()
        if value:
            return value
        page.wait_for_timeout(40)
    raise AssertionError(f"timed out waiting for {what or until}")


def writing_in_view(page: Any) -> bool:
    """The bottom of the turn being written, where its text grows, is on screen."""
    bottom = page.evaluate(WRITING_BOTTOM)
    height: int = page.evaluate("() => window.innerHeight")
    return bottom is not None and -0.9 * height < bottom <= 2


WIDER_THAN_THE_WINDOW = """() => document.documentElement.scrollWidth <= window.innerWidth + 1
  ? [] : [...document.querySelectorAll('body *')]
    .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)
    .map(e => e.tagName + '#' + e.id + '.' + e.className).slice(-8)"""


def no_sideways_scroll(page: Any) -> bool:
    wider: list[str] = page.evaluate(WIDER_THAN_THE_WINDOW)
    assert wider == [], f"the page scrolls sideways: {wider}"
    return True


# -- while it runs ------------------------------------------------------------------------------


@pytest.mark.browser
@pytest.mark.timeout(150)
@pytest.mark.parametrize("width", list(WIDTHS))
def test_the_live_page_says_where_the_debate_is_and_follows_the_turn_being_written(
    open_page: Callable[..., Any], live_server: LiveServer, fake_llm: FakeLLMServer, width: str
) -> None:
    # The Gemini seat answers late: its opening waits while Claude's is written.
    fake_llm.rule(
        contains="", provider="gemini", reply=REPLY, token_delay=0.01, first_token_delay=1.5
    )
    fake_llm.rule(contains="", reply=REPLY, token_delay=0.012)
    page = open_page(viewport=WIDTHS[width])
    debate_id = start(live_server, rounds=3)
    page.goto(f"{live_server.url}/debates/{debate_id}")

    # Openings: one written, the other waiting for its first token, then both written.
    def openings() -> dict[str, str]:
        turns = page.evaluate(LIVE_TURNS)
        return {t["key"]: t["badge"] for t in turns if t["chars"] or t["badge"] == "waiting"}

    def one_waits() -> dict[str, str] | None:
        badges = openings()
        return badges if sorted(badges.values()) == ["waiting", "writing…"] else None

    badges = poll(page, one_waits, what="one opening written while the other waits")
    assert badges["r1.opening.gemini"] == "waiting"
    assert "Round 1 of up to 3" in page.text_content("#progress-step")
    assert "Openings" in page.text_content("#progress-step")
    poll(page, lambda: "waiting" not in openings().values(), what="the late seat to write")

    # The token count of a turn being written counts up, and the final figure replaces it.
    counts: dict[str, list[int]] = {}

    def count_grows() -> bool:
        for turn in page.evaluate(LIVE_TURNS):
            if turn["chars"]:
                counts.setdefault(turn["key"], []).append(int(re.sub(r"\D", "", turn["tokens"])))
        return any(len(set(seen)) >= 3 for seen in counts.values())

    poll(page, count_grows, what="a growing token count")
    assert all(seen == sorted(seen) for seen in counts.values()), counts
    page.wait_for_selector("#t-r1-opening-claude.turn-completed", timeout=15_000)
    foot = page.text_content("#t-r1-opening-claude .turn-foot")
    assert "so far" not in foot and re.search(r"\d+ out", foot), foot

    # The clock ticks.
    first = page.text_content("#elapsed")
    poll(page, lambda: page.text_content("#elapsed") != first, timeout=5, what="the clock")

    # Round 2 runs, and the page keeps the turn being written in view.
    poll(page, lambda: "Round 2" in (page.text_content("#progress-step") or ""), what="round 2")
    taller = "() => document.body.scrollHeight > window.innerHeight * 1.3"
    poll(page, lambda: page.evaluate(taller), what="a page taller than the window")
    poll(page, lambda: writing_in_view(page), what="the turn being written in view")
    assert page.is_hidden("#follow")

    # The reader scrolls up: the page stays where the reader is, and offers to follow again.
    page.mouse.move(WIDTHS[width]["width"] / 2, 300)
    page.mouse.wheel(0, -700)
    poll(page, lambda: page.is_visible("#follow"), timeout=5, what="the follow button")
    parked = page.evaluate("() => window.scrollY")
    grown_from = page.evaluate(SHOWN_CHARS)
    # More text arrives (or a turn completes and leaves the live ones).
    poll(
        page,
        lambda: abs(page.evaluate(SHOWN_CHARS) - grown_from - 100) > 100,
        what="more text",
    )
    assert abs(page.evaluate("() => window.scrollY") - parked) <= 2
    page.click("#follow")
    poll(page, lambda: writing_in_view(page), timeout=5, what="following again")
    assert page.is_hidden("#follow")

    # After a full round the header estimates what is left, and says it is an estimate.
    remaining = poll(
        page,
        lambda: page.query_selector("#remaining") and page.text_content("#remaining"),
        what="an estimate",
    )
    assert "estimate" in remaining and re.search(r"\d+ (s|min)|a few seconds", remaining)
    assert "Round 3 of up to 3" in page.text_content("#progress-step")
    assert no_sideways_scroll(page)
    page.screenshot(path=str(SCREENSHOTS / f"live-streaming-{width}.png"))
    page.mouse.wheel(0, -20_000)  # up to the header; the page stops following
    page.wait_for_timeout(300)
    page.screenshot(path=str(SCREENSHOTS / f"live-header-{width}.png"))

    page.wait_for_function(STATUS_IS, arg="completed", timeout=60_000)
    assert page.locator("#remaining").count() == 0  # no estimate once it is over
    assert "ran for" in page.text_content("#progress")
    assert page.locator("#follow").count() == 0
    assert no_sideways_scroll(page)
    page.screenshot(path=str(SCREENSHOTS / f"live-finished-{width}.png"), full_page=True)


@pytest.mark.browser
@pytest.mark.timeout(90)
@pytest.mark.parametrize("width", list(WIDTHS))
def test_a_live_turn_is_rendered_as_the_finished_one_with_no_paragraph_merge(
    open_page: Callable[..., Any], live_server: LiveServer, fake_llm: FakeLLMServer, width: str
) -> None:
    # Three big tokens: the whole text is on the page well before the turn completes.
    tokens = [PARAGRAPHS[:60], PARAGRAPHS[60:], "\n"]
    fake_llm.rule(contains="", reply="", tokens=tokens, token_delay=1.0)
    page = open_page(viewport=WIDTHS[width])
    debate_id = start(live_server)
    page.goto(f"{live_server.url}/debates/{debate_id}")
    key = "r1-opening-claude"

    def live_and_whole() -> Any:
        if page.locator(f"#t-{key}.turn-live").count() == 0:
            return None
        shown = page.evaluate(STRUCTURE, f"#m-{key}")
        return shown if shown and "move on to problems" in shown["text"] else None

    before = poll(page, live_and_whole, what="the whole text, still live")
    page.wait_for_selector(f"#t-{key}.turn-completed", timeout=15_000)
    after = page.evaluate(STRUCTURE, f"#t-{key} .text.md")
    assert [tag for tag, _ in before["blocks"]] == ["P", "UL", "P"]
    assert before == after
    assert page.locator(f"#t-{key} .text.md strong").count() == 1
    assert no_sideways_scroll(page)


@pytest.mark.browser
@pytest.mark.timeout(60)
def test_the_page_renders_markdown_as_the_server_does(
    open_page: Callable[..., Any], live_server: LiveServer
) -> None:
    samples = [
        PARAGRAPHS,
        "# Title\n\nSome *em* and **strong**, `code <b>`, ~~gone~~ and a [link](https://a.example).",
        "1. first\n2. second\n   continued\n\n3. third, loose now",
        "- a\n  - nested\n- b\n\n> quoted\n> still quoted\n\n---\n\nTail  \nafter a hard break",
        "```python\nprint('<tag>')\n```\n\n| A | B |\n|:--|--:|\n| 1 | 2 |\n| 3 | 4 |",
        "Setext\n===\n\nA <script>alert(1)</script> and [bad](javascript:alert(1)) link.",
        "Line one\nline two\n\n\n\nAfter blank lines\n    indented code?\n",
    ]
    page = open_page()
    page.goto(f"{live_server.url}/")
    normalize = """(html) => {
      const t = document.createElement('template');
      t.innerHTML = html;
      const walk = n => n.nodeType === 3 ? n.textContent.replace(/\\s+/g, ' ') :
        n.nodeType === 1 ? '<' + n.tagName + [...n.attributes].map(a => a.name + '=' + a.value)
          .sort().join(',') + '>' + [...n.childNodes].map(walk).join('').trim() + '</>' : '';
      return [...t.content.childNodes].map(walk).join('').replace(/> </g, '><').trim();
    }"""
    for sample in samples:
        ours = page.evaluate("(text) => window.ArgueMarkdown.render(text)", sample)
        theirs = str(markdown_html(sample))
        assert page.evaluate(normalize, ours) == page.evaluate(normalize, theirs), sample
    assert "<script" not in page.evaluate("(t) => ArgueMarkdown.render(t)", samples[5])


@pytest.mark.browser
@pytest.mark.timeout(90)
def test_a_dropped_live_connection_is_said_and_so_is_its_return(
    open_page: Callable[..., Any], live_server: LiveServer, fake_llm: FakeLLMServer
) -> None:
    fake_llm.rule(contains="", reply=REPLY * 3, token_delay=0.02)
    page = open_page()
    debate_id = start(live_server)

    def refuse(route: Any) -> None:
        route.abort()

    page.route("**/debates/*/stream*", refuse)
    page.goto(f"{live_server.url}/debates/{debate_id}")
    notice = page.locator("#connection")
    notice.wait_for(state="visible", timeout=10_000)
    assert "connection lost" in notice.text_content().lower()

    page.unroute("**/debates/*/stream*", refuse)
    page.wait_for_function(
        "() => /is back/.test(document.querySelector('#connection').textContent)",
        timeout=20_000,
    )
    notice.wait_for(state="hidden", timeout=10_000)
    # The stream is followed again: text arrives.
    page.wait_for_function(
        "() => [...document.querySelectorAll('.text.live')].some(e => e.textContent.length > 80)",
        timeout=20_000,
    )


# -- comfort ------------------------------------------------------------------------------------


@pytest.mark.browser
@pytest.mark.timeout(90)
@pytest.mark.parametrize("width", list(WIDTHS))
def test_copy_buttons_copy_a_turn_and_the_synthesis_as_markdown(
    open_page: Callable[..., Any],
    live_server: LiveServer,
    fake_llm: FakeLLMServer,
    width: str,
) -> None:
    fake_llm.rule(contains="", reply=PARAGRAPHS)
    debate_id = start(live_server)
    page = open_page(viewport=WIDTHS[width], permissions=["clipboard-read", "clipboard-write"])
    page.goto(f"{live_server.url}/debates/{debate_id}")
    page.wait_for_function(STATUS_IS, arg="completed", timeout=30_000)
    turns = turns_of(live_server, debate_id)
    clipboard = "() => navigator.clipboard.readText()"

    page.click("#t-r1-opening-gemini .btn-copy")
    page.wait_for_function(
        "() => document.querySelector('#t-r1-opening-gemini .btn-copy').textContent == 'Copied'"
    )
    assert page.evaluate(clipboard) == turns["r1.opening.gemini"]
    assert "**Position.**" in page.evaluate(clipboard)  # the source, not the rendered text

    page.click("#outcome .btn-copy")
    synthesis = httpx.get(f"{live_server.url}/api/debates/{debate_id}").json()["synthesis"]
    poll(page, lambda: page.evaluate(clipboard) == synthesis, timeout=5, what="the synthesis")
    # A duel that did not converge is not shown as a success.
    bar = page.evaluate(
        "() => getComputedStyle(document.getElementById('outcome')).borderLeftColor"
    )
    assert bar != GREEN
    assert no_sideways_scroll(page)


@pytest.mark.browser
@pytest.mark.timeout(60)
def test_the_pages_follow_the_systems_dark_theme(
    open_page: Callable[..., Any], live_server: LiveServer, fake_llm: FakeLLMServer
) -> None:
    debate_id = start(live_server)
    luminance = """() => {
      const [r, g, b] = getComputedStyle(document.body).backgroundColor.match(/\\d+/g).map(Number);
      return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
    }"""
    card = "() => getComputedStyle(document.querySelector('.card')).backgroundColor"
    for scheme, dark in (("dark", True), ("light", False)):
        page = open_page(color_scheme=scheme)
        for path in ("/", f"/debates/{debate_id}"):
            page.goto(f"{live_server.url}{path}")
            assert (page.evaluate(luminance) < 0.2) is dark, (scheme, path)
        page.screenshot(path=str(SCREENSHOTS / f"debate-{scheme}.png"), full_page=True)
        assert (page.evaluate(card) != "rgb(255, 255, 255)") is dark


@pytest.mark.browser
@pytest.mark.timeout(60)
@pytest.mark.parametrize("javascript", [True, False], ids=["with-js", "without-js"])
def test_cancel_asks_for_confirmation_first(
    open_page: Callable[..., Any],
    live_server: LiveServer,
    fake_llm: FakeLLMServer,
    javascript: bool,
) -> None:
    fake_llm.rule(contains="", reply=REPLY * 5, token_delay=0.05)
    debate_id = start(live_server)
    page = open_page(java_script_enabled=javascript, viewport=PHONE)
    page.goto(f"{live_server.url}/debates/{debate_id}")
    assert page.is_hidden("#cancel-yes")
    if not javascript:  # read-only: no buttons that need scripts
        assert page.is_hidden("#follow")
        assert all(button.is_hidden() for button in page.locator(".btn-copy").all())
    page.click("#cancel-confirm summary")
    assert page.is_visible("#cancel-yes")
    if javascript:  # the question stays in view: the page stops following the live turn
        page.wait_for_timeout(500)
        assert page.evaluate(IN_VIEWPORT, "#cancel-yes")
    assert "kept" in page.text_content("#cancel-confirm")
    page.screenshot(path=str(SCREENSHOTS / f"cancel-confirm-js-{javascript}.png"))
    time.sleep(0.3)
    status = httpx.get(f"{live_server.url}/api/debates/{debate_id}").json()["status"]
    assert status in ("queued", "running")  # opening the question cancels nothing
    if javascript:  # "Keep it running" closes the question
        page.click("text=Keep it running")
        assert page.is_hidden("#cancel-yes")
        page.click("#cancel-confirm summary")
    page.click("#cancel-yes")
    page.wait_for_url(f"**/debates/{debate_id}")
    # Without JavaScript the page is as the server made it after the cancel: read it again.
    poll(page, lambda: cancelled_on(page), timeout=15, what="the cancelled status")


def cancelled_on(page: Any) -> bool:
    if page.text_content("#status").strip() == "cancelled":
        return True
    page.reload()
    return False


# -- the estimate (pure) --------------------------------------------------------------------


def _turn(key: str, start: float | None, end: float | None, at: datetime) -> TurnView:
    round_text, phase, role = key.split(".")
    return TurnView(
        key=key,
        role=role,
        label=role.title(),
        provider="fake",
        model="m",
        phase=phase,
        round=int(round_text[1:]),
        status="completed" if end is not None else "live",
        started_at=at + timedelta(seconds=start) if start is not None else None,
        finished_at=at + timedelta(seconds=end) if end is not None else None,
    )


def test_the_estimate_is_the_rounds_left_times_an_average_round_once_one_is_known() -> None:
    began = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    debate = Debate(id="d1", topic="t", format="duel", rounds=4, status="running", started_at=began)
    done = [
        _turn("r1.opening.claude", 0, 10, began),
        _turn("r1.opening.gemini", 0, 8, began),
        _turn("r2.rebuttal.claude", 10, 20, began),
        _turn("r2.response.gemini", 20, 30, began),
        _turn("r2.convergence.claude", 30, 40, began),
    ]

    def estimate(turns: list[TurnView], now: float) -> Progress:
        groups = group_turns(turns, format="duel", seat_order=["claude", "gemini"])
        return progress_of(debate, groups, now=began + timedelta(seconds=now))

    # In round 2 no round after the first has finished: nothing to base an estimate on.
    assert estimate(done[:3], now=15).remaining_seconds is None
    assert estimate(done[:3], now=15).step == "Round 2 of up to 4 · Rebuttal"

    third = [
        _turn("r3.rebuttal.claude", 40, 50, began),
        _turn("r3.response.gemini", 50, None, began),
    ]
    progress = estimate(done + third, now=55)
    # What is left of round 3 (30 s a round, 15 s in), round 4, and one step to close.
    assert progress.remaining_seconds == (30 - 15) + 30 + 10
    assert progress.step == "Round 3 of up to 4 · Response"
    assert progress.elapsed_text == "55 s"
    assert estimate(done + third, now=200).remaining_seconds == 0 + 30 + 10

    synthesis = _turn("r3.synthesis.claude", 60, None, began)
    assert estimate([*done, *third, synthesis], now=61).remaining_seconds is None


def test_durations_read_as_seconds_minutes_and_hours() -> None:
    assert [duration_text(s) for s in (0, 59, 60, 125, 3600, 3725)] == [
        "0 s",
        "59 s",
        "1 min 00 s",
        "2 min 05 s",
        "1 h 00 min",
        "1 h 02 min",
    ]


# -- the finished page's cards and the icon (test client) ---------------------------------------


class VisibleText(HTMLParser):
    """The text a reader sees in a page: not in <template>, hidden elements, or scripts."""

    SKIP = frozenset({"template", "script", "style"})
    VOID = frozenset({"br", "hr", "img", "input", "meta", "link", "source", "wbr"})

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._stack: list[bool] = []  # per open element: is it skipped

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.VOID:
            return
        skipped = tag in self.SKIP or any(name == "hidden" for name, _ in attrs)
        self._stack.append(skipped or bool(self._stack and self._stack[-1]))

    def handle_endtag(self, tag: str) -> None:
        if tag not in self.VOID and self._stack:
            self._stack.pop()

    def handle_data(self, data: str) -> None:
        if not (self._stack and self._stack[-1]):
            self.parts.append(data)

    @classmethod
    def of(cls, html: str) -> str:
        parser = cls()
        parser.feed(html)
        return re.sub(r"\s+", " ", " ".join(parser.parts))


def section(html: str, start: str, end: str) -> str:
    begin = html.index(start)
    return html[begin : html.index(end, begin + len(start))]


def test_a_convergence_card_shows_its_text_once_and_an_open_outcome_says_so_once(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    reason = "Both sides still weigh editor defaults against enforced formatting differently."
    fake_llm.rule(contains="converge", reply=f"CONVERGED: no\nREASON: {reason}")
    fake_llm.rule(contains="", reply="Spaces, because PEP 8 asks for them.")
    debate_id = start_duel(client, rounds=2)
    assert wait_for_debate(client, debate_id) == "completed"
    debate = client.get(f"/api/debates/{debate_id}").json()
    assert debate["converged"] is False
    html = client.get(f"/debates/{debate_id}").text

    card = VisibleText.of(section(html, 'id="t-r2-convergence-claude"', "</article>"))
    assert card.count(reason) == 1, card
    assert "Not converged" in card

    outcome = section(html, '<section class="outcome', "</section>")
    said = VisibleText.of(outcome).lower()
    assert said.count("not fully reconciled") == 1, said
    assert "outcome-open" in outcome and "outcome-settled" not in outcome


def test_the_icon_is_served_at_favicon_ico_without_signing_in(settings: Settings) -> None:
    with running(with_access(settings, auth_token=TOKEN)) as client:
        assert client.get("/debates").status_code in (302, 303, 401)  # the rest is closed
        icon = client.get("/favicon.ico")
        assert icon.status_code == 200
        assert icon.headers["content-type"].startswith("image/svg+xml")
        assert b"<svg" in icon.content
