"""The pages, the form, the JSON API and the downloads, through the test client; debates run
for real on the SDK adapters against the fake LLM server."""

from __future__ import annotations

import io
import re
import zipfile
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from app import store
from app.config import Settings
from app.db import session_scope
from app.models import utcnow
from app.spec import DebateSpec, Seat
from app.web.render import markdown_html
from tests.fakes.llm_server import FakeLLMServer
from tests.web.conftest import start_duel, wait_for_debate

# Each test runs on SQLite and on PostgreSQL (tests/conftest.py).
pytestmark = pytest.mark.both_databases


def form_fields(**overrides: str) -> dict[str, str]:
    fields = {
        "topic": "Is Rust better than Go for CLIs",
        "format": "duel",
        "topic_type": "general",
        "rounds": "1",
        "seed": "",
        "seat-duel-claude": "anthropic",
        "seat-duel-gemini": "gemini",
    }
    fields.update(overrides)
    return fields


def seed_debates(engine: Engine, count: int, **spec_fields: object) -> list[str]:
    """Debates saved straight to the store (no job runs), oldest first."""
    ids = []
    with session_scope(engine) as session:
        for index in range(count):
            topic = str(spec_fields.get("topic", f"Seeded topic {index}"))
            spec = DebateSpec(
                topic=topic,
                format=str(spec_fields.get("format", "duel")),  # type: ignore[arg-type]
                seats=(Seat("claude", "Claude", "anthropic"), Seat("gemini", "Gemini", "gemini")),
            )
            debate = store.create_debate(session, spec=spec)
            debate.created_at = utcnow() - timedelta(days=400 - index)
            debate.status = str(spec_fields.get("status", "completed"))
            ids.append(debate.id)
    return ids


# -- the form ---------------------------------------------------------------------------


def test_home_shows_the_form_and_unconfigured_providers_disabled_with_reason(
    client: TestClient,
) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert 'name="topic"' in page.text and 'name="context"' in page.text
    local = re.search(r'<option value="local"[^>]*>', page.text)
    assert local is not None and "disabled" in local.group(0)
    assert "not configured: not available in this app" in page.text
    anthropic = re.search(r'<option value="anthropic"[^>]*>', page.text)
    assert anthropic is not None and "disabled" not in anthropic.group(0)
    assert "up to 10 files of 200 kB each; each is cut to its first 300 lines" in page.text


def test_empty_topic_is_refused_beside_the_field_and_what_was_typed_is_kept(
    client: TestClient,
) -> None:
    response = client.post(
        "/debates",
        data=form_fields(topic="   ", rounds="3", history="on", **{"model-duel-gemini": "gem-x"}),
    )
    assert response.status_code == 422
    assert 'id="topic-error"' in response.text
    assert "Enter a topic to debate." in response.text
    assert re.search(r'name="rounds"[^>]*value="3"', response.text)
    assert re.search(r'name="history" checked', response.text)
    assert 'value="gem-x"' in response.text


def test_rounds_out_of_range_is_refused_beside_rounds(client: TestClient) -> None:
    response = client.post("/debates", data=form_fields(rounds="9"))
    assert response.status_code == 422
    assert 'id="rounds-error"' in response.text
    assert 'id="topic-error"' not in response.text
    assert "Is Rust better than Go for CLIs</textarea>" in response.text


def test_binary_context_file_is_refused_beside_the_file_field(client: TestClient) -> None:
    files = {"context": ("image.png", b"\x89PNG\x00\x01", "image/png")}
    response = client.post("/debates", data=form_fields(), files=files)
    assert response.status_code == 422
    assert (
        'id="context-error"' in response.text and "image.png is not a text file." in response.text
    )


def test_form_starts_a_debate_that_runs_in_the_background_and_shows_its_cut_context(
    client: TestClient,
) -> None:
    text = "".join(f"line {n}\n" for n in range(1, 351))
    files = {"context": ("notes.txt", text.encode(), "text/plain")}
    response = client.post("/debates", data=form_fields(), files=files, follow_redirects=False)
    assert response.status_code == 303
    location = response.headers["location"]
    debate_id = location.rsplit("/", 1)[-1]
    assert wait_for_debate(client, debate_id) == "completed"
    page = client.get(location)
    assert "cut to its first 300 of 350 lines" in page.text
    assert 'class="badge badge-completed"' in page.text
    assert "sse-connect" not in page.text  # finished: served whole, no stream
    assert page.text.count('class="turn turn-completed"') == 3


# -- the debate page --------------------------------------------------------------------


