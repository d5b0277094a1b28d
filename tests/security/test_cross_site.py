"""A state-changing request from another site is refused with 403 before it does anything;
the same site, a configured origin, a Bearer-token script, and a client that sends no
browser marks at all (curl, scripts, when no auth is set) get through. The Host guard keeps
a loopback server from answering to someone else's DNS name."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.cli.serve import LOOPBACK_NAMES, guarded
from app.config import Settings
from tests.fakes.llm_server import FakeLLMServer
from tests.security.conftest import EVIL, SITE, TOKEN, bearer, running, with_access
from tests.web.conftest import start_duel, wait_for_debate

FROM_EVIL = (
    {"Origin": EVIL},
    {"Origin": "null"},
    {"Origin": "http://testserver.evil.example"},
    {"Referer": f"{EVIL}/page"},
    {"Sec-Fetch-Site": "cross-site"},
)


def unsafe_requests(debate_id: str) -> list[tuple[str, dict[str, object]]]:
    return [
        ("/debates", {"data": {"topic": "Cats or dogs", "rounds": "1"}}),
        ("/api/debates", {"json": {"topic": "Cats or dogs", "rounds": 1}}),
        (f"/debates/{debate_id}/cancel", {}),
        (f"/debates/{debate_id}/resume", {}),
        (f"/api/debates/{debate_id}/cancel", {}),
        (f"/api/debates/{debate_id}/resume", {}),
    ]


@pytest.mark.parametrize("marks", FROM_EVIL, ids=lambda m: next(iter(m.items()))[0])
def test_posts_from_another_site_are_refused_before_they_act(
    open_client: TestClient, fake_llm: FakeLLMServer, marks: dict[str, str]
) -> None:
    debate_id = start_duel(open_client)
    assert wait_for_debate(open_client, debate_id) == "completed"
    calls = len(fake_llm.requests)
    for path, body in unsafe_requests(debate_id):
        response = open_client.post(path, headers=marks, follow_redirects=False, **body)  # type: ignore[arg-type]
        assert response.status_code == 403, (path, response.text)
        assert "Cross-site request refused" in response.text
    assert open_client.get("/api/debates").json()["total"] == 1  # nothing was started
    assert len(fake_llm.requests) == calls


def test_posts_from_this_site_go_through(open_client: TestClient) -> None:
    same = {"Origin": SITE}
    form = open_client.post(
        "/debates", data={"topic": "Cats", "rounds": "1"}, headers=same, follow_redirects=False
    )
    assert form.status_code == 303
    api = open_client.post("/api/debates", json={"topic": "Dogs", "rounds": 1}, headers=same)
    assert api.status_code == 201
    debate_id = api.json()["id"]
    by_referer = {"Referer": f"{SITE}/debates/{debate_id}"}
    cancel = open_client.post(
        f"/debates/{debate_id}/cancel", headers=by_referer, follow_redirects=False
    )
    assert cancel.status_code == 303


def test_a_client_with_no_browser_marks_is_a_script_and_goes_through(
    open_client: TestClient,
) -> None:
    response = open_client.post("/api/debates", json={"topic": "Dogs", "rounds": 1})
    assert response.status_code == 201


def test_a_configured_origin_may_post(settings: Settings) -> None:
    with running(with_access(settings, allowed_origins=["https://argue.example.org"])) as client:
        allowed = {"Origin": "https://argue.example.org"}
        response = client.post("/api/debates", json={"topic": "Dogs", "rounds": 1}, headers=allowed)
        assert response.status_code == 201
        refused = client.post("/api/debates", json={"topic": "Dogs"}, headers={"Origin": EVIL})
        assert refused.status_code == 403


def test_a_bearer_script_may_post_from_anywhere_but_a_cookie_may_not(
    token_client: TestClient,
) -> None:
    evil = {"Origin": EVIL}
    body = {"topic": "Dogs", "rounds": 1}
    assert (
        token_client.post("/api/debates", json=body, headers={**evil, **bearer()}).status_code
        == 201
    )
    token_client.post("/login", data={"token": TOKEN}, headers={"Origin": SITE})
    assert token_client.get("/api/debates").status_code == 200  # signed in
    assert token_client.post("/api/debates", json=body, headers=evil).status_code == 403
    assert token_client.post("/login", data={"token": TOKEN}, headers=evil).status_code == 403


def test_a_loopback_server_answers_only_to_loopback_names(settings: Settings) -> None:
    loopback = guarded(settings, "127.0.0.1")
    assert loopback.allowed_hosts == list(LOOPBACK_NAMES)
    with running(loopback) as client:
        assert client.get("/healthz", headers={"Host": "rebound.evil.example"}).status_code == 400
        for host in ("127.0.0.1:8000", "localhost:8000", "[::1]:8000", "localhost"):
            assert client.get("/healthz", headers={"Host": host}).status_code == 200, host


def test_serving_beyond_loopback_without_a_credential_warns(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    exposed = guarded(settings, "0.0.0.0")
    assert exposed.allowed_hosts == []  # a container answers to whatever name it is given
    assert "warning: serving on 0.0.0.0 with no ARGUE_AUTH_TOKEN" in capsys.readouterr().err
    guarded(with_access(settings, auth_token=TOKEN), "0.0.0.0")
    guarded(settings, "::1")
    assert capsys.readouterr().err == ""
