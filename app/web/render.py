"""Markdown from models turned into HTML that is safe to put in a page.

Model output is untrusted text. It is parsed as CommonMark (plus tables and strikethrough)
with raw HTML switched off, so a ``<script>`` in a reply stays text; the HTML that results is
then cleaned by nh3 against an allow-list, so nothing the parser lets through (a
``javascript:`` link, an unexpected attribute) reaches the browser either.
"""

from __future__ import annotations

from functools import lru_cache

import nh3
from markdown_it import MarkdownIt
from markupsafe import Markup

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
    "td": {"style"},
    "th": {"style"},
}
URL_SCHEMES = frozenset({"http", "https", "mailto"})


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    # linkify stays off: bare URLs in model text are left as text, never turned into links.
    return MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(
        ["table", "strikethrough"]
    )


def markdown_html(text: str | None) -> Markup:
    """``text`` as sanitized HTML, ready for a template."""
    if not text:
        return Markup("")
    raw = _parser().render(text)
    clean: str = nh3.clean(
        raw,
        tags=set(ALLOWED_TAGS),
        attributes={tag: set(names) for tag, names in ALLOWED_ATTRIBUTES.items()},
        url_schemes=set(URL_SCHEMES),
        link_rel="noopener noreferrer nofollow",
        filter_style_properties={"text-align"},
    )
    return Markup(clean)  # sanitized just above
