"""Model text and topics are inert wherever they appear: the Markdown renderer keeps raw HTML
as text and the sanitizer drops what the parser lets through, and every page (debate, history,
home, the stream's fragments) shows hostile text escaped, still readable, never live."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.events import Event
from app.web.render import markdown_html
from app.web.stream import Fragments
from tests.validation.conftest import (
    GIANT_TOKEN,
    HOSTILE_TEXT,
    IFRAME,
    IMG,
    JS_LINK,
    PAYLOADS,
    SCRIPT,
    STYLE,
    hostile_turns,
    inline_scripts,
    live_markup,
    own_tags,
    save_debate,
    visible_text,
)

HOSTILE_TOPIC = f"Tabs {SCRIPT} or {IMG} spaces {GIANT_TOKEN}"


def assert_inert(page: str) -> None:
    assert live_markup(page, allowed=own_tags(page)) == []
    for body in inline_scripts(page):
        assert "alert" not in body


# -- the renderer ---------------------------------------------------------------------------


@pytest.mark.parametrize("payload", PAYLOADS, ids=lambda p: p[:24])
def test_each_payload_renders_as_inert_text(payload: str) -> None:
    html = str(markdown_html(f"Before {payload} after"))
    assert live_markup(html) == []
    assert "Before" in html and "after" in html


def test_raw_html_stays_visible_as_escaped_text() -> None:
    html = str(markdown_html(HOSTILE_TEXT))
    shown = visible_text(html)
    for text in (SCRIPT, IMG, IFRAME, STYLE, JS_LINK, "<b>raw block</b>"):
        assert text in shown
    assert GIANT_TOKEN in shown


def test_javascript_links_lose_their_target_but_keep_their_words() -> None:
    html = str(markdown_html("[click me](javascript:alert(1)) and [ok](https://example.org)"))
    assert "javascript:" not in html.split("click me")[0]
    assert 'href="javascript' not in html
    assert "click me" in html
    assert 'href="https://example.org"' in html and 'rel="noopener noreferrer nofollow"' in html


@pytest.mark.parametrize(
    "source",
    [
        "[a](data:text/html;base64,PHNjcmlwdD4=)",
        "[a](vbscript:msgbox(1))",
        "[a]( JaVaScRiPt:alert(1))",
        "<JAVASCRIPT:alert(1)>",
        "![pic](https://tracker.example/p.png)",
        '[a](https://e.org "x\\" onmouseover=\\"alert(1)")',
    ],
)
def test_tricky_links_and_images_are_neutralised(source: str) -> None:
    html = str(markdown_html(source))
    assert live_markup(html) == []
    assert "<img" not in html  # remote images would leak that the page was read


def test_mailto_links_survive() -> None:
    html = str(markdown_html("[write](mailto:someone@example.org)"))
    assert 'href="mailto:someone@example.org"' in html


# -- the pages ------------------------------------------------------------------------------


def test_a_finished_debate_page_shows_hostile_text_escaped_and_nothing_live(
    client: TestClient,
) -> None:
    engine = client.app.state.engine  # type: ignore[attr-defined]
    debate_id = save_debate(
        engine, topic=HOSTILE_TOPIC, turns=hostile_turns(), synthesis=HOSTILE_TEXT
    )

    page = client.get(f"/debates/{debate_id}").text

    assert_inert(page)
    shown = visible_text(page)
    # The topic twice (title, heading), two turns, the synthesis, the provider's error.
    assert shown.count(SCRIPT) >= 6
    assert IMG in shown and IFRAME in shown and GIANT_TOKEN in shown
    title = page.split("<title>", 1)[1].split("</title>", 1)[0]
    assert "<" not in title and "&lt;script&gt;" in title
    assert f"upstream said {SCRIPT} {IMG}" in shown


def test_a_failed_debates_reason_is_shown_escaped(client: TestClient) -> None:
    engine = client.app.state.engine  # type: ignore[attr-defined]
    reason = f"r1.opening.claude failed: {IMG} {SCRIPT}"
    debate_id = save_debate(engine, topic="A topic", status="failed", reason=reason)

    page = client.get(f"/debates/{debate_id}").text

    assert_inert(page)
    assert reason in visible_text(page)


def test_history_and_home_show_hostile_topics_escaped(client: TestClient) -> None:
    engine = client.app.state.engine  # type: ignore[attr-defined]
    save_debate(engine, topic=HOSTILE_TOPIC, status="failed", reason=f"{SCRIPT} went wrong")

    for path in ("/debates", "/", f"/debates?q={SCRIPT}"):
        page = client.get(path).text
        assert_inert(page)
        assert "Tabs <script>" in visible_text(page), path


def test_a_live_page_shows_live_turn_text_escaped(client: TestClient) -> None:
    engine = client.app.state.engine  # type: ignore[attr-defined]
    hub = client.app.state.hub  # type: ignore[attr-defined]
    debate_id = save_debate(engine, topic=HOSTILE_TOPIC, status="running")
    hub.publish(
        debate_id,
        "turn_started",
        {"key": "r1.opening.claude", "role": "claude", "label": SCRIPT, "provider": "anthropic",
         "model": IMG, "phase": "opening", "round": 1},
    )  # fmt: skip
    hub.publish(debate_id, "delta", {"key": "r1.opening.claude", "text": HOSTILE_TEXT})

    page = client.get(f"/debates/{debate_id}").text

    assert_inert(page)
    shown = visible_text(page)
    assert SCRIPT in shown and IMG in shown and GIANT_TOKEN in shown


def test_stream_fragments_carry_deltas_and_turns_escaped(client: TestClient) -> None:
    app = client.app
    engine = app.state.engine  # type: ignore[attr-defined]
    debate_id = save_debate(
        engine, topic=HOSTILE_TOPIC, turns=hostile_turns(), synthesis=HOSTILE_TEXT
    )
    state = app.state  # type: ignore[attr-defined]
    fragments = Fragments(state.templates.env, engine, debate_id, state.timelines)
    started = {
        "key": "r2.rebuttal.gemini", "role": "gemini", "label": SCRIPT, "provider": "gemini",
        "model": IMG, "phase": "rebuttal", "round": 2,
    }  # fmt: skip
    retrying = {"key": "x", "attempt": 2, "error_kind": SCRIPT, "error_message": IMG}
    events = [
        Event(1, "e", debate_id, "turn_started", started),
        Event(2, "e", debate_id, "delta", {"key": "r2.rebuttal.gemini", "text": HOSTILE_TEXT}),
        Event(3, "e", debate_id, "retrying", retrying),
        Event(4, "e", debate_id, "turn_completed", {"key": "r1.opening.claude"}),
        Event(5, "e", debate_id, "end", {"status": "completed"}),
    ]

    for event in events:
        message = fragments.for_event(event)
        assert message is not None
        data = str(message.data)
        assert live_markup(data) == [], event.type
        assert "alert(1)" in visible_text(data), event.type
