"""Hostile JSON bodies and headers on the API: numbers that are not JSON (NaN, Infinity), too
large for a float or too long for an int, deep nesting, odd content types, and bodies built
to make the answer huge. Each is refused with a small 422 that names the problem, never a 500.
A body larger than the API reads is a 413 saying the limit, read no further than it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.config import Settings
from app.debates import MAX_CONTEXT_FILE_BYTES, MAX_CONTEXT_FILES
from app.web.bad_input import MAX_JSON_BODY_BYTES
from tests.security.conftest import TOKEN, running, with_access

JSON = {"content-type": "application/json"}
HUGE_INT = "9" * 5000


@pytest.fixture
def token_client(settings: Settings) -> Iterator[TestClient]:
    with running(with_access(settings, auth_token=TOKEN)) as client:
        yield client


def post(client: TestClient, content: bytes, headers: dict[str, str] = JSON) -> Any:
    return client.post("/api/debates", content=content, headers=headers)


def refusal(client: TestClient, content: bytes, headers: dict[str, str] = JSON) -> list[Any]:
    response = post(client, content, headers)
    assert response.status_code == 422, response.text[:500]
    assert response.headers["content-type"].startswith("application/json")
    detail: list[dict[str, Any]] = response.json()["detail"]
    assert detail and all({"loc", "msg", "type"} <= item.keys() for item in detail)
    return detail


@pytest.mark.parametrize(
    ("literal", "named"),
    [
        ("NaN", "NaN"),
        ("Infinity", "Infinity"),
        ("-Infinity", "-Infinity"),
        ("1e999", "too large"),
        ("-1e999", "too large"),
        (HUGE_INT, "digits"),
        ("-" + HUGE_INT, "digits"),
    ],
    ids=["nan", "infinity", "minus-infinity", "1e999", "minus-1e999", "huge-int", "huge-neg-int"],
)
@pytest.mark.parametrize(
    "template",
    [
        '{{"topic": "x", "rounds": {}}}',
        '{{"topic": {}}}',
        '{{"topic": "x", "surprise": {}}}',
        '{{"topic": "x", "seats": {{"claude": {{"provider": "openai", "model": {}}}}}}}',
        '{{"topic": "x", "context": [{{"name": "a", "text": [1, 2, {}]}}]}}',
        "[{}]",
        "{}",
    ],
    ids=["rounds", "topic", "unknown-key", "nested-seat", "in-a-list", "top-level-list", "bare"],
)
def test_a_number_json_does_not_allow_is_a_422_naming_it(
    client: TestClient, literal: str, named: str, template: str
) -> None:
    detail = refusal(client, template.format(literal).encode())
    message = " ".join(item["msg"] for item in detail)
    assert named in message, detail
    assert "JSON" in message, detail
    assert detail[0]["loc"][0] == "body"


@pytest.mark.parametrize("depth", [200, 900, 990, 5_000, 100_000])
def test_deeply_nested_json_is_a_422_not_a_500(client: TestClient, depth: int) -> None:
    nested = "[" * depth + "]" * depth
    for content in (f'{{"topic": "x", "deep": {nested}}}', f'{{"topic": {nested}}}'):
        response = post(client, content.encode())
        assert response.status_code == 422, response.text[:300]
        assert len(response.content) < 4_000


def test_json_nested_too_deeply_to_read_says_so(client: TestClient) -> None:
    nested = "[" * 100_000 + "]" * 100_000
    detail = refusal(client, f'{{"topic": "x", "deep": {nested}}}'.encode())
    assert "nested too deeply" in detail[0]["msg"], detail


def test_a_body_that_is_not_utf_json_text_is_a_422_saying_so(client: TestClient) -> None:
    detail = refusal(client, b'{"topic": "caf\xe9"}')
    assert "UTF-8" in detail[0]["msg"], detail


def test_invalid_json_says_where_and_what(client: TestClient) -> None:
    detail = refusal(client, b'{"topic": "x",\n "rounds": }')
    assert detail[0]["msg"].startswith("Invalid JSON at line 2 column 12: Expecting value"), detail


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json; charset=utf-16",
        "application/json; charset=nonsense",
        "application/vnd.argue+json",
        "application/json;;;",
        "application/json; boundary=x; charset",
        "APPLICATION/JSON",
        "text/html",
        "multipart/form-data; boundary=xyz",
        "application/x-www-form-urlencoded",
        "*/*",
        ";",
        "application/",
    ],
)
def test_odd_content_types_never_give_a_500(client: TestClient, content_type: str) -> None:
    for content in (b'{"topic": "x", "rounds": NaN}', b'{"topic": 1e999}', b"\xff\xfe\x00{"):
        response = post(client, content, {"content-type": content_type})
        assert response.status_code in (400, 415, 422), (content_type, content, response.text)


def test_nan_with_no_content_type_is_a_422(client: TestClient) -> None:
    response = client.post("/api/debates", content=b'{"topic": NaN}', headers={"content-type": ""})
    assert response.status_code == 422, response.text


def test_plain_json_with_large_but_finite_numbers_still_works(client: TestClient) -> None:
    detail = refusal(client, b'{"topic": "x", "rounds": 1.5e300}')
    assert detail[0]["loc"] == ["body", "rounds"]
    detail = refusal(client, b'{"topic": "x", "rounds": 123456789012345678901234567890}')
    assert detail[0]["loc"] == ["body", "rounds"]
    created = post(client, b'{"topic": "Finite numbers", "rounds": 1.0}')
    assert created.status_code == 201, created.text


# -- what an error answer repeats ------------------------------------------------------------


def test_two_hundred_thousand_unknown_keys_give_a_small_answer_counting_what_it_left_out(
    client: TestClient,
) -> None:
    body = {"topic": "x", **{f"unknown-key-{i}": i for i in range(200_000)}}
    content = json.dumps(body).encode()
    response = post(client, content)
    assert response.status_code == 422
    assert len(response.content) < 20_000 < len(content) // 100
    detail = response.json()["detail"]
    listed = [item for item in detail if item["type"] == "extra_forbidden"]
    assert 0 < len(listed) <= 20
    (summary,) = [item for item in detail if item["type"] == "too_many_errors"]
    assert summary["msg"] == f"{200_000 - len(listed):,} more errors not listed"


def test_an_echoed_input_is_bounded_in_size_and_depth(client: TestClient) -> None:
    wide = {f"k{i}": "v" * 10_000 for i in range(500)}
    deep: Any = "bottom"
    for _ in range(50):
        deep = {"down": [deep, "x" * 10_000]}
    for value in (wide, deep, ["y" * 10_000] * 500):
        content = json.dumps({"topic": "x", "surprise": value}).encode()
        response = post(client, content)
        assert response.status_code == 422
        assert len(response.content) < 8_000, len(response.content)
        (item,) = response.json()["detail"]
        assert item["loc"] == ["body", "surprise"]


def test_a_long_unknown_key_is_cut_in_the_location(client: TestClient) -> None:
    content = json.dumps({"topic": "x", "k" * 1_000_000: 1}).encode()
    response = post(client, content)
    assert response.status_code == 422
    assert len(response.content) < 2_000


def test_a_validation_error_outside_the_api_is_bounded_too(token_client: TestClient) -> None:
    # The login form's fields have a length limit; the refusal must not repeat them whole.
    response = token_client.post("/login", data={"token": "t" * 100_000, "next": "/"})
    assert response.status_code == 422
    assert len(response.content) < 2_000


def too_large(response: httpx.Response) -> str:
    assert response.status_code == 413, response.text[:500]
    assert response.headers["content-type"].startswith("application/json")
    detail: str = response.json()["detail"]
    return detail


def test_a_body_declared_larger_than_the_api_reads_is_a_413_saying_the_limit(
    client: TestClient,
) -> None:
    body = json.dumps({"topic": "a" * (MAX_JSON_BODY_BYTES + 1)}).encode()

    response = post(client, body)

    assert too_large(response) == (
        f"The request body is larger than {MAX_JSON_BODY_BYTES:,} bytes, the most the API reads."
    )
    assert client.get("/api/debates").json()["total"] == 0


def test_a_streamed_body_is_read_no_further_than_the_limit(app: FastAPI) -> None:
    chunk = b" " * 65536
    pulled: list[int] = []

    async def body() -> AsyncIterator[bytes]:
        yield b'{"topic": "Tabs or spaces?"'
        while len(pulled) * len(chunk) < 4 * MAX_JSON_BODY_BYTES:
            pulled.append(len(chunk))
            yield chunk
        yield b"}"

    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            return await http.post("/api/debates", content=body(), headers=JSON)

    with TestClient(app):  # the app's lifespan runs while the body streams
        response = asyncio.run(send())

    assert "larger than" in too_large(response)
    assert sum(pulled) <= MAX_JSON_BODY_BYTES + 2 * len(chunk)


def test_ten_context_files_at_their_limit_fit_even_with_every_character_escaped(
    client: TestClient,
) -> None:
    # Python's json.dumps escapes every non-ASCII character: U+1F600 becomes a surrogate pair
    # of twelve bytes, three times its four in UTF-8.
    text = "\U0001f600" * (MAX_CONTEXT_FILE_BYTES // 4)
    request = {
        "topic": "Tabs or spaces?",
        "context": [{"name": f"notes{i}.txt", "text": text} for i in range(MAX_CONTEXT_FILES)],
    }
    body = json.dumps(request).encode()
    assert len(body) > 2 * MAX_CONTEXT_FILES * MAX_CONTEXT_FILE_BYTES

    response = post(client, body)

    assert response.status_code == 201, response.text[:500]
    assert len(response.json()["context"]) == MAX_CONTEXT_FILES
