"""``/docs`` is the API reference rendered from the app's own OpenAPI schema: every operation
and every schema of ``/openapi.json`` is on it, with types linking to their schemas and limits
in words, and it carries no script."""

from __future__ import annotations

import html

from fastapi.testclient import TestClient


def test_every_operation_and_schema_of_the_openapi_schema_is_in_the_reference(
    client: TestClient,
) -> None:
    schema = client.get("/openapi.json").json()
    page = html.unescape(client.get("/docs").text)
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            assert f'data-operation="{method.upper()} {path}"' in page
            assert operation["summary"] in page
    for name in schema["components"]["schemas"]:
        assert f'id="schema-{name}"' in page
    assert '<a href="#schema-DebateRequest">DebateRequest</a>' in page
    # DebateRequest.rounds: its limits, and the default each format gives when it is left out.
    assert "1 to 8" in page and "the format's own default (duel 4, society 2" in page
    assert "<script" not in page
