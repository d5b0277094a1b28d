"""The one reading of Markdown that Argue applies to model text: CommonMark with tables and
strikethrough, raw HTML off. The debate page renders with it (``app.web.render``) and the
reports find a reply's own headings with it (``app.formats.markdown``), so a line the page
shows as a heading is the line a report treats as one.

The parser is built once, and before any thread can use it, it reads a link: markdown-it
normalizes link addresses with ``mdurl``, which fills its character tables the first time
it is called and makes them visible before they are filled. Pages rendered in several
threads at once, each reading its first link, then failed with ``IndexError`` (a fresh
``argue serve`` answering hundreds of fetches of a debate page at once).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

# Links of every kind markdown-it normalizes: inline, image, autolink (address and text).
_URL_TABLE_PRIMER = "[a](http://a.example/%41é) ![b](c%20d) <http://e.example/é>"

_lock = threading.Lock()
_parser: MarkdownIt | None = None


def commonmark() -> MarkdownIt:
    """The shared parser, ready for any number of threads at once."""
    global _parser
    with _lock:
        if _parser is None:
            _parser = _build()
        return _parser


def _build() -> MarkdownIt:
    # Imported when first needed: the command line loads every format to list them.
    from markdown_it import MarkdownIt

    # linkify stays off: bare URLs in model text are left as text, never turned into links.
    parser = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    parser.enable(["table", "strikethrough"])
    parser.render(_URL_TABLE_PRIMER)
    return parser
