"""A Markdown table a model aligns (``|:--|:-:|--:|``) keeps its alignment under the page's
Content-Security-Policy: the cells carry an alignment class, never an inline ``style`` (which
the policy refuses), and the sanitizer lets only those classes through."""

from __future__ import annotations

import re
from typing import Any

import pytest

from app.web.render import markdown_html
from tests.validation.conftest import TurnText, page_tags, save_debate
from tests.web.conftest import LiveServer
from tests.web.test_browser import page, pinned_scripts  # noqa: F401  (fixtures)

ALIGNED_TABLE = "\n".join(
    [
        "| left | centre | right | plain |",
        "|:-----|:------:|------:|-------|",
        "| a | b | 1,234 | d |",
        "",
    ]
)


def cells(html: str) -> list[dict[str, str]]:
    return [attrs for tag, attrs in page_tags(html) if tag in ("th", "td")]


def test_an_aligned_table_renders_alignment_classes_and_no_inline_style() -> None:
    html = str(markdown_html(ALIGNED_TABLE))

    assert "style=" not in html
    classes = [attrs.get("class") for attrs in cells(html)]
    row = ["align-left", "align-center", "align-right", None]
    assert classes == row * 2, html


@pytest.mark.parametrize(
    "attribute",
    ['class="btn btn-primary"', 'class="align-right evil"', 'style="text-align:right"'],
)
def test_a_model_cannot_smuggle_other_classes_or_styles_into_a_cell(attribute: str) -> None:
    # Raw HTML is text, but the sanitizer is the second wall: feed it the markup directly.
    from app.web import render

    cleaned = render.sanitize(f"<table><tr><td {attribute}>x</td></tr></table>")
    assert "style=" not in cleaned
    assert "btn" not in cleaned and "evil" not in cleaned


@pytest.mark.browser
@pytest.mark.timeout(120)
def test_an_aligned_table_is_right_aligned_in_the_browser_with_no_policy_violation(
    page: Any,  # noqa: F811
    live_server: LiveServer,
) -> None:
    engine = live_server.app.state.engine
    turn = TurnText("r1.opening.claude", "claude", "opening", f"Figures:\n\n{ALIGNED_TABLE}")
    debate_id = save_debate(engine, topic="Aligned tables", turns=(turn,))
    console: list[str] = []
    page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))

    page.goto(f"{live_server.url}/debates/{debate_id}")
    page.wait_for_load_state("load")

    align = "(selector) => getComputedStyle(document.querySelector(selector)).textAlign"
    assert page.evaluate(align, ".text.md tbody td:nth-child(3)") == "right"
    assert page.evaluate(align, ".text.md tbody td:nth-child(2)") == "center"
    assert page.evaluate(align, ".text.md thead th:nth-child(3)") == "right"
    assert [m for m in console if re.search("Content Security Policy", m)] == []
    assert page.errors == []
