"""With a credential configured, every page, stream, download, API call and the docs need
it (only /healthz, the static files, the icon and the login page do not); a Bearer token, the login
page's session cookie and HTTP Basic each let a caller in, and a wrong one does not."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.routing import iter_route_contexts
from fastapi.testclient import TestClient
from pydantic import ValidationError
from starlette.routing import Mount

from app.config import Settings
from app.web.app import create_app
from app.web.security import (
    SESSION_COOKIE,
    SESSION_SECONDS,
    Access,
    safe_next,
    session_ok,
    session_value,
)
from app.web.signin import SignInLimiter
from tests.security.conftest import PASSWORD, TOKEN, USER, bearer, running, with_access
from tests.security.test_headers import assert_secured

OPEN = {"/healthz", "/readyz", "/login", "/logout", "/favicon.ico"}


def protected_routes(app: FastAPI) -> list[tuple[str, str]]:
    """(method, path) for every route but the open ones, with a made-up debate id."""
    cases = []
    # iter_route_contexts: FastAPI keeps included routers wrapped in app.routes.
    for route in iter_route_contexts(app.routes):
        if isinstance(route.original_route, Mount) or route.path is None or route.path in OPEN:
            continue
        if route.path.startswith("/static/"):  # open, like the static mount (the vendored htmx)
            continue
        path = route.path.replace("{debate_id}", "d0").replace("{other_id}", "d1")
        path = path.replace("{run_id}", "r0")
        assert "{" not in path, f"a new path parameter in {route.path}: give it a value here"
        cases += [(method, path) for method in sorted(route.methods or ()) if method != "HEAD"]
    return cases


ROUTES = protected_routes(create_app(Settings(home=Path("/nonexistent")), providers={}))


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """One app for all the route cases (they only knock): token and Basic both set."""
    home = tmp_path_factory.mktemp("argue-home")
    settings = Settings(home=home, auth_token=TOKEN, auth_user=USER, auth_password=PASSWORD)
    with TestClient(create_app(settings, providers={})) as client:
        yield client


def basic(user: str = USER, password: str = PASSWORD) -> dict[str, str]:
    encoded = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {encoded}"}


def test_the_route_table_covers_pages_streams_downloads_api_and_docs() -> None:
    paths = {path for _, path in ROUTES}
    assert {"/", "/debates/d0/stream", "/debates/d0/finals.md", "/api/debates"} <= paths
    assert {"/api/debates/d0/events", "/openapi.json", "/docs"} <= paths
    assert ("POST", "/api/debates/d0/cancel") in ROUTES


@pytest.mark.parametrize(("method", "path"), ROUTES, ids=[f"{m} {p}" for m, p in ROUTES])
def test_every_route_refuses_a_caller_without_the_credential(
    client: TestClient, method: str, path: str
) -> None:
    # One client knocks on every route with wrong credentials: each case counts afresh, or
    # the failed sign-in limit (tests/security/test_sessions.py) answers 429.
    client.app.state.sign_ins.limiter = SignInLimiter()  # type: ignore[attr-defined]
    for headers in ({}, bearer("not-the-token"), basic(password="wrong"), {"Cookie": "x=1"}):
        response = client.request(method, path, headers={"Origin": "http://testserver", **headers})
        assert response.status_code == 401, (headers, response.text)
        assert "Bearer" in response.headers.get_list("www-authenticate")[-1]
    forged = session_value("some-other-token", int(time.time()))
    client.cookies.set(SESSION_COOKIE, forged)
    try:
        assert client.request(method, path).status_code == 401
    finally:
        client.cookies.clear()


@pytest.mark.parametrize(("method", "path"), ROUTES, ids=[f"{m} {p}" for m, p in ROUTES])
def test_every_route_lets_in_a_bearer_token_and_basic_credentials(
    client: TestClient, method: str, path: str
) -> None:
    for headers in (bearer(), basic()):
        response = client.request(method, path, headers=headers)
        assert response.status_code not in (401, 403), (headers, response.text)


def test_health_static_files_and_login_page_need_no_credential(token_client: TestClient) -> None:
    assert token_client.get("/healthz").json() == {"status": "ok"}
    assert token_client.head("/healthz").status_code == 200
    assert token_client.head("/readyz").status_code == 200
    assert token_client.get("/static/argue.css").status_code == 200
    assert token_client.get("/static/argue.js").status_code == 200
    assert token_client.get("/login").status_code == 200


def test_a_script_gets_a_json_401_and_a_browser_the_login_page(token_client: TestClient) -> None:
    api = token_client.get("/api/debates")
    assert api.status_code == 401 and "Authorization: Bearer" in api.json()["detail"]
    assert api.headers["www-authenticate"] == 'Bearer realm="Argue"'
    page = token_client.get("/debates?page=2", headers={"Accept": "text/html"})
    assert page.status_code == 401 and "text/html" in page.headers["content-type"]
    assert 'action="/login"' in page.text
    assert 'name="next" value="/debates?page=2"' in page.text
    assert_secured(api)
    assert_secured(page)


def test_login_sets_an_httponly_strict_cookie_that_is_not_the_token(
    token_client: TestClient,
) -> None:
    wrong = token_client.post("/login", data={"token": "guess", "next": "/debates"})
    assert wrong.status_code == 401 and "not the token" in wrong.text
    assert SESSION_COOKIE not in token_client.cookies
    response = token_client.post(
        "/login", data={"token": TOKEN, "next": "/debates"}, follow_redirects=False
    )
    assert response.status_code == 303 and response.headers["location"] == "/debates"
    cookie = response.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    value = token_client.cookies[SESSION_COOKIE]
    assert TOKEN not in value and TOKEN not in cookie
    home = token_client.get("/")
    assert home.status_code == 200 and "Start a debate" in home.text
    assert 'action="/logout"' in home.text
    assert token_client.get("/api/debates").status_code == 200
    out = token_client.post("/logout", follow_redirects=False)
    assert out.status_code == 303
    assert token_client.get("/api/debates").status_code == 401


@pytest.mark.parametrize(
    "next_path", ["//evil.example/x", "https://evil.example/", "/\\evil.example", "debates", ""]
)
def test_login_never_redirects_off_the_site(token_client: TestClient, next_path: str) -> None:
    response = token_client.post(
        "/login", data={"token": TOKEN, "next": next_path}, follow_redirects=False
    )
    assert response.headers["location"] == "/"
    assert safe_next(next_path) == "/"


def test_a_session_expires_and_dies_with_a_changed_token() -> None:
    access = Access(token=TOKEN)
    now = time.time()
    fresh = session_value(TOKEN, int(now))
    assert session_ok(access, fresh, now=now)
    assert not session_ok(access, session_value(TOKEN, int(now) - SESSION_SECONDS - 1), now=now)
    assert not session_ok(Access(token="a-new-token"), fresh, now=now)
    assert not session_ok(access, fresh.replace(".", "x"), now=now)


def test_basic_mode_challenges_browsers_with_basic(basic_client: TestClient) -> None:
    response = basic_client.get("/", headers={"Accept": "text/html"})
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith('Basic realm="Argue"')
    assert basic_client.get("/", headers=basic()).status_code == 200
    assert basic_client.get("/", headers=basic(user="eve")).status_code == 401
    assert basic_client.get("/login").status_code == 404  # no token: no login page
    assert basic_client.get("/api/debates", headers=bearer()).status_code == 401


def test_without_a_credential_configured_everything_is_open(open_client: TestClient) -> None:
    assert open_client.get("/").status_code == 200
    assert open_client.get("/api/debates").status_code == 200
    assert open_client.get("/login").status_code == 404


def test_user_and_password_are_set_together() -> None:
    with pytest.raises(ValidationError, match="together"):
        Settings(auth_user=USER)
    with pytest.raises(ValidationError, match="together"):
        Settings(auth_password=PASSWORD)


def test_a_debate_runs_for_a_signed_in_caller(settings: Settings) -> None:
    with running(with_access(settings, auth_token=TOKEN)) as client:
        created = client.post("/api/debates", json={"topic": "Cats", "rounds": 1}, headers=bearer())
        assert created.status_code == 201
        debate_id = created.json()["id"]
        from tests.web.conftest import wait_for_debate

        assert wait_for_debate(client, debate_id) == "completed"
        stream = client.get(f"/debates/{debate_id}/stream", headers=bearer())
        assert stream.status_code == 200 and "event: end" in stream.text
