"""A request that names no rounds gets its format's own default: 4 for a duel, 2 update
rounds for a society (as Du et al. ran it); one that names them gets what it named."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.web.app import create_app
from tests.web.conftest import http_providers


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings, providers=http_providers(settings))) as client:
        yield client


def spec_rounds(client: TestClient, body: dict[str, object]) -> int:
    created = client.post("/api/debates", json=body)
    assert created.status_code == 201, created.text
    debate = client.get(f"/api/debates/{created.json()['id']}").json()
    rounds: int = debate["rounds"]
    return rounds


@pytest.mark.parametrize(("format", "rounds"), [("duel", 4), ("society", 2)])
def test_the_api_gives_each_format_its_own_default_rounds(
    client: TestClient, format: str, rounds: int
) -> None:
    assert spec_rounds(client, {"topic": "What is 2+2?", "format": format}) == rounds
    named = {"topic": "What is 2+2?", "format": format, "rounds": 3}
    assert spec_rounds(client, named) == 3


def test_the_form_leaves_rounds_blank_and_says_what_blank_gives(client: TestClient) -> None:
    page = client.get("/").text
    assert 'name="rounds"' in page and 'placeholder="duel 4 · society 2"' in page
    sent = client.post(
        "/debates",
        data={"topic": "What is 2+2?", "format": "society", "rounds": ""},
        follow_redirects=False,
    )
    assert sent.status_code == 303, sent.text
    debate_id = sent.headers["location"].rstrip("/").rsplit("/", 1)[-1]
    assert client.get(f"/api/debates/{debate_id}").json()["rounds"] == 2