def test_model_markdown_is_rendered_without_raw_html(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    fake_llm.rule(contains="", reply="**Bold** <script>alert(1)</script> [x](javascript:alert(1))")
    debate_id = start_duel(client)
    wait_for_debate(client, debate_id)
    page = client.get(f"/debates/{debate_id}").text
    assert "<strong>Bold</strong>" in page
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page
    assert 'href="javascript' not in page


def test_sanitizer_drops_links_with_unsafe_schemes_and_raw_html() -> None:
    html = str(
        markdown_html('<img src=x onerror=alert(1)> [a](javascript:x) [b](https://e.org "t")')
    )
    assert "<img" not in html and "&lt;img" in html
    assert 'href="javascript' not in html
    assert '<a href="https://e.org" title="t" rel="noopener noreferrer nofollow">b</a>' in html


def test_failed_turn_shows_the_providers_own_message_and_a_resume_button(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    fake_llm.script(provider="gemini", fault="http_400", error_message="Model is shy today")
    debate_id = start_duel(client)
    assert wait_for_debate(client, debate_id) == "failed"
    page = client.get(f"/debates/{debate_id}").text
    assert "Model is shy today" in page
    assert f'action="/debates/{debate_id}/resume"' in page
    resumed = client.post(f"/debates/{debate_id}/resume", follow_redirects=False)
    assert resumed.status_code == 303
    assert wait_for_debate(client, debate_id) == "completed"


def test_unknown_debate_is_a_404_page_for_people_and_json_for_the_api(client: TestClient) -> None:
    page = client.get("/debates/nope")
    assert page.status_code == 404 and "text/html" in page.headers["content-type"]
    assert "Not found" in page.text
    api = client.get("/api/debates/nope")
    assert api.status_code == 404 and api.json() == {"detail": "No debate nope."}
    for path in ("/debates/nope/finals.md", "/api/debates/nope/events", "/debates/nope/stream"):
        assert client.get(path).status_code == 404
    assert client.post("/api/debates/nope/cancel").status_code == 404


# -- the JSON API -----------------------------------------------------------------------


def test_api_start_answers_201_with_the_debate_and_runs_it(client: TestClient) -> None:
    response = client.post(
        "/api/debates",
        json={
            "topic": "Monorepo or polyrepo",
            "rounds": 1,
            "seats": {"gemini": {"provider": "openai", "model": "gpt-test"}},
        },
    )
    assert response.status_code == 201
    body = response.json()
    assert body["status"] == "queued" and body["url"] == f"/debates/{body['id']}"
    assert {"role": "gemini", "label": "Gemini", "provider": "openai", "model": "gpt-test"} in body[
        "seats"
    ]
    assert wait_for_debate(client, body["id"]) == "completed"
    detail = client.get(f"/api/debates/{body['id']}").json()
    assert [turn["key"] for turn in detail["turns"]][-1] == "r1.synthesis.claude"
    assert detail["usage"]["total_tokens"] == sum(
        t["input_tokens"] + t["output_tokens"] for t in detail["turns"]
    )


@pytest.mark.parametrize(
    "body",
    [
        {"topic": ""},
        {"topic": "x", "rounds": 9},
        {"topic": "x", "format": "brawl"},
        {"topic": "x", "surprise": True},
        {"topic": "x", "seats": {"referee": {"provider": "openai"}}},
        {"topic": "x", "seats": {"claude": {"provider": "nobody"}}},
    ],
)
def test_api_refuses_an_invalid_request_with_422(
    client: TestClient, body: dict[str, object]
) -> None:
    response = client.post("/api/debates", json=body)
    assert response.status_code == 422, response.text


def test_api_cancel_then_resume(client: TestClient, fake_llm: FakeLLMServer) -> None:
    fake_llm.set_default_token_delay(0.5)
    debate_id = start_duel(client)
    cancelled = client.post(f"/api/debates/{debate_id}/cancel")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert client.post(f"/api/debates/{debate_id}/cancel").status_code == 409
    fake_llm.set_default_token_delay(0.0)
    resumed = client.post(f"/api/debates/{debate_id}/resume")
    assert resumed.status_code == 200 and resumed.json()["status"] == "queued"
    assert wait_for_debate(client, debate_id) == "completed"
    assert client.post(f"/api/debates/{debate_id}/resume").status_code == 409


def test_healthz(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}


def test_openapi_lists_every_route_with_response_schemas(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    paths = schema["paths"]
    for path in (
        "/api/debates",
        "/api/debates/{debate_id}",
        "/api/debates/{debate_id}/events",
        "/api/debates/{debate_id}/cancel",
        "/api/debates/{debate_id}/resume",
        "/healthz",
        "/",
        "/debates",
        "/debates/{debate_id}",
        "/debates/{debate_id}/finals.md",
    ):
        assert path in paths, path
    created = paths["/api/debates"]["post"]["responses"]["201"]["content"]["application/json"]
    assert created["schema"]["$ref"].endswith("/DebateOut")
    assert "DebateRequest" in schema["components"]["schemas"]
    assert "api_key" not in str(schema).lower()


# -- history ----------------------------------------------------------------------------


def test_history_is_newest_first_and_paginates(client: TestClient) -> None:
    engine = client.app.state.engine  # type: ignore[attr-defined]
    ids = seed_debates(engine, 25)
    first = client.get("/debates")
    assert "25 debates · page 1 of 2" in first.text
    assert first.text.index(f"/debates/{ids[-1]}") < first.text.index(f"/debates/{ids[-2]}")
    assert f'/debates/{ids[0]}"' not in first.text
    second = client.get("/debates?page=2")
    assert f'/debates/{ids[0]}"' in second.text and 'rel="prev"' in second.text
    api = client.get("/api/debates", params={"page": 2}).json()
    assert api["total"] == 25 and api["pages"] == 2 and len(api["items"]) == 5
    assert api["items"][-1]["id"] == ids[0]


def test_history_searches_topics_and_filters_by_format_and_status(client: TestClient) -> None:
    engine = client.app.state.engine  # type: ignore[attr-defined]
    [wanted] = seed_debates(engine, 1, topic="Kubernetes for a team of three", status="failed")
    seed_debates(engine, 2, topic="Kubernetes at scale", status="completed")
    seed_debates(engine, 1, topic="Unrelated question", status="failed")
    found = client.get("/debates", params={"q": "kubernetes", "status": "failed"})
    assert "1 debate" in found.text and f"/debates/{wanted}" in found.text
    api = client.get("/api/debates", params={"q": "Kubernetes", "format": "duel"}).json()
    assert api["total"] == 3
    assert client.get("/api/debates", params={"format": "panel"}).json()["total"] == 0
    assert client.get("/api/debates", params={"status": "bogus"}).status_code == 422


# -- downloads --------------------------------------------------------------------------


def _filename(response: object) -> str:
    disposition = response.headers["content-disposition"]  # type: ignore[attr-defined]
    match = re.fullmatch(r'attachment; filename="([^"]+)"', disposition)
    assert match, disposition
    return match.group(1)


def test_duel_downloads_are_named_as_the_files_are(client: TestClient) -> None:
    debate_id = start_duel(client, topic="Plan the v2 API", topic_type="plan")
    assert wait_for_debate(client, debate_id) == "completed"
    finals = client.get(f"/debates/{debate_id}/finals.md")
    assert _filename(finals) == "plan-the-v2-api.md"
    assert finals.text.startswith("# Argue: Plan the v2 API\n**Type**: plan")
    transcript = client.get(f"/debates/{debate_id}/transcript.md")
    assert re.fullmatch(r"plan-the-v2-api-plan-\d{8}T\d{6}\.md", _filename(transcript))
    assert transcript.text.startswith("# Argue transcript: Plan the v2 API\n")
    assert "\n### Round 1 · opening · Claude (" in transcript.text
    assert "\n### Round 1 · opening · Gemini (" in transcript.text
    plan = client.get(f"/debates/{debate_id}/plan.md")
    assert plan.status_code == 200 and _filename(plan).endswith(".md")
    assert plan.text.startswith("# Argue plan: Plan the v2 API\n")
    assert f"- **From debate**: {debate_id} (duel · plan · " in plan.text
    assert client.get(f"/debates/{debate_id}/workspace.zip").status_code == 404
    page = client.get(f"/debates/{debate_id}").text
    assert f'href="/debates/{debate_id}/plan.md"' in page


def test_panel_workspace_downloads_as_a_zip_of_three_folders(client: TestClient) -> None:
    response = client.post("/api/debates", json={"topic": "Remote work", "format": "panel"})
    debate_id = response.json()["id"]
    assert wait_for_debate(client, debate_id) == "completed"
    archive = client.get(f"/debates/{debate_id}/workspace.zip")
    assert re.fullmatch(rf"debate_\d{{8}}_\d{{6}}_{debate_id}\.zip", _filename(archive))
    names = zipfile.ZipFile(io.BytesIO(archive.content)).namelist()
    assert any("/1_claims/" in n for n in names) and any(
        "3_report/final_report.md" in n for n in names
    )


def test_reports_of_an_unfinished_debate_are_refused(client: TestClient) -> None:
    [debate_id] = seed_debates(client.app.state.engine, 1, status="running")  # type: ignore[attr-defined]
    assert client.get(f"/debates/{debate_id}/finals.md").status_code == 409
    assert client.get(f"/debates/{debate_id}/transcript.md").status_code == 200


def test_a_seat_on_its_default_model_shows_the_model_it_used(
    client: TestClient, settings: Settings
) -> None:
    debate_id = start_duel(client, seats={"claude": {"provider": "openai"}})
    wait_for_debate(client, debate_id)
    page = client.get(f"/debates/{debate_id}").text
    assert f"openai · {settings.openai_model}</code>" in page
    assert "default model" not in page
