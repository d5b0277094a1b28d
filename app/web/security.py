"""Who may use the web app, from where, and what its pages may load.

- ``SecurityHeaders`` (outermost middleware): every response, errors and streams included,
  carries a Content-Security-Policy that lets scripts come only from this origin and the
  pinned CDN files in ``app.web.assets``, plus nosniff, frame and referrer headers.
- ``AccessGuard``: in this order, (1) the Host must be an allowed one when
  ``allowed_hosts`` is set (a DNS-rebinding guard for a loopback server); (2) a
  state-changing request must come from this origin unless it carries a valid Bearer token;
  (3) when ``auth_token`` or ``auth_user``/``auth_password`` is set, every request needs a
  credential, except ``/healthz``, ``/static/`` and the login page itself.
- ``login_router``: ``GET``/``POST /login`` and ``POST /logout`` for the token mode; the
  session cookie holds an HMAC of the token (with its issue time), never the token.

The cross-site rule: a browser always sends ``Origin`` with a cross-site POST (and, under
our ``Referrer-Policy: same-origin``, the true origin with a same-origin one), so a request
with neither ``Origin`` nor ``Referer`` is a script or curl and is let through; with auth
configured it still needs its credential.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass, field
from typing import Annotated, Any
from urllib.parse import urlsplit

from fastapi import APIRouter, FastAPI, Form, HTTPException, Request
from fastapi.openapi.docs import get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse
from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import Response

from app.config import Settings
from app.web import assets

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

SESSION_COOKIE = "argue_session"
SESSION_SECONDS = 7 * 24 * 3600
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
# Reachable without a credential: the liveness probe, the stylesheet and script (no data in
# them), and the way in.
OPEN_PATHS = frozenset({"/healthz", "/login", "/logout"})
OPEN_PREFIXES = ("/static/",)
REALM = "Argue"


# -- who may use the app ---------------------------------------------------------------------


@dataclass(frozen=True)
class Access:
    """The access rules from the settings; the secrets are kept out of ``repr``."""

    token: str | None = field(default=None, repr=False)
    user: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)
    allowed_origins: frozenset[str] = frozenset()
    allowed_hosts: frozenset[str] = frozenset()

    @classmethod
    def from_settings(cls, settings: Settings) -> Access:
        token = settings.auth_token.get_secret_value() if settings.auth_token else ""
        password = settings.auth_password.get_secret_value() if settings.auth_password else ""
        return cls(
            token=token or None,
            user=settings.auth_user or None,
            password=password or None,
            allowed_origins=frozenset(o.rstrip("/").lower() for o in settings.allowed_origins),
            allowed_hosts=frozenset(h.lower() for h in settings.allowed_hosts),
        )

    @property
    def required(self) -> bool:
        return self.token is not None or self.basic

    @property
    def basic(self) -> bool:
        return self.user is not None and self.password is not None


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())


def bearer_ok(access: Access, authorization: str | None) -> bool:
    scheme, _, credential = (authorization or "").partition(" ")
    if access.token is None or scheme.lower() != "bearer":
        return False
    return _same(credential.strip(), access.token)


def basic_ok(access: Access, authorization: str | None) -> bool:
    scheme, _, credential = (authorization or "").partition(" ")
    if not access.basic or scheme.lower() != "basic":
        return False
    try:
        decoded = base64.b64decode(credential.strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return False
    user, colon, password = decoded.partition(":")
    assert access.user is not None and access.password is not None
    # Both compared every time: which half was wrong takes no different time.
    user_ok = _same(user, access.user)
    password_ok = _same(password, access.password)
    return bool(colon) and user_ok and password_ok


def session_value(token: str, issued: int) -> str:
    """The cookie for a login at ``issued`` (Unix seconds): a MAC keyed by the token, so
    the cookie proves the token was known without containing it, and changing the token
    signs everyone out."""
    mac = hmac.new(token.encode(), f"argue-session:{issued}".encode(), hashlib.sha256)
    return f"{issued}.{mac.hexdigest()}"


def session_ok(access: Access, cookie: str | None, *, now: float | None = None) -> bool:
    if access.token is None or not cookie:
        return False
    issued_text, _, _ = cookie.partition(".")
    if not issued_text.isdigit():
        return False
    issued = int(issued_text)
    now = time.time() if now is None else now
    if not now - SESSION_SECONDS <= issued <= now + 60:
        return False
    return _same(cookie, session_value(access.token, issued))


# -- where a request comes from --------------------------------------------------------------


def _netloc(url: str) -> str | None:
    """``host[:port]`` of an http(s) URL, without the scheme's default port."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc or "@" in parts.netloc:
        return None
    default = ":443" if parts.scheme == "https" else ":80"
    return parts.netloc.lower().removesuffix(default)


