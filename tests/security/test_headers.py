"""Every response carries the security headers, and the page policy lets scripts come only
from this origin and the pinned CDN files: no inline script, handler or style on any page."""

from __future__ import annotations

import re
from typing import Any

from fastapi.testclient import TestClient

from app.web.assets import SCRIPTS
from tests.security.conftest import EVIL
from tests.web.conftest import start_duel, wait_for_debate

EXPECTED = {
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
}


def policy(response: Any) -> dict[str, list[str]]:
    header = response.headers["content-security-policy"]
    directives = [part.split() for part in header.split(";") if part.strip()]
    return {name: sources for name, *sources in directives}


def assert_secured(response: Any) -> None:
    for name, value in EXPECTED.items():
        assert response.headers.get(name) == value, (response.request.url, name)
    csp = policy(response)
    assert csp["frame-ancestors"] == ["'none'"] and csp["object-src"] == ["'none'"]
    assert csp["base-uri"] == ["'none'"] and csp["default-src"] == ["'none'"]


def test_every_kind_of_response_carries_the_headers(open_client: TestClient) -> None:
    debate_id = start_duel(open_client)
    assert wait_for_debate(open_client, debate_id) == "completed"
    client = open_client
    responses = [
        client.get("/"),
        client.get("/debates"),
        client.get(f"/debates/{debate_id}"),
        client.get(f"/debates/{debate_id}/finals.md"),
        client.get(f"/debates/{debate_id}/stream"),
        client.get(f"/api/debates/{debate_id}/events"),
        client.get("/api/debates"),
        client.get("/openapi.json"),
        client.get("/docs"),
        client.get("/healthz"),
        client.get("/static/argue.css"),
        client.get("/static/argue.js"),
        client.get("/no-such-page"),
        client.get("/debates/nope"),
        client.get("/api/debates/nope"),
        client.post("/api/debates", json={}),
        client.post("/api/debates", json={"topic": "x"}, headers={"Origin": EVIL}),
    ]
    assert [r.status_code for r in responses[-5:]] == [404, 404, 404, 422, 403]
    for response in responses:
        assert_secured(response)


def test_page_policy_allows_scripts_only_from_here_and_the_pinned_cdn_files(
    open_client: TestClient,
) -> None:
    csp = policy(open_client.get("/"))
    assert sorted(csp["script-src"]) == sorted(["'self'", *(s.url for s in SCRIPTS)])
    assert all(s.url.startswith("https://cdn.jsdelivr.net/npm/") for s in SCRIPTS)
    assert csp["style-src"] == ["'self'"]
    assert csp["connect-src"] == ["'self'"]
    assert csp["img-src"] == ["'self'", "data:"]
    assert csp["form-action"] == ["'self'"]
    header = open_client.get("/").headers["content-security-policy"]
    assert "unsafe" not in header and "*" not in header


TAG = re.compile(r"<([a-zA-Z][a-zA-Z0-9-]*)(\s[^>]*)?>")
INLINE_HANDLER = re.compile(r"""\son[a-z]+\s*=""", re.I)


def assert_nothing_inline(html: str) -> None:
    """What the page policy would refuse: inline scripts, handlers, styles, javascript: URLs."""
    allowed = {s.url for s in SCRIPTS} | {"/static/argue.js", "/static/fallback.js"}
    for name, attrs in TAG.findall(html):
        attrs = attrs or ""
        assert not INLINE_HANDLER.search(attrs), f"inline handler in <{name}{attrs}>"
        assert " style=" not in attrs, f"inline style in <{name}{attrs}>"
        assert "javascript:" not in attrs.lower()
        if name.lower() == "script":
            src = re.search(r'src="([^"]+)"', attrs)
            assert src and src.group(1) in allowed, f"script not allowed: <script{attrs}>"
        assert name.lower() != "style", "an inline <style> element"


def test_no_page_has_an_inline_script_handler_or_style(
    open_client: TestClient, token_client: TestClient
) -> None:
    debate_id = start_duel(open_client)
    assert wait_for_debate(open_client, debate_id) == "completed"
    pages = [
        open_client.get("/"),
        open_client.get("/debates"),
        open_client.get(f"/debates/{debate_id}"),
        open_client.get("/debates/nope"),
        open_client.post("/debates", data={"topic": ""}),  # the form again, with errors
        token_client.get("/", headers={"Accept": "text/html"}),  # the login page
    ]
    for page in pages:
        assert "text/html" in page.headers["content-type"]
        assert_nothing_inline(page.text)
    assert '<meta name="htmx-config"' in pages[0].text  # no injected indicator style
    assert 'action="/login"' in pages[-1].text


def test_the_api_reference_runs_no_script_under_the_page_policy(
    open_client: TestClient,
) -> None:
    response = open_client.get("/docs")
    assert response.status_code == 200 and "text/html" in response.headers["content-type"]
    assert "<script" not in response.text
    assert_nothing_inline(response.text)
    assert 'data-operation="POST /api/debates"' in response.text
    assert policy(response) == policy(open_client.get("/"))
    assert open_client.get("/docs/oauth2-redirect").status_code == 404  # Swagger UI is gone
