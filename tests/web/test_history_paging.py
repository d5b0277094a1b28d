"""The history's page number, as people type it into the address bar: one that is not a page
number, or one past the last page, leads to a real page of the history (by a redirect, so the
address says which page it is), never to raw JSON or to "page 99 of 2"."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from tests.web.test_routes import seed_debates

# Each test runs on SQLite and on PostgreSQL (tests/conftest.py).
pytestmark = pytest.mark.both_databases


@pytest.fixture
def two_pages(client: TestClient) -> TestClient:
    engine: Engine = client.app.state.engine  # type: ignore[attr-defined]
    seed_debates(engine, 25)
    return client


@pytest.mark.parametrize("page", ["abc", "0", "-3", "1.5", ""])
def test_a_page_that_is_not_a_page_number_leads_to_the_first_page(
    two_pages: TestClient, page: str
) -> None:
    response = two_pages.get(f"/debates?q=Seeded&page={page}", follow_redirects=False)
    assert response.status_code == 302
    assert response.headers["location"] == "/debates?q=Seeded&page=1"
    shown = two_pages.get(f"/debates?q=Seeded&page={page}")
    assert shown.status_code == 200
    assert shown.headers["content-type"].startswith("text/html")
    assert "page 1 of 2" in shown.text


@pytest.mark.parametrize("page", ["99", "99999999999999999999"])
def test_a_page_past_the_last_leads_to_the_last_page_with_the_filters_kept(
    two_pages: TestClient, page: str
) -> None:
    response = two_pages.get(f"/debates?status=completed&page={page}", follow_redirects=False)
    assert response.status_code == 302
    assert response.headers["location"] == "/debates?status=completed&page=2"
    shown = two_pages.get(f"/debates?status=completed&page={page}")
    assert "page 2 of 2" in shown.text
    assert f"page {page}" not in shown.text


def test_an_empty_history_past_its_only_page_leads_to_page_one(client: TestClient) -> None:
    response = client.get("/debates?page=7", follow_redirects=False)
    assert response.status_code == 302
    assert response.headers["location"] == "/debates?page=1"
    assert "No debates match." in client.get("/debates?page=7").text


def test_a_real_page_number_is_shown_without_a_redirect(two_pages: TestClient) -> None:
    response = two_pages.get("/debates?page=2", follow_redirects=False)
    assert response.status_code == 200
    assert "page 2 of 2" in response.text
    assert two_pages.get("/debates", follow_redirects=False).status_code == 200