def _origin(url: str) -> str | None:
    netloc = _netloc(url)
    return None if netloc is None else f"{urlsplit(url).scheme}://{netloc}"


def same_origin(url: str, host: str, allowed: frozenset[str]) -> bool:
    """Whether ``url`` (an Origin or Referer) is this app as the browser reached it, or an
    origin the settings allow. The scheme is not compared: behind a TLS proxy the app sees
    http while the browser says https, and the host alone already names the site."""
    origin = _origin(url)
    if origin is None:
        return False
    if origin in allowed:
        return True
    own = host.lower().removesuffix(":80").removesuffix(":443")
    return bool(own) and _netloc(url) == own


def cross_site_refusal(headers: Headers, allowed: frozenset[str]) -> str | None:
    """Why a state-changing request is refused as cross-site, or None to let it through."""
    host = headers.get("host", "")
    origin = headers.get("origin")
    if origin is not None:
        if same_origin(origin, host, allowed):
            return None
        return f"Cross-site request refused: Origin {origin!r} is not this site."
    referer = headers.get("referer")
    if referer is not None:
        if same_origin(referer, host, allowed):
            return None
        return "Cross-site request refused: the Referer is not this site."
    if headers.get("sec-fetch-site") in ("cross-site", "same-site"):
        return "Cross-site request refused: the browser says it came from another site."
    return None  # no browser marks at all: a script, which auth (if set) still checks


def host_allowed(host: str, allowed: frozenset[str]) -> bool:
    if not allowed or "*" in allowed:
        return True
    name = host.lower()
    name = name[1 : name.index("]")] if name.startswith("[") and "]" in name else name
    name = name.rsplit(":", 1)[0] if name.count(":") == 1 else name
    return name in allowed


def is_open(path: str) -> bool:
    return path in OPEN_PATHS or path.startswith(OPEN_PREFIXES)


# -- the guard -------------------------------------------------------------------------------


class AccessGuard:
    """ASGI middleware enforcing the host, cross-site and credential rules above."""

    def __init__(self, app: ASGIApp, access: Access) -> None:
        self.app = app
        self.access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # the app has no websockets; lifespan passes through
            await self.app(scope, receive, send)
            return
        refusal = self.refusal(scope)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        await refusal(scope, receive, send)

    def refusal(self, scope: Scope) -> Response | None:
        headers = Headers(scope=scope)
        access = self.access
        if not host_allowed(headers.get("host", ""), access.allowed_hosts):
            return PlainTextResponse("Invalid Host header.", status_code=400)
        authorization = headers.get("authorization")
        with_bearer = bearer_ok(access, authorization)
        method = scope.get("method", "GET")
        if method not in SAFE_METHODS and not with_bearer:
            reason = cross_site_refusal(headers, access.allowed_origins)
            if reason is not None:
                return _error(scope, headers, 403, reason)
        if not access.required or is_open(scope["path"]) or with_bearer:
            return None
        if basic_ok(access, authorization):
            return None
        if session_ok(access, _cookie(headers, SESSION_COOKIE)):
            scope.setdefault("state", {})["signed_in"] = True
            return None
        return self.challenge(scope, headers)

    def challenge(self, scope: Scope, headers: Headers) -> Response:
        access = self.access
        challenges = []
        if access.basic:
            challenges.append(f'Basic realm="{REALM}", charset="UTF-8"')
        if access.token is not None:
            challenges.append(f'Bearer realm="{REALM}"')
        detail = "Authentication required: send Authorization: Bearer <token>"
        if access.basic:
            detail += " or HTTP Basic credentials"
        detail += "."
        response = _error(scope, headers, 401, detail)
        if access.token is not None and not access.basic and _wants_html(scope, headers):
            response = login_page(scope, next_path=_here(scope), status_code=401)
        for challenge in challenges:
            response.headers.append("WWW-Authenticate", challenge)
        response.headers["Cache-Control"] = "no-store"
        return response


