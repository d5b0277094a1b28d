"""Who may use the web app, from where, and what its pages may load.

- ``SecurityHeaders`` (outermost middleware): every response, errors and streams included,
  carries a Content-Security-Policy that lets scripts come only from this origin and, with
  ``ARGUE_ASSETS=cdn``, the pinned CDN files in ``app.vendored``, plus nosniff, frame and
  referrer headers. Every page, the API reference included, is under that one policy.
- ``AccessGuard``: in this order, (1) the Host must be an allowed one when
  ``allowed_hosts`` is set (a DNS-rebinding guard for a loopback server); (2) a
  state-changing request must come from this origin unless it carries a valid Bearer token;
  (3) when ``auth_token`` or ``auth_user``/``auth_password`` is set, every request needs a
  credential, except ``/healthz``, ``/readyz``, ``/static/``, ``/favicon.ico`` and the login
  page itself. Failed credentials are limited per client address and overall
  (``app.web.signin``): 429 with Retry-After.
- ``login_router``: ``GET``/``POST /login`` and ``POST /logout`` for the token mode; the
  session cookie holds a session id, its issue time and an HMAC of them keyed by the token,
  never the token. A cookie works only while this process holds its session: signing out
  ends it.

The cross-site rule: a browser always sends ``Origin`` with a cross-site POST (and, under
our ``Referrer-Policy: same-origin``, the true origin with a same-origin one), so a request
with neither ``Origin`` nor ``Referer`` is a script or curl and is let through; with auth
configured it still needs its credential.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import math
import re
import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass, field
from typing import Annotated, Any
from urllib.parse import urlsplit

from fastapi import APIRouter, FastAPI, Form, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse
from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import Response

from app.config import Settings
from app.web import assets
from app.web.signin import SessionStore, SignInLimiter, SignIns, client_address

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

SESSION_COOKIE = "argue_session"
SESSION_SECONDS = 7 * 24 * 3600
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
# Reachable without a credential: the liveness and readiness probes, the stylesheet and
# script and the icon (no data in them), and the way in.
OPEN_PATHS = frozenset({"/healthz", "/readyz", "/login", "/logout", "/favicon.ico"})
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
    except ValueError:  # not base64 (non-ASCII text included), or not UTF-8 once decoded
        return False
    user, colon, password = decoded.partition(":")
    assert access.user is not None and access.password is not None
    # Both compared every time: which half was wrong takes no different time.
    user_ok = _same(user, access.user)
    password_ok = _same(password, access.password)
    return bool(colon) and user_ok and password_ok


def session_value(token: str, issued: int, session_id: str = "") -> str:
    """The cookie for session ``session_id`` begun at ``issued`` (Unix seconds), with a MAC
    keyed by the token: the cookie proves the token was known without containing it, and
    changing the token signs everyone out."""
    message = f"argue-session:{issued}:{session_id}".encode()
    mac = hmac.new(token.encode(), message, hashlib.sha256)
    return f"{issued}.{session_id}.{mac.hexdigest()}"


# ASCII digits only: ``str.isdigit`` also takes "²", which ``int`` then refuses.
_SESSION_COOKIE = re.compile(
    r"(?P<issued>[0-9]{1,12})\.(?P<id>[0-9a-f]{0,64})\.[0-9a-f]{64}", re.ASCII
)


def session_id_of(cookie: str | None) -> str | None:
    """The session id a well-formed cookie names (its MAC unchecked); None otherwise."""
    match = _SESSION_COOKIE.fullmatch(cookie or "")
    return None if match is None else match["id"]


def session_ok(access: Access, cookie: str | None, *, now: float | None = None) -> bool:
    """Whether ``cookie`` was made with the token and has not expired. Whether its session
    is still open is the session store's to say."""
    match = _SESSION_COOKIE.fullmatch(cookie or "")
    if access.token is None or match is None:
        return False
    issued = int(match["issued"])
    now = time.time() if now is None else now
    if not now - SESSION_SECONDS <= issued <= now + 60:
        return False
    return _same(match[0], session_value(access.token, issued, match["id"]))


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

    def __init__(self, app: ASGIApp, access: Access, sign_ins: SignIns) -> None:
        self.app = app
        self.access = access
        self.sign_ins = sign_ins

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
        # Open paths take no credential: none is tried there, so none is guessed there.
        checked = access.required and not is_open(scope["path"])
        authorization = headers.get("authorization") if checked else None
        scheme = _offered_scheme(access, authorization)
        with_credential = False
        if scheme is not None:
            assert authorization is not None
            verify = bearer_ok if scheme == "bearer" else basic_ok
            attempt = self.sign_ins.limiter.attempt(
                client_address(scope), lambda: verify(access, authorization)
            )
            if attempt.retry_after is not None:
                return too_many_failures(scope, headers, attempt.retry_after)
            with_credential = attempt.ok
        with_bearer = with_credential and scheme == "bearer"
        method = scope.get("method", "GET")
        if method not in SAFE_METHODS and not with_bearer:
            reason = cross_site_refusal(headers, access.allowed_origins)
            if reason is not None:
                return _error(scope, headers, 403, reason)
        if not checked or with_credential:
            return None
        if self.signed_in(headers):
            scope.setdefault("state", {})["signed_in"] = True
            return None
        return self.challenge(scope, headers)

    def signed_in(self, headers: Headers) -> bool:
        cookie = _cookie(headers, SESSION_COOKIE)
        session_id = session_id_of(cookie)
        if session_id is None or not session_ok(self.access, cookie):
            return False
        return self.sign_ins.sessions.is_live(session_id)

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


