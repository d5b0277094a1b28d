"""Bad input to the JSON API is refused with 422 and pydantic-style details naming the field;
unknown ids are 404; nothing anyone sends yields a 500."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from app.debates import MAX_CONTEXT_FILE_BYTES, MAX_CONTEXT_FILES, MAX_TOPIC_CHARS
from app.store import MAX_SEARCH_CHARS
from tests.web.test_routes import seed_debates

# Each test runs on SQLite and on PostgreSQL (tests/conftest.py).
pytestmark = pytest.mark.both_databases


def refused(client: TestClient, **request: Any) -> list[dict[str, Any]]:
    response = client.post("/api/debates", **request)
    assert response.status_code == 422, response.text
    detail: list[dict[str, Any]] = response.json()["detail"]
    assert isinstance(detail, list) and detail
    for item in detail:
        assert {"loc", "msg", "type"} <= item.keys()
        assert not item["msg"].startswith("Value error")
    return detail


BIG_FILE = [{"name": "big", "text": "é" * (MAX_CONTEXT_FILE_BYTES // 2 + 1)}]
TOO_MANY_FILES = [{"name": f"f{i}", "text": "t"} for i in range(MAX_CONTEXT_FILES + 1)]
ODD_SEARCHES = ["q=%00", "q=%25_%5C", "q=%ED%A0%80", "q=<script>", "page=100000"]


def locs(detail: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [tuple(item["loc"]) for item in detail]


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({}, ("body", "topic")),
        ({"topic": None}, ("body", "topic")),
        ({"topic": "   \n\t "}, ("body", "topic")),
        ({"topic": "x" * (MAX_TOPIC_CHARS + 1)}, ("body", "topic")),
        ({"topic": "a\x00b"}, ("body", "topic")),
        ({"topic": "bell\x07"}, ("body", "topic")),
        ({"topic": "escape \x1b[31m red"}, ("body", "topic")),
        ({"topic": "c1 \x85 control"}, ("body", "topic")),
        ({"topic": 42}, ("body", "topic")),
        ({"topic": ["a", "list"]}, ("body", "topic")),
        ({"topic": "x", "rounds": 0}, ("body", "rounds")),
        ({"topic": "x", "rounds": 9}, ("body", "rounds")),
        ({"topic": "x", "rounds": "abc"}, ("body", "rounds")),
        ({"topic": "x", "rounds": 1e9}, ("body", "rounds")),
        ({"topic": "x", "rounds": 2.5}, ("body", "rounds")),
        ({"topic": "x", "rounds": True}, ("body", "rounds")),
        ({"topic": "x", "rounds": None}, ("body", "rounds")),
        ({"topic": "x", "format": "brawl"}, ("body", "format")),
        ({"topic": "x", "topic_type": "poem"}, ("body", "topic_type")),
        ({"topic": "x", "seed": "grep"}, ("body", "seed")),
        ({"topic": "x", "seed": ""}, ("body", "seed")),
        ({"topic": "x", "history": "maybe"}, ("body", "history")),
        ({"topic": "x", "history": [1]}, ("body", "history")),
        ({"topic": "x", "surprise": True}, ("body", "surprise")),
        ({"topic": "x", "seats": []}, ("body", "seats")),
        ({"topic": "x", "seats": {"referee": {"provider": "openai"}}}, ("body", "seats")),
        ({"topic": "x", "format": "panel", "seats": {"claude": {"provider": "openai"}}},
         ("body", "seats")),
        ({"topic": "x", "seats": {"claude": {"provider": "nobody"}}},
         ("body", "seats", "claude", "provider")),
        ({"topic": "x", "seats": {"claude": "openai"}}, ("body", "seats", "claude")),
        ({"topic": "x", "seats": {"claude": {"provider": "openai", "model": "gpt 5"}}},
         ("body", "seats", "claude", "model")),
        ({"topic": "x", "seats": {"claude": {"provider": "openai", "model": "m\x00"}}},
         ("body", "seats", "claude", "model")),
        ({"topic": "x", "seats": {"claude": {"provider": "openai", "model": "m" * 129}}},
         ("body", "seats", "claude", "model")),
        ({"topic": "x", "seats": {"claude": {"provider": "openai", "extra": 1}}},
         ("body", "seats", "claude", "extra")),
        ({"topic": "x", "model": "two words"}, ("body", "model")),
        ({"topic": "x", "context": {"name": "a"}}, ("body", "context")),
        ({"topic": "x", "context": [{"name": "a.bin", "text": "PNG\x00\x01"}]},
         ("body", "context", 0, "text")),
        ({"topic": "x", "context": [{"name": "", "text": "t"}]}, ("body", "context", 0, "name")),
        ({"topic": "x", "context": [{"name": "a\nb", "text": "t"}]},
         ("body", "context", 0, "name")),
        ({"topic": "x", "context": BIG_FILE}, ("body", "context", 0, "text")),
        ({"topic": "x", "context": TOO_MANY_FILES}, ("body", "context")),
    ],
    ids=lambda value: repr(value)[:40],
)  # fmt: skip
def test_a_bad_field_is_refused_with_a_422_naming_it(
    client: TestClient, body: dict[str, Any], loc: tuple[Any, ...]
) -> None:
    detail = refused(client, json=body)
    assert loc in locs(detail), detail


def test_a_binary_context_file_is_named_as_not_text(client: TestClient) -> None:
    body = {"topic": "x", "context": [{"name": "photo.png", "text": "\x89PNG\x00"}]}
    (item,) = refused(client, json=body)
    assert item["msg"] == "photo.png is not a text file"


def test_an_unknown_seat_names_the_formats_seats(client: TestClient) -> None:
    body = {"topic": "x", "seats": {"referee": {"provider": "openai"}}}
    (item,) = refused(client, json=body)
    assert item["msg"] == "duel has no seat referee; its seats are claude, gemini"


@pytest.mark.parametrize(
    ("content", "content_type"),
    [
        (b"[]", "application/json"),
        (b"null", "application/json"),
        (b'"a string"', "application/json"),
        (b"42", "application/json"),
        (b"not json", "application/json"),
        (b'{"topic": "unterminated', "application/json"),
        (b"\xff\xfe\x00", "application/json"),
        (b"topic=x", "text/plain"),
        (b"topic=x", "application/x-www-form-urlencoded"),
        (b"", "application/json"),
        (b"<xml/>", "application/xml"),
    ],
)
def test_a_body_that_is_not_a_json_object_is_refused_in_json(
    client: TestClient, content: bytes, content_type: str
) -> None:
    response = client.post("/api/debates", content=content, headers={"content-type": content_type})
    # 422 with details when it parses; 400 when its bytes cannot even be decoded.
    assert response.status_code in (400, 422), response.text
    assert response.json()["detail"]


@pytest.mark.parametrize(
    ("content", "field"),
    [
        (b'{"topic": "a\\ud800b"}', ["body", "topic"]),
        (b'{"topic": "x", "format": "\\udfff"}', ["body", "format"]),
        (b'{"\\ud800": 1, "topic": "x"}', ["body"]),
        (b'{"topic": "x", "context": [{"name": "a\\udc00", "text": "b"}]}',
         ["body", "context", 0, "name"]),
        (b'{"topic": "x", "context": [{"name": "a", "text": "\\ud83d"}]}',
         ["body", "context", 0, "text"]),
    ],
)  # fmt: skip
def test_lone_surrogates_are_refused_not_a_500(
    client: TestClient, content: bytes, field: list[str | int]
) -> None:
    detail = refused(client, content=content, headers={"content-type": "application/json"})
    assert [(item["loc"], item["type"]) for item in detail] == [(field, "string_unicode")]
    # What the error repeats of the input is valid text: the surrogate became U+FFFD.
    echoed = str(detail[0].get("input", ""))
    assert not any(0xD800 <= ord(char) <= 0xDFFF for char in echoed)


def test_a_huge_topic_is_refused_without_echoing_it_back(client: TestClient) -> None:
    response = client.post("/api/debates", json={"topic": "x" * 1_000_000})
    assert response.status_code == 422
    assert len(response.content) < 2_000


def test_unicode_topics_that_are_text_are_accepted_and_line_ends_normalised(
    client: TestClient,
) -> None:
    topic = "  Café, 日本語, emoji 👩‍💻, RTL שלום\r\nsecond line\twith a tab  "
    response = client.post("/api/debates", json={"topic": topic, "rounds": 1})
    assert response.status_code == 201, response.text
    assert response.json()["topic"] == topic.strip().replace("\r\n", "\n")


@pytest.mark.parametrize(
    "query",
    ["page=-1", "page=0", "page=abc", "page=1e9", "page=99999999999", "format=zzz",
     "status=zzz", "q=" + "x" * 501],
)  # fmt: skip
def test_bad_list_queries_on_the_api_are_a_422(client: TestClient, query: str) -> None:
    response = client.get(f"/api/debates?{query}")
    assert response.status_code == 422, response.text
    assert response.json()["detail"][0]["loc"][0] == "query"


@pytest.mark.parametrize("query", ODD_SEARCHES)
def test_odd_searches_on_the_api_answer_an_empty_page(client: TestClient, query: str) -> None:
    response = client.get(f"/api/debates?{query}")
    assert response.status_code == 200, response.text
    assert response.json()["items"] == []


@pytest.mark.parametrize("query", ["page=-1", "page=abc", "page=1e9"])
def test_bad_page_numbers_on_the_history_page_lead_to_its_first_page_not_a_500(
    client: TestClient, query: str
) -> None:
    response = client.get(f"/debates?{query}", follow_redirects=False)
    assert response.status_code == 302
    assert response.headers["location"] == "/debates?page=1"


@pytest.mark.parametrize("query", ["format=zzz", "status=zzz", "q=%00", "format=&status=&q="])
def test_unknown_filters_on_the_history_page_fall_back_to_all(
    client: TestClient, query: str
) -> None:
    response = client.get(f"/debates?{query}")
    assert response.status_code == 200
    assert "No debates match." in response.text


def test_a_search_too_long_to_run_on_the_history_page_says_so_and_keeps_what_was_typed(
    client: TestClient,
) -> None:
    # SQLite refuses a LIKE pattern past 50,000 bytes once a row is compared: this page
    # answered "The database is not answering" (503) to such a search.
    engine: Engine = client.app.state.engine  # type: ignore[attr-defined]
    seed_debates(engine, 1)
    longest = "x" * MAX_SEARCH_CHARS
    [found] = seed_debates(engine, 1, topic=f"Seeded {longest} topic")

    response = client.get("/debates", params={"q": "x" * 50_000})

    assert response.status_code == 422
    assert "A search is at most 500 characters; this one has 50,000." in response.text
    assert f'value="{"x" * 50_000}"' in response.text
    assert "No debates match." in response.text
    kept = client.get("/debates", params={"q": longest})
    assert kept.status_code == 200
    assert found in kept.text and "1 debate" in kept.text


ODD_IDS = ["nope", "%00", "%ED%A0%80", "..%2F..%2Fetc", "a%20b", "x" * 3000, "%3Cscript%3E", "😀"]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/debates/{}"),
        ("POST", "/api/debates/{}/cancel"),
        ("POST", "/api/debates/{}/resume"),
        ("GET", "/api/debates/{}/events"),
        ("GET", "/debates/{}"),
        ("GET", "/debates/{}/stream"),
        ("GET", "/debates/{}/transcript.md"),
        ("GET", "/debates/{}/finals.md"),
    ],
)
def test_unknown_and_odd_ids_are_a_404(client: TestClient, method: str, path: str) -> None:
    for debate_id in ODD_IDS:
        response = client.request(method, path.format(debate_id))
        assert response.status_code == 404, (debate_id, response.text[:200])
        if path.startswith("/api/"):
            assert response.json()["detail"]  # "No debate …", or "Not Found" for no route
        else:
            assert "<script>" not in response.text.split("</head>", 1)[1]
