"""Deleting a debate over the web: ``DELETE /api/debates/{id}`` (204, then 404), the
confirmation page and its form (back to the history with a notice), and a queued or running
debate refused with 409 on both until it is cancelled."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from app import store
from app.db import session_scope
from tests.web.conftest import start_duel, wait_for_debate
from tests.web.test_routes import seed_debates

SAME_ORIGIN = {"Origin": "http://testserver"}


def engine_of(client: TestClient) -> Engine:
    engine: Engine = client.app.state.engine  # type: ignore[attr-defined]
    return engine


def outputs(client: TestClient, debate_id: str) -> list[Path]:
    with session_scope(engine_of(client)) as session:
        debate = store.get_debate(session, debate_id=debate_id)
        assert debate is not None
        return [Path(path) for path in (debate.outputs or {}).values() if path]


def test_api_delete_answers_204_then_the_debate_and_its_files_are_gone(
    client: TestClient,
) -> None:
    debate_id = start_duel(client)
    other = start_duel(client, topic="Another topic entirely")
    assert wait_for_debate(client, debate_id) == "completed"
    assert wait_for_debate(client, other) == "completed"
    files = outputs(client, debate_id)
    assert files and all(path.is_file() for path in files)

    response = client.delete(f"/api/debates/{debate_id}")

    assert response.status_code == 204
    assert response.content == b""
    assert client.get(f"/api/debates/{debate_id}").status_code == 404
    assert client.get(f"/debates/{debate_id}").status_code == 404
    assert client.delete(f"/api/debates/{debate_id}").status_code == 404
    assert not any(path.exists() for path in files)
    assert client.get(f"/api/debates/{other}").json()["status"] == "completed"
    assert all(path.is_file() for path in outputs(client, other))


@pytest.mark.parametrize("status", ["queued", "running"])
def test_api_refuses_to_delete_an_active_debate_until_it_is_cancelled(
    client: TestClient, status: str
) -> None:
    [debate_id] = seed_debates(engine_of(client), 1, status=status)

    refused = client.delete(f"/api/debates/{debate_id}")

    assert refused.status_code == 409
    assert refused.json()["detail"] == f"The debate is {status}: cancel it before deleting it."
    assert client.get(f"/api/debates/{debate_id}").status_code == 200
    assert client.post(f"/api/debates/{debate_id}/cancel").status_code == 200
    assert client.delete(f"/api/debates/{debate_id}").status_code == 204
    assert client.get(f"/api/debates/{debate_id}").status_code == 404


def test_the_schema_documents_delete_with_its_answers(client: TestClient) -> None:
    operation = client.get("/openapi.json").json()["paths"]["/api/debates/{debate_id}"]["delete"]
    assert set(operation["responses"]) >= {"204", "404", "409"}
    assert "cancel it first" in operation["description"]


def test_the_delete_button_asks_first_then_leads_to_the_history_with_a_notice(
    client: TestClient,
) -> None:
    [debate_id] = seed_debates(engine_of(client), 1, topic="Delete me please")
    page = client.get(f"/debates/{debate_id}").text
    assert f'href="/debates/{debate_id}/delete"' in page

    confirm = client.get(f"/debates/{debate_id}/delete")
    assert confirm.status_code == 200
    assert "Delete this debate?" in confirm.text and "Delete me please" in confirm.text
    assert f'action="/debates/{debate_id}/delete"' in confirm.text
    assert client.get(f"/api/debates/{debate_id}").status_code == 200  # asking deletes nothing

    done = client.post(f"/debates/{debate_id}/delete", headers=SAME_ORIGIN, follow_redirects=False)
    assert done.status_code == 303
    assert done.headers["location"] == f"/debates?deleted={debate_id}"
    history = client.get(done.headers["location"]).text
    assert re.search(rf'id="notice"[^>]*>Debate {debate_id} was deleted', history)
    assert "Delete me please" not in history
    assert client.get(f"/api/debates/{debate_id}").status_code == 404


def test_a_cross_site_delete_form_is_refused(client: TestClient) -> None:
    [debate_id] = seed_debates(engine_of(client), 1)
    response = client.post(
        f"/debates/{debate_id}/delete", headers={"Origin": "https://evil.example"}
    )
    assert response.status_code == 403
    assert client.get(f"/api/debates/{debate_id}").status_code == 200


def test_the_confirmation_of_a_running_debate_says_to_cancel_it_first(
    client: TestClient,
) -> None:
    [debate_id] = seed_debates(engine_of(client), 1, status="running")

    confirm = client.get(f"/debates/{debate_id}/delete")
    posted = client.post(f"/debates/{debate_id}/delete", headers=SAME_ORIGIN)

    for page in (confirm, posted):
        assert page.status_code == 409
        assert "The debate is running: cancel it before deleting it." in page.text
        assert f'action="/debates/{debate_id}/cancel"' in page.text
        assert f'action="/debates/{debate_id}/delete"' not in page.text
    assert client.get(f"/api/debates/{debate_id}").status_code == 200


def test_a_notice_for_an_id_no_debate_could_have_is_not_shown(client: TestClient) -> None:
    page = client.get("/debates", params={"deleted": "<b>hi</b>"}).text
    assert 'id="notice"' not in page
