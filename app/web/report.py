"""``GET /debates/{id}/report.html``: a debate as one self-contained HTML file, to keep,
share, read offline and print.

Self-contained means nothing is fetched when it is opened: no script, no stylesheet, font or
image by URL; its styles are one ``<style>`` element (``static/report.css``, inlined). Model text
goes through the same Markdown rendering and sanitizing as the debate page
(``app.web.render``). The file carries its own Content-Security-Policy in a ``<meta>``, so
it holds wherever the file is opened, and the response carries the same policy as a header,
stricter than the app's pages: nothing may load at all but that one style, allowed by its
hash.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query
from fastapi.responses import HTMLResponse
from markupsafe import Markup

from app import export, store
from app.db import read_scope
from app.formats.judging import same_provider_warnings
from app.formats.language import JAPANESE, detect_language
from app.models import Debate, Turn
from app.resources import STATIC_DIR
from app.scorecard import scorecard_of
from app.web.bad_input import cut
from app.web.deps import EngineDep, TemplatesDep
from app.web.offload import off_loop
from app.web.view import group_turns, turn_from_row

router = APIRouter()

STYLE_FILE = STATIC_DIR / "report.css"


@dataclass(frozen=True)
class ReportStyle:
    """The report's one style sheet and the policy that allows exactly it."""

    css: str
    source: str  # the CSP source for it: 'sha256-…'

    @property
    def policy(self) -> str:
        """For the ``<meta>``: ``frame-ancestors`` has no effect there and is left out."""
        return (
            f"default-src 'none'; style-src {self.source}; img-src 'none'; "
            "base-uri 'none'; form-action 'none'"
        )

    @property
    def header_policy(self) -> str:
        return f"{self.policy}; frame-ancestors 'none'"


@lru_cache(maxsize=1)
def report_style() -> ReportStyle:
    css = STYLE_FILE.read_text(encoding="utf-8")
    digest = base64.b64encode(hashlib.sha256(css.encode("utf-8")).digest()).decode("ascii")
    return ReportStyle(css=css, source=f"'sha256-{digest}'")


@dataclass(frozen=True)
class SeatLine:
    label: str
    provider: str
    model: str


def seat_lines(debate: Debate, rows: list[Turn]) -> list[SeatLine]:
    """Each seat with the model it sat on; a seat left on its provider's default names the
    model its turns used."""
    used = {row.role: row.model for row in rows}
    return [
        SeatLine(seat.label, seat.provider, seat.model or used.get(seat.role) or "default model")
        for seat in store.debate_spec(debate).seats
    ]


def report_context(debate: Debate, rows: list[Turn]) -> dict[str, Any]:
    """What ``templates/report.html`` needs."""
    spec = store.debate_spec(debate)
    turns = [turn_from_row(row) for row in rows]
    style = report_style()
    return {
        "debate": debate,
        "lang": "ja" if detect_language(debate.topic) == JAPANESE else "en",
        "seats": seat_lines(debate, rows),
        "groups": group_turns(turns, format=debate.format, seat_order=[s.role for s in spec.seats]),
        "scorecard": scorecard_of(rows),
        "warnings": same_provider_warnings(spec),
        "style": Markup(style.css),  # our own file, not user text
        "policy": style.policy,
    }


def report_filename(debate: Debate) -> str:
    return f"{export.file_slug(debate)}-report.html"


@router.get(
    "/debates/{debate_id}/report.html",
    response_class=HTMLResponse,
    summary="The debate as one self-contained HTML file",
)
async def report_html(
    debate_id: str,
    engine: EngineDep,
    templates: TemplatesDep,
    download: Annotated[
        bool, Query(description="Answer as an attachment to save, not a page to view.")
    ] = False,
) -> HTMLResponse:
    def read_and_render() -> tuple[str, str]:
        with read_scope(engine) as session:
            debate = store.get_debate(session, debate_id=debate_id)
            if debate is None:
                raise HTTPException(404, f"No debate {cut(debate_id)}.")
            rows = store.turns_of(session, debate_id=debate_id)
        html: str = templates.get_template("report.html").render(report_context(debate, rows))
        return html, report_filename(debate)

    # A large debate takes long to read and render: never on the event loop.
    html, filename = await off_loop(read_and_render)
    headers = {"Content-Security-Policy": report_style().header_policy}
    if download:
        # File names are built from slugs ([a-z0-9-]) and fixed words: no quoting is needed.
        headers["Content-Disposition"] = f'attachment; filename="{filename}"'
    return HTMLResponse(html, headers=headers)
