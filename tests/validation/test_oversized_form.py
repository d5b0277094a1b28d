"""A form over its limits (a topic over a megabyte, too many files, too many fields) comes
back as the form, with the error beside the field it belongs to and what was typed kept, never
as a generic error page."""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.debates import MAX_CONTEXT_FILES, MAX_TOPIC_CHARS
from app.web.uploads import KEPT_FIELD_CHARS, MAX_FORM_BYTES, MAX_FORM_FIELDS
from tests.validation.test_form_input import assert_kept, error_beside, form_fields
from tests.validation.test_upload_limits import post_streamed_form

# Sent with the fields, it makes the test client post multipart/form-data (as a browser
# does); without it the form goes urlencoded.
A_FILE = [("context", ("notes.txt", b"a note\n", "text/plain"))]
ENCODINGS = pytest.mark.parametrize("files", [None, A_FILE], ids=["urlencoded", "multipart"])


def kept_topic(page: str) -> str:
    found = re.search(r'<textarea id="topic"[^>]*>(.*?)</textarea>', page, flags=re.S)
    assert found, "no topic field"
    return html.unescape(found.group(1))


@ENCODINGS
def test_a_topic_over_a_megabyte_is_refused_beside_it_and_the_rest_is_kept(
    client: TestClient, files: list[tuple[str, tuple[str, bytes, str]]] | None
) -> None:
    topic = "Tabs or spaces? " + "x" * 1_500_000
    response = client.post("/debates", data=form_fields(topic=topic), files=files)

    assert response.status_code == 422
    assert error_beside(response.text, "topic") == (
        f"The topic is at most {MAX_TOPIC_CHARS:,} characters; this one has {len(topic):,}."
    )
    kept = kept_topic(response.text)
    assert kept == topic[:KEPT_FIELD_CHARS]
    assert_kept(response.text)


def test_a_topic_larger_than_the_whole_form_may_be_is_cut_and_says_so(app: FastAPI) -> None:
    # Streamed with no Content-Length (one over the limit is refused before reading).
    topic = "y" * (MAX_FORM_BYTES + 1_000_000)
    sent: list[int] = []

    async def body() -> AsyncIterator[bytes]:
        yield b"format=duel&topic="
        for start in range(0, len(topic), 65536):
            sent.append(65536)
            yield topic[start : start + 65536].encode()

    with TestClient(app):  # the app's lifespan runs while the form is posted
        response = post_streamed_form(app, body(), "application/x-www-form-urlencoded")

    assert response.status_code == 413
    message = error_beside(response.text, "topic")
    assert message.startswith(
        f"The topic is at most {MAX_TOPIC_CHARS:,} characters; this one has more than "
    )
    assert kept_topic(response.text) == topic[:KEPT_FIELD_CHARS]
    assert sum(sent) <= MAX_FORM_BYTES + 65536


@pytest.mark.parametrize("count", [MAX_CONTEXT_FILES + 1, 60])
def test_too_many_files_are_refused_beside_the_file_field_and_the_rest_is_kept(
    client: TestClient, count: int
) -> None:
    files = [("context", (f"f{i}.txt", b"text", "text/plain")) for i in range(count)]
    response = client.post("/debates", data=form_fields(), files=files)

    assert response.status_code == 422
    assert error_beside(response.text, "context") == (
        f"At most {MAX_CONTEXT_FILES} files; {count} were chosen."
    )
    assert_kept(response.text)
    assert kept_topic(response.text) == form_fields()["topic"]


@ENCODINGS
def test_too_many_fields_are_refused_at_the_top_of_the_form_and_the_rest_is_kept(
    client: TestClient, files: list[tuple[str, tuple[str, bytes, str]]] | None
) -> None:
    fields = form_fields() | {f"extra-{i}": "x" for i in range(1_500)}
    response = client.post("/debates", data=fields, files=files)

    assert response.status_code == 422
    assert error_beside(response.text, "form") == (
        f"The form sent {len(fields):,} fields; at most {MAX_FORM_FIELDS} are read."
    )
    assert_kept(response.text)
    assert kept_topic(response.text) == form_fields()["topic"]
