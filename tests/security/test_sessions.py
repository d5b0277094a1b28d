"""Sign-in sessions and failed sign-ins.

Signing out ends the session on the server: its cookie stops working even when replayed, and
other browsers' sessions go on. Failed sign-ins (the login form, a wrong Bearer token or
Basic password) are limited per client address and overall, answered 429 with Retry-After;
a block is short and lifts by itself, and neither an address's nor the overall limit stops a
signed-in browser or an address that has signed in before.
"""

from __future__ import annotations

import base64
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient

from app.web.security import SESSION_COOKIE, Access, session_ok, session_value
from app.web.signin import (
    FORGET_FAILURES_SECONDS,
    FREE_FAILURES,
    GLOBAL_FAILURES,
    GLOBAL_WINDOW_SECONDS,
    MAX_BLOCK_SECONDS,
    SignInLimiter,
)
from tests.security.conftest import PASSWORD, SITE, TOKEN, USER, bearer


def sign_in(client: TestClient, token: str = TOKEN) -> str:
    """Signs in with the login form; the session cookie it set (then forgotten by the
    client, so each call is a browser of its own)."""
    response = client.post("/login", data={"token": token, "next": "/"}, follow_redirects=False)
    assert response.status_code == 303, response.text
    cookie = client.cookies[SESSION_COOKIE]
    client.cookies.clear()
    return cookie


def as_browser(cookie: str) -> dict[str, str]:
    return {"Cookie": f"{SESSION_COOKIE}={cookie}"}


def raw_cookie(cookie: str) -> dict[str, bytes]:
    """A Cookie header in bytes: the server reads them as Latin-1, so "²" arrives as "²"."""
    header = f"{SESSION_COOKIE}={cookie}"
    try:
        return {"Cookie": header.encode("latin-1")}
    except UnicodeEncodeError:
        return {"Cookie": header.encode("utf-8")}


def basic(password: str) -> dict[str, str]:
    encoded = base64.b64encode(f"{USER}:{password}".encode()).decode()
    return {"Authorization": f"Basic {encoded}"}


# -- signing out -----------------------------------------------------------------------------


def test_signing_out_revokes_the_session_even_when_its_cookie_is_replayed(
    token_client: TestClient,
) -> None:
    cookie = sign_in(token_client)
    assert token_client.get("/api/debates", headers=as_browser(cookie)).status_code == 200
    out = token_client.post(
        "/logout", headers={"Origin": SITE, **as_browser(cookie)}, follow_redirects=False
    )
    assert out.status_code == 303 and out.headers["location"] == "/login"
    replayed = token_client.get("/api/debates", headers=as_browser(cookie))
    assert replayed.status_code == 401
    page = token_client.get("/", headers={"Accept": "text/html", **as_browser(cookie)})
    assert page.status_code == 401 and 'action="/login"' in page.text


def test_signing_out_one_browser_leaves_the_others_signed_in(token_client: TestClient) -> None:
    first, second = sign_in(token_client), sign_in(token_client)
    assert first != second
    token_client.post("/logout", headers=as_browser(first), follow_redirects=False)
    assert token_client.get("/api/debates", headers=as_browser(first)).status_code == 401
    assert token_client.get("/api/debates", headers=as_browser(second)).status_code == 200


def test_a_cookie_made_with_the_token_but_never_issued_is_refused(
    token_client: TestClient,
) -> None:
    # The MAC alone is not enough: the session must be one this server handed out.
    forged = session_value(TOKEN, int(time.time()), "0" * 32)
    assert session_ok(Access(token=TOKEN), forged)
    assert token_client.get("/api/debates", headers=as_browser(forged)).status_code == 401


@pytest.mark.parametrize(
    "cookie",
    ["².abc.def", "١٢٣.x.y", "9" * 5_000 + ".a.b", "1.2.3.4", "..", "", "-1.a.b", "²"],
)
def test_a_malformed_session_cookie_is_a_401_not_a_500(
    token_client: TestClient, cookie: str
) -> None:
    response = token_client.get("/api/debates", headers=raw_cookie(cookie))  # type: ignore[arg-type]
    assert response.status_code == 401
    assert not session_ok(Access(token=TOKEN), cookie)


