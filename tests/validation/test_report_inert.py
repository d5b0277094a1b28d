"""The shareable HTML report of a debate whose topic, turns, provider error and synthesis are
hostile text: every payload comes out as inert text, as on the debate page; the only live
markup is the report's own ``<style>`` and ``<meta>`` elements, and nothing is loaded by URL."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.validation.conftest import (
    HOSTILE_TEXT,
    IMG,
    SCRIPT,
    hostile_turns,
    inline_scripts,
    live_markup,
    page_tags,
    save_debate,
    visible_text,
)

HOSTILE_TOPIC = f"Tabs {SCRIPT} or {IMG} spaces"


def test_hostile_model_text_in_the_report_is_inert(client: TestClient) -> None:
    engine = client.app.state.engine  # type: ignore[attr-defined]
    debate_id = save_debate(
        engine, topic=HOSTILE_TOPIC, turns=hostile_turns(), synthesis=HOSTILE_TEXT
    )

    html = client.get(f"/debates/{debate_id}/report.html").text

    tags = page_tags(html)
    own = [(tag, attrs) for tag, attrs in tags if tag == "style" and not attrs]
    assert len(own) == 1
    assert live_markup(html, allowed=own) == []
    assert inline_scripts(html) == []
    assert not [attrs for _, attrs in tags if "src" in attrs or "style" in attrs]
    assert not [attrs for _, attrs in tags if "://" in attrs.get("href", "")]
    text = visible_text(html)
    assert SCRIPT in text and IMG in text  # shown as the text it is, not run
    assert text.count(SCRIPT) >= 3  # the topic, both openings' text and the synthesis