def _cookie(headers: Headers, name: str) -> str | None:
    for part in headers.get("cookie", "").split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


def _wants_html(scope: Scope, headers: Headers) -> bool:
    path: str = scope["path"]
    return not path.startswith("/api/") and "text/html" in headers.get("accept", "")


def _here(scope: Scope) -> str:
    query = scope.get("query_string", b"").decode("latin-1")
    path: str = scope["path"]
    return f"{path}?{query}" if query else path


def _error(scope: Scope, headers: Headers, status: int, detail: str) -> Response:
    if _wants_html(scope, headers):
        return PlainTextResponse(detail, status_code=status)
    return JSONResponse({"detail": detail}, status_code=status)


# -- the login page --------------------------------------------------------------------------

login_router = APIRouter(include_in_schema=False)


def safe_next(next_path: str | None) -> str:
    """Only a path on this site: an absolute or scheme-relative URL would make the login
    page an open redirect."""
    if not next_path or not next_path.startswith("/") or next_path.startswith(("//", "/\\")):
        return "/"
    if any(ord(c) < 0x20 for c in next_path):
        return "/"
    return next_path


def login_page(
    scope: Scope, *, next_path: str, status_code: int = 200, error: str | None = None
) -> HTMLResponse:
    request = Request(scope)
    templates = request.app.state.templates
    response: HTMLResponse = templates.TemplateResponse(
        request,
        "login.html",
        {"next": safe_next(next_path), "error": error},
        status_code=status_code,
    )
    return response


def _token_access(request: Request) -> Access:
    access: Access = request.app.state.access
    if access.token is None:
        raise HTTPException(404, "Not found")
    return access


@login_router.get("/login", response_class=HTMLResponse)
def login_form(request: Request, next: str = "/") -> HTMLResponse:
    _token_access(request)
    return login_page(request.scope, next_path=next)


@login_router.post("/login")
def login(
    request: Request,
    token: Annotated[str, Form(max_length=4096)] = "",
    next: Annotated[str, Form(max_length=4096)] = "/",
) -> Response:
    access = _token_access(request)
    assert access.token is not None
    if not _same(token, access.token):
        return login_page(
            request.scope, next_path=next, status_code=401, error="That is not the token."
        )
    response = RedirectResponse(safe_next(next), status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        session_value(access.token, int(time.time())),
        max_age=SESSION_SECONDS,
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


@login_router.post("/logout")
def logout() -> Response:
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
    return response


# -- what pages may load ---------------------------------------------------------------------


def _policy(directives: Iterable[tuple[str, Iterable[str]]]) -> str:
    return "; ".join(" ".join((name, *sources)) for name, sources in directives)


COMMON_DIRECTIVES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("default-src", ("'none'",)),
    ("connect-src", ("'self'",)),
    ("font-src", ("'self'",)),
    ("form-action", ("'self'",)),
    ("base-uri", ("'none'",)),
    ("object-src", ("'none'",)),
    ("frame-ancestors", ("'none'",)),
)


