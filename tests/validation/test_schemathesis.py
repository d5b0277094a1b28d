"""Schemathesis over the OpenAPI schema, in process against the ASGI app: generated valid and
invalid requests for every operation, and none may answer 5xx.

The app is the real one (real SDK adapters) pointed at the fake LLM server, so debates that
POST /api/debates starts run in the background on fake replies; nothing leaves 127.0.0.1.
The streams (``/api/debates/{id}/events``, ``/debates/{id}/stream``) are included: for a
debate they do not know they are a 404 at once, and schemathesis cuts any event stream short
after a few events, so nothing waits on a running debate.

Schemathesis's own pytest plugin is not used: its lazy fixture loading reaches into pytest's
private node attributes and broke with pytest 9.2. Each operation's Hypothesis strategies
(public API) drive a plain parametrized test instead, one test per operation.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.python import asgi as schemathesis_asgi

from app.config import Settings
from app.web.app import create_app
from tests.conftest import fake_settings
from tests.fakes.llm_server import FakeLLMServer
from tests.web.conftest import http_providers

pytestmark = pytest.mark.timeout(120)

MAX_EXAMPLES = 40
HTTP_METHODS = frozenset({"get", "post", "put", "patch", "delete"})


def schema_operations() -> list[tuple[str, str]]:
    """Every (method, path) the schema documents, read from an app that is never started."""
    with tempfile.TemporaryDirectory() as home:
        paths = create_app(Settings(home=Path(home))).openapi()["paths"]
    return [
        (method.upper(), path)
        for path, item in sorted(paths.items())
        for method in item
        if method in HTTP_METHODS
    ]


@pytest.fixture
def api_schema(fake_llm: FakeLLMServer, tmp_path: Path) -> Iterator[Any]:
    # Few debates run at once, and fast: the fuzzer starts many.
    app_settings = fake_settings(fake_llm, tmp_path / "fuzz-home", max_concurrent_debates=2)
    app = create_app(app_settings, providers=http_providers(app_settings))
    yield schemathesis.openapi.from_asgi("/openapi.json", app)
    # Stops the app's lifespan (its jobs) before the fake server and the data folder go.
    schemathesis_asgi.shutdown_lifespans()


def test_the_schema_documents_the_debate_api() -> None:
    operations = schema_operations()
    assert ("POST", "/api/debates") in operations
    assert ("GET", "/api/debates/{debate_id}/events") in operations


@pytest.mark.parametrize(("method", "path"), schema_operations())
def test_no_request_makes_the_app_answer_a_server_error(
    api_schema: Any, method: str, path: str
) -> None:
    operation = api_schema[path][method]
    calls: list[int] = []
    cases = st.one_of(
        operation.as_strategy(GenerationMode.POSITIVE),
        operation.as_strategy(GenerationMode.NEGATIVE),
    )

    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=cases)
    def no_server_error(case: Any) -> None:
        case.call_and_validate(checks=[not_a_server_error])
        calls.append(1)

    no_server_error()
    assert calls, f"no request was generated for {method} {path}"
