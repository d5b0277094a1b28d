"""A debate through the JSON API, start to finish, on SQLite and on PostgreSQL: started, run
by the real SDK adapters against the fake LLM server, saved, listed, searched and read back."""

from __future__ import annotations

from datetime import datetime

import pytest
from fastapi.testclient import TestClient

from tests.web.conftest import start_duel, wait_for_debate

pytestmark = pytest.mark.both_databases


def test_a_debate_started_through_the_api_is_saved_listed_searched_and_read_back(
    client: TestClient,
) -> None:
    debate_id = start_duel(client, topic="Tabs or SPACES for Python code")
    assert wait_for_debate(client, debate_id) == "completed"
    other_id = start_duel(client, topic="Vim or Emacs, 100% honestly")
    assert wait_for_debate(client, other_id) == "completed"

    debate = client.get(f"/api/debates/{debate_id}").json()
    assert debate["status"] == "completed"
    turns = debate["turns"]
    assert [turn["seq"] for turn in turns] == list(range(1, len(turns) + 1))
    assert {turn["phase"] for turn in turns} >= {"opening", "synthesis"}
    assert all(turn["text"] for turn in turns if turn["status"] == "completed")
    assert debate["usage"]["total_tokens"] == sum(
        turn["input_tokens"] + turn["output_tokens"] for turn in turns
    )
    started = datetime.fromisoformat(debate["started_at"])
    finished = datetime.fromisoformat(debate["finished_at"])
    assert started.utcoffset() is not None and started <= finished

    listing = client.get("/api/debates").json()
    assert [item["id"] for item in listing["items"]] == [other_id, debate_id]
    assert listing["total"] == 2
    assert [item["id"] for item in client.get("/api/debates?q=spaces").json()["items"]] == [
        debate_id
    ]
    assert [item["id"] for item in client.get("/api/debates?q=100%25").json()["items"]] == [
        other_id
    ]
    assert client.get("/api/debates?q=%25%25").json()["total"] == 0
    assert client.get("/api/debates?status=failed").json()["total"] == 0
    assert client.get("/api/debates?page=2").json()["items"] == []

    refused = client.post(f"/api/debates/{debate_id}/cancel")
    assert refused.status_code == 409
    assert "completed" in refused.json()["detail"]