def _offered_scheme(access: Access, authorization: str | None) -> str | None:
    """``bearer`` or ``basic`` when ``authorization`` offers a credential of a kind this app
    takes; None otherwise (a header meant for a proxy in front of it, in another scheme, is
    no guess at ours)."""
    scheme = (authorization or "").partition(" ")[0].lower()
    if (scheme == "bearer" and access.token is not None) or (scheme == "basic" and access.basic):
        return scheme
    return None


def too_many_failures(scope: Scope, headers: Headers, wait: float) -> Response:
    seconds = retry_seconds(wait)
    response = _error(scope, headers, 429, too_many_message(seconds))
    response.headers["Retry-After"] = str(seconds)
    response.headers["Cache-Control"] = "no-store"
    return response


def retry_seconds(wait: float) -> int:
    return max(1, math.ceil(wait))


def too_many_message(seconds: int) -> str:
    when = f"{seconds} seconds" if seconds < 90 else f"{math.ceil(seconds / 60)} minutes"
    return f"Too many failed sign-ins. Try again in {when}."


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
    expected = access.token
    sign_ins: SignIns = request.app.state.sign_ins
    attempt = sign_ins.limiter.attempt(
        client_address(request.scope), lambda: _same(token, expected)
    )
    if attempt.retry_after is not None:
        seconds = retry_seconds(attempt.retry_after)
        error = too_many_message(seconds)
        page = login_page(request.scope, next_path=next, status_code=429, error=error)
        page.headers["Retry-After"] = str(seconds)
        return page
    if not attempt.ok:
        return login_page(
            request.scope, next_path=next, status_code=401, error="That is not the token."
        )
    response = RedirectResponse(safe_next(next), status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        session_value(access.token, int(time.time()), sign_ins.sessions.issue()),
        max_age=SESSION_SECONDS,
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


@login_router.post("/logout")
def logout(request: Request) -> Response:
    """Ends the session on the server too: its cookie, replayed, no longer signs anyone in."""
    session_id = session_id_of(request.cookies.get(SESSION_COOKIE))
    if session_id is not None:
        sign_ins: SignIns = request.app.state.sign_ins
        sign_ins.sessions.end(session_id)
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


def page_policy(mode: assets.AssetsMode = "cdn") -> str:
    """The app's pages: scripts from here (and, in ``cdn`` mode, the exact pinned CDN files),
    nothing inline; styles from here only (htmx's injected indicator style is turned off in
    ``base.html``); SSE and htmx requests back to here."""
    return _policy(
        (
            ("script-src", ("'self'", *assets.script_origins(mode))),
            ("style-src", ("'self'",)),
            ("img-src", ("'self'", "data:")),
            *COMMON_DIRECTIVES,
        )
    )


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
    ``BaseHTTPMiddleware``) so streams pass through unbuffered. A response that sets its
    own Content-Security-Policy keeps it: only the self-contained report does
    (``app.web.report``), and its policy is stricter still (nothing loads but its one
    inline style, allowed by hash)."""

    def __init__(self, app: ASGIApp, policy: str) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        policy = self.policy

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                if "content-security-policy" not in headers:
                    headers["Content-Security-Policy"] = policy
                for name, value in BASE_HEADERS:
                    headers[name] = value
            await send(message)

        await self.app(scope, receive, send_with_headers)


def install(app: FastAPI, settings: Settings) -> None:
    """Add the login routes and both middlewares (the headers outermost, so the guard's own
    refusals carry them too)."""
    access = Access.from_settings(settings)
    sign_ins = SignIns(sessions=SessionStore(lifetime=SESSION_SECONDS), limiter=SignInLimiter())
    app.state.access = access
    app.state.sign_ins = sign_ins
    app.include_router(login_router)
    app.add_middleware(AccessGuard, access=access, sign_ins=sign_ins)
    app.add_middleware(SecurityHeaders, policy=page_policy(settings.assets))
