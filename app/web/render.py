"""Markdown from models turned into HTML that is safe to put in a page.

Model output is untrusted text. It is parsed as CommonMark (plus tables and strikethrough)
with raw HTML switched off (``app.commonmark``), so a ``<script>`` in a reply stays text;
the HTML that results is then cleaned by nh3 against an allow-list, so nothing the parser
lets through (a ``javascript:`` link, an unexpected attribute) reaches the browser either.

A table's column alignment is written as a class (``align-left``, ``align-center``,
``align-right``, styled by the stylesheet), never as an inline ``style``: the page's
Content-Security-Policy refuses inline styles, so alignment written that way would be lost
and reported as a violation in the console.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import nh3
from markdown_it.token import Token
from markupsafe import Markup

from app.commonmark import commonmark

RENDERED_TEXTS_KEPT = 512

ALLOWED_TAGS = frozenset(
    {
        "a", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6",
        "hr", "li", "ol", "p", "pre", "s", "strong", "table", "tbody", "td", "th", "thead",
        "tr", "ul",
    }
)  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "ol": {"start"},
}
ALIGNMENTS = frozenset({"left", "center", "right"})
ALIGNMENT_CLASSES = frozenset(f"align-{alignment}" for alignment in ALIGNMENTS)
ALLOWED_CLASSES = {"td": set(ALIGNMENT_CLASSES), "th": set(ALIGNMENT_CLASSES)}
URL_SCHEMES = frozenset({"http", "https", "mailto"})
CELL_OPENINGS = frozenset({"th_open", "td_open"})


def align_with_classes(tokens: Sequence[Token]) -> None:
    """Turn the parser's ``style="text-align:…"`` on table cells into an ``align-…`` class."""
    for token in tokens:
        if token.type not in CELL_OPENINGS:
            continue
        style = token.attrs.pop("style", None)
        alignment = str(style).removeprefix("text-align:").strip() if style else ""
        if alignment in ALIGNMENTS:
            token.attrSet("class", f"align-{alignment}")


def sanitize(html: str) -> str:
    """``html`` with only the allowed tags, attributes, classes and link schemes left."""
    clean: str = nh3.clean(
        html,
        tags=set(ALLOWED_TAGS),
        attributes={tag: set(names) for tag, names in ALLOWED_ATTRIBUTES.items()},
        allowed_classes={tag: set(names) for tag, names in ALLOWED_CLASSES.items()},
        url_schemes=set(URL_SCHEMES),
        link_rel="noopener noreferrer nofollow",
    )
    return clean


def markdown_html(text: str | None) -> Markup:
    """``text`` as sanitized HTML, ready for a template."""
    if not text:
        return Markup("")
    return _rendered(text)


# A finished turn is rendered when it is saved, again in the final page swapped in at the
# end, and in every page load while it is watched: the same text, the same HTML.
@lru_cache(maxsize=RENDERED_TEXTS_KEPT)
def _rendered(text: str) -> Markup:
    parser = commonmark()
    tokens = parser.parse(text)
    align_with_classes(tokens)
    raw = parser.renderer.render(tokens, parser.options, {})
    return Markup(sanitize(raw))  # sanitized just above