# -- failed sign-ins ---------------------------------------------------------------------------


def fail_until_blocked(client: TestClient) -> None:
    for _ in range(FREE_FAILURES):
        wrong = client.post("/login", data={"token": "guess", "next": "/"})
        assert wrong.status_code == 401


def test_repeated_failed_sign_ins_get_a_429_with_retry_after_and_a_plain_message(
    token_client: TestClient,
) -> None:
    fail_until_blocked(token_client)
    blocked = token_client.post("/login", data={"token": "guess", "next": "/"})
    assert blocked.status_code == 429
    assert 1 <= int(blocked.headers["retry-after"]) <= MAX_BLOCK_SECONDS
    assert "text/html" in blocked.headers["content-type"]
    assert "Too many failed sign-ins" in blocked.text and 'action="/login"' in blocked.text
    # While blocked, even the right token is not tried: a guess could not be told apart.
    right = token_client.post("/login", data={"token": TOKEN, "next": "/"}, follow_redirects=False)
    assert right.status_code == 429 and SESSION_COOKIE not in token_client.cookies


def test_a_signed_in_browser_is_not_locked_out_by_failures_from_its_address(
    token_client: TestClient,
) -> None:
    cookie = sign_in(token_client)
    fail_until_blocked(token_client)
    assert token_client.post("/login", data={"token": "guess"}).status_code == 429
    assert token_client.get("/api/debates", headers=as_browser(cookie)).status_code == 200


def test_wrong_bearer_tokens_are_limited_too(token_client: TestClient) -> None:
    for _ in range(FREE_FAILURES):
        assert token_client.get("/api/debates", headers=bearer("guess")).status_code == 401
    blocked = token_client.get("/api/debates", headers=bearer("guess"))
    assert blocked.status_code == 429 and int(blocked.headers["retry-after"]) >= 1
    assert "Too many failed sign-ins" in blocked.json()["detail"]
    assert token_client.get("/api/debates", headers=bearer()).status_code == 429
    assert token_client.get("/healthz", headers=bearer("guess")).status_code == 200


def test_wrong_basic_passwords_are_limited_too(basic_client: TestClient) -> None:
    for _ in range(FREE_FAILURES):
        assert basic_client.get("/api/debates", headers=basic("guess")).status_code == 401
    blocked = basic_client.get("/api/debates", headers=basic("guess"))
    assert blocked.status_code == 429 and int(blocked.headers["retry-after"]) >= 1
    assert basic_client.get("/api/debates", headers=basic(PASSWORD)).status_code == 429


def test_a_caller_that_sends_no_credential_is_not_counted_as_failing(
    token_client: TestClient,
) -> None:
    for _ in range(FREE_FAILURES * 3):
        assert token_client.get("/api/debates").status_code == 401
    assert token_client.get("/api/debates", headers=bearer()).status_code == 200


# -- the limiter's rules, on a clock of its own ------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_a_block_is_short_grows_with_more_failures_and_lifts_by_itself(clock: Clock) -> None:
    limiter = SignInLimiter(clock=clock)
    for _ in range(FREE_FAILURES):
        assert limiter.retry_after("10.0.0.1") is None
        limiter.failed("10.0.0.1")
    first = limiter.retry_after("10.0.0.1")
    assert first is not None and 0 < first <= 5
    clock.now += first
    assert limiter.retry_after("10.0.0.1") is None
    limiter.failed("10.0.0.1")
    second = limiter.retry_after("10.0.0.1")
    assert second is not None and second > first
    for _ in range(40):  # an attacker that keeps at it never blocks longer than the cap
        clock.now += MAX_BLOCK_SECONDS
        limiter.failed("10.0.0.1")
        wait = limiter.retry_after("10.0.0.1")
        assert wait is not None and wait <= MAX_BLOCK_SECONDS
    clock.now += MAX_BLOCK_SECONDS
    assert limiter.retry_after("10.0.0.1") is None