def page_policy() -> str:
    """The app's own pages: scripts from here and the exact pinned CDN files, nothing
    inline; styles from here only (htmx's injected indicator style is turned off in
    ``base.html``); SSE and htmx requests back to here."""
    return _policy(
        (
            ("script-src", ("'self'", *(script.url for script in assets.SCRIPTS))),
            ("style-src", ("'self'",)),
            ("img-src", ("'self'", "data:")),
            *COMMON_DIRECTIVES,
        )
    )


_SCRIPT = re.compile(r"<script(?P<attrs>[^>]*)>(?P<body>.*?)</script>", re.S)
_SRC = re.compile(r'src="([^"]+)"')
_LINK = re.compile(r"<link(?P<attrs>[^>]*)>")
_HREF = re.compile(r'href="([^"]+)"')


def html_policy(html: str) -> str:
    """A policy for a page FastAPI writes itself (Swagger UI): its script files and the
    sha256 of its inline scripts, computed from FastAPI's own generator, not the response."""
    scripts: list[str] = []
    styles: list[str] = ["'self'", "'unsafe-inline'"]  # Swagger UI sets inline styles
    images: list[str] = ["'self'", "data:"]
    for match in _SCRIPT.finditer(html):
        src = _SRC.search(match["attrs"])
        if src:
            scripts.append(src.group(1))
        else:
            digest = hashlib.sha256(match["body"].encode()).digest()
            scripts.append(f"'sha256-{base64.b64encode(digest).decode()}'")
    for match in _LINK.finditer(html):
        href = _HREF.search(match["attrs"])
        if href:
            (styles if "stylesheet" in match["attrs"] else images).append(href.group(1))
    return _policy(
        (("script-src", scripts), ("style-src", styles), ("img-src", images), *COMMON_DIRECTIVES)
    )


def docs_policies(app: FastAPI) -> dict[str, str]:
    """The policies of FastAPI's docs pages, by path, as FastAPI would write them."""
    policies: dict[str, str] = {}
    if app.openapi_url and app.docs_url:
        redirect = app.swagger_ui_oauth2_redirect_url
        page = get_swagger_ui_html(
            openapi_url=app.openapi_url,
            title=f"{app.title} - Swagger UI",
            oauth2_redirect_url=redirect,
            init_oauth=app.swagger_ui_init_oauth,
            swagger_ui_parameters=app.swagger_ui_parameters,
        )
        policies[app.docs_url] = html_policy(bytes(page.body).decode())
        if redirect:
            policies[redirect] = html_policy(
                bytes(get_swagger_ui_oauth2_redirect_html().body).decode()
            )
    return policies


BASE_HEADERS: tuple[tuple[str, str], ...] = (
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    # Not no-referrer: under it a browser sends "Origin: null" with same-origin form posts,
    # which the cross-site check would refuse.
    ("Referrer-Policy", "same-origin"),
    ("Cross-Origin-Opener-Policy", "same-origin"),
    ("Cross-Origin-Resource-Policy", "same-origin"),
)


class SecurityHeaders:
    """ASGI middleware: the headers above on every HTTP response. Pure ASGI (not
    ``BaseHTTPMiddleware``) so streams pass through unbuffered."""

    def __init__(self, app: ASGIApp, policy: str, policies: dict[str, str]) -> None:
        self.app = app
        self.policy = policy
        self.policies = policies

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        policy = self.policies.get(scope["path"], self.policy)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers["Content-Security-Policy"] = policy
                for name, value in BASE_HEADERS:
                    headers[name] = value
            await send(message)

        await self.app(scope, receive, send_with_headers)


def install(app: FastAPI, settings: Settings) -> None:
    """Add the login routes and both middlewares (the headers outermost, so the guard's own
    refusals carry them too)."""
    access = Access.from_settings(settings)
    app.state.access = access
    app.include_router(login_router)
    app.add_middleware(AccessGuard, access=access)
    app.add_middleware(SecurityHeaders, policy=page_policy(), policies=docs_policies(app))
