"""The form refuses bad input beside the field it belongs to, keeps what was typed (seat
choices too), and states its limits."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from app.debates import MAX_CONTEXT_FILE_BYTES, MAX_CONTEXT_FILES, MAX_TOPIC_CHARS


def form_fields(**overrides: str) -> dict[str, str]:
    fields = {
        "topic": "Is Rust better than Go for CLIs",
        "format": "duel",
        "topic_type": "general",
        "rounds": "2",
        "seed": "",
        "seat-duel-claude": "openai",
        "seat-duel-gemini": "anthropic",
        "model-duel-claude": "gpt-test",
    }
    fields.update(overrides)
    return fields


def error_beside(page: str, field: str) -> str:
    found = re.search(rf'<p class="field-error" id="{re.escape(field)}-error"[^>]*>(.*?)</p>', page)
    assert found, f"no error beside {field}"
    return found.group(1)


def assert_kept(page: str) -> None:
    """The seat choices and model name that were sent are still chosen."""
    assert re.search(r'<option value="openai" selected', page.split('id="seat-duel-claude"')[1])
    assert re.search(r'<option value="anthropic" selected', page.split('id="seat-duel-gemini"')[1])
    assert 'value="gpt-test"' in page


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"topic": ""}, "topic", "Enter a topic to debate."),
        ({"topic": " \r\n\t "}, "topic", "Enter a topic to debate."),
        ({"topic": "x" * (MAX_TOPIC_CHARS + 5)}, "topic",
         f"The topic is at most {MAX_TOPIC_CHARS:,} characters; this one has 2,005."),
        ({"topic": "nul \x00 here"}, "topic", "control character (U+0000)"),
        ({"topic": "bell \x07"}, "topic", "control character (U+0007)"),
        ({"rounds": "abc"}, "rounds", "Rounds must be a whole number from 1 to 8."),
        ({"rounds": "0"}, "rounds", "Rounds must be a whole number from 1 to 8."),
        ({"rounds": "9"}, "rounds", "Rounds must be a whole number from 1 to 8."),
        ({"rounds": "2.5"}, "rounds", "Rounds must be a whole number from 1 to 8."),
        ({"rounds": "1e9"}, "rounds", "Rounds must be a whole number from 1 to 8."),
        ({"format": "brawl"}, "format", "Choose one of: duel, panel, society."),
        ({"topic_type": "poem"}, "topic_type", "Choose one of: general, plan, bug, tech."),
        ({"seed": "grep"}, "seed", "Choose one of: find_bug, plan, audit."),
        ({"seat-duel-gemini": "nobody"}, "seat-duel-gemini", "unknown provider"),
        ({"model-duel-gemini": "two words"}, "model-duel-gemini", "no spaces"),
        ({"model-duel-gemini": "m" * 129}, "model-duel-gemini", "at most 128 characters"),
    ],
    ids=lambda value: str(value)[:30],
)  # fmt: skip
def test_a_bad_field_is_refused_beside_it_and_the_rest_is_kept(
    client: TestClient, overrides: dict[str, str], field: str, message: str
) -> None:
    response = client.post("/debates", data=form_fields(**overrides))

    assert response.status_code == 422
    assert message in error_beside(response.text, field)
    # The format is a pair of radios (no element has its id): the first carries the mark.
    control = 'name="format"' if field == "format" else f'id="{re.escape(field)}"'
    assert re.search(rf'{control}[^>]*aria-invalid="true"', response.text)
    if field != "format":
        assert_kept(response.text)


def test_every_bad_field_is_reported_at_once(client: TestClient) -> None:
    fields = form_fields(topic="", rounds="99", topic_type="poem", **{"model-duel-claude": "a b"})
    page = client.post("/debates", data=fields).text
    for field in ("topic", "rounds", "topic_type", "model-duel-claude"):
        assert error_beside(page, field).strip(), f"an empty error beside {field}"


def test_what_was_typed_comes_back_escaped(client: TestClient) -> None:
    topic = "</textarea><script>alert(1)</script>"
    page = client.post("/debates", data=form_fields(topic=topic, rounds="99")).text
    assert "&lt;/textarea&gt;&lt;script&gt;alert(1)&lt;/script&gt;</textarea>" in page
    assert "<script>alert" not in page


def test_a_panels_seat_choices_are_kept_too(client: TestClient) -> None:
    fields = form_fields(format="panel", topic="", **{"seat-panel-judge": "gemini"})
    page = client.post("/debates", data=fields).text
    assert re.search(r'<option value="gemini" selected', page.split('id="seat-panel-judge"')[1])
    assert re.search(r'name="format" value="panel"[^>]*checked', page)


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ([("context", ("photo.png", b"\x89PNG\r\n\x00\x00", "image/png"))],
         "photo.png is not a text file."),
        ([("context", ("latin1.txt", "café".encode("latin-1"), "text/plain"))],
         "latin1.txt is not a text file (it is not UTF-8)."),
        ([("context", ("big.txt", b"a" * (MAX_CONTEXT_FILE_BYTES + 1), "text/plain"))],
         "big.txt is larger than 200 kB."),
        ([("context", (f"f{i}.txt", b"text", "text/plain")) for i in range(MAX_CONTEXT_FILES + 1)],
         f"At most {MAX_CONTEXT_FILES} files; {MAX_CONTEXT_FILES + 1} were chosen."),
        ([("context", ("n" * 300 + ".txt", b"text", "text/plain"))],
         "A file name is longer than 255 characters."),
    ],
    ids=["binary", "not-utf8", "too-big", "too-many", "long-name"],
)  # fmt: skip
def test_a_bad_context_file_is_refused_beside_the_file_field(
    client: TestClient, files: list[tuple[str, tuple[str, bytes, str]]], message: str
) -> None:
    response = client.post("/debates", data=form_fields(), files=files)
    assert response.status_code == 422
    assert error_beside(response.text, "context") == message
    assert_kept(response.text)


def test_a_text_file_with_a_byte_order_mark_is_accepted(client: TestClient) -> None:
    files = [("context", ("notes.md", "\ufeffline one\nline two\n".encode(), "text/markdown"))]
    response = client.post("/debates", data=form_fields(), files=files, follow_redirects=False)
    assert response.status_code == 303
    debate = client.get(response.headers["location"].replace("/debates/", "/api/debates/")).json()
    assert debate["context"] == [{"path": "notes.md", "total_lines": 2, "truncated": False}]


def test_a_body_the_form_cannot_parse_is_a_400_page(client: TestClient) -> None:
    response = client.post(
        "/debates",
        content=b"--zz\r\nContent-Disposition: garbage\r\n\r\n",
        headers={"content-type": "multipart/form-data; boundary=zz"},
    )
    assert response.status_code == 400
    assert "text/html" in response.headers["content-type"]


@pytest.mark.parametrize(
    ("content", "content_type"),
    [(b"{}", "application/json"), (b"topic=%ff%fe%00", "application/x-www-form-urlencoded")],
)
def test_a_wrong_or_odd_body_comes_back_as_the_form_with_errors(
    client: TestClient, content: bytes, content_type: str
) -> None:
    response = client.post("/debates", content=content, headers={"content-type": content_type})
    assert response.status_code == 422
    error_beside(response.text, "topic")


def test_the_form_states_its_limits(client: TestClient) -> None:
    page = client.get("/").text
    assert "Topic <small>(up to 2,000 characters)</small>" in page
    assert 'data-limit="2000"' in page  # counted as one types, never cut (no maxlength)
    assert "(duel; society: update rounds, 1–8)" in page and 'min="1" max="8"' in page
    assert "up to 10 files of 200 kB each; each is cut to its first 300 lines" in page
    assert 'maxlength="128"' in page