def test_a_block_holds_only_for_its_own_address(clock: Clock) -> None:
    limiter = SignInLimiter(clock=clock)
    for _ in range(FREE_FAILURES + 3):
        limiter.failed("10.0.0.1")
    assert limiter.retry_after("10.0.0.1") is not None
    assert limiter.retry_after("10.0.0.2") is None


def test_failures_are_forgotten_in_time_not_by_a_success_from_the_same_address(
    clock: Clock,
) -> None:
    # A script signing in from an address it shares with an attacker (a NAT, a proxy) must
    # not wipe the attacker's count there.
    limiter = SignInLimiter(clock=clock)
    for _ in range(FREE_FAILURES - 1):
        limiter.failed("10.0.0.1")
        limiter.succeeded("10.0.0.1")
    limiter.failed("10.0.0.1")
    assert limiter.retry_after("10.0.0.1") is not None
    clock.now += FORGET_FAILURES_SECONDS + 1
    for _ in range(FREE_FAILURES - 1):
        limiter.failed("10.0.0.1")
    assert limiter.retry_after("10.0.0.1") is None


def test_the_overall_limit_stops_many_addresses_and_lifts_when_they_stop(clock: Clock) -> None:
    limiter = SignInLimiter(clock=clock)
    for i in range(GLOBAL_FAILURES):
        limiter.failed(f"10.1.{i // 250}.{i % 250}")  # one failure each: no address is blocked
    wait = limiter.retry_after("10.9.9.9")
    assert wait is not None and 0 < wait <= GLOBAL_WINDOW_SECONDS
    clock.now += GLOBAL_WINDOW_SECONDS
    assert limiter.retry_after("10.9.9.9") is None


def test_the_overall_limit_spares_an_address_that_signed_in_before(clock: Clock) -> None:
    limiter = SignInLimiter(clock=clock)
    limiter.succeeded("192.0.2.7")  # the real user, some days ago
    clock.now += 3 * 24 * 3600
    for i in range(GLOBAL_FAILURES * 2):
        limiter.failed(f"10.1.{i // 250}.{i % 250}")
    assert limiter.retry_after("10.9.9.9") is not None
    assert limiter.retry_after("192.0.2.7") is None


def test_the_limiter_remembers_a_bounded_number_of_addresses(clock: Clock) -> None:
    limiter = SignInLimiter(clock=clock, max_addresses=100)
    for i in range(1_000):
        limiter.failed(f"10.2.{i // 250}.{i % 250}")
        clock.now += GLOBAL_WINDOW_SECONDS  # spread out: the overall limit stays quiet
    assert limiter.remembered_addresses() <= 100


@pytest.mark.parametrize(
    "credential",
    ["Basic é", "Basic ÿÿÿÿ", "Basic " + "A" * 10_001, "Basic w6k=", "Basic /w==", "Basic  "],
)
def test_a_malformed_basic_credential_is_a_401_not_a_500(
    basic_client: TestClient, credential: str
) -> None:
    # Header bytes are read as Latin-1: these arrive as the characters written here.
    headers = {"Authorization": credential.encode("latin-1")}
    response = basic_client.get("/api/debates", headers=headers)  # type: ignore[arg-type]
    assert response.status_code == 401


def test_parallel_guesses_cannot_slip_in_before_the_first_ones_are_counted(clock: Clock) -> None:
    limiter = SignInLimiter(clock=clock)
    tried: list[int] = []

    def verify() -> bool:
        tried.append(1)
        time.sleep(0.002)  # a slow check: the other threads pile up meanwhile
        return False

    with ThreadPoolExecutor(max_workers=16) as pool:
        attempts = list(pool.map(lambda _: limiter.attempt("10.0.0.1", verify), range(64)))
    assert len(tried) == FREE_FAILURES
    assert sum(a.retry_after is not None for a in attempts) == 64 - FREE_FAILURES
