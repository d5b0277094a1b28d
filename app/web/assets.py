"""Where the pages load the pinned htmx files from, and the route that serves this app's own
copies of them.

The files, their versions and integrity hashes are pinned in ``app.vendored``. With
``ARGUE_ASSETS=cdn`` (the default) the pages name the CDN URLs; with ``local`` they name
``/static/vendor/<package>@<version>/<path>``, answered from the copies the lifespan checked
(held in ``app.state.vendored``). Either way the ``<script>`` carries the same ``integrity``,
so the browser runs nothing but the pinned bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fastapi import APIRouter, HTTPException, Request, Response

from app.vendored import HTMX, HTMX_SSE, SCRIPTS, Script

AssetsMode = Literal["cdn", "local"]
LOCAL_PREFIX = "/static/vendor/"
# The version is in the path: a copy never changes under its URL.
CACHE_FOREVER = "public, max-age=31536000, immutable"


@dataclass(frozen=True)
class PageScript:
    """One ``<script src integrity>`` of every page."""

    src: str
    integrity: str


def local_url(script: Script) -> str:
    return LOCAL_PREFIX + script.local_path


def page_scripts(mode: AssetsMode) -> tuple[PageScript, ...]:
    return tuple(
        PageScript(
            src=script.url if mode == "cdn" else local_url(script), integrity=script.integrity
        )
        for script in SCRIPTS
    )


def script_origins(mode: AssetsMode) -> tuple[str, ...]:
    """The script sources beyond this origin that the pages need."""
    return tuple(script.url for script in SCRIPTS) if mode == "cdn" else ()


router = APIRouter(include_in_schema=False)


@router.get(LOCAL_PREFIX + "{path:path}")
def vendored_file(path: str, request: Request) -> Response:
    files: dict[str, bytes] = getattr(request.app.state, "vendored", None) or {}
    data = files.get(path)
    if data is None:
        raise HTTPException(404, "Not found")
    return Response(
        data,
        media_type="text/javascript; charset=utf-8",
        headers={"Cache-Control": CACHE_FOREVER},
    )


__all__ = [
    "HTMX",
    "HTMX_SSE",
    "LOCAL_PREFIX",
    "SCRIPTS",
    "PageScript",
    "Script",
    "page_scripts",
    "router",
    "script_origins",
]
