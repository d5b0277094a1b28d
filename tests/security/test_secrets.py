"""The provider keys and the access token never reach a page, a stream, a download, the API,
a log line, an error message, or a file in the data folder, though the providers really do
receive the keys (so a leak would be caught: the test's sentinels are live credentials).

Debates run through the real app served by uvicorn (its access log included), with the SDK
adapters talking to the fake LLM server: one that completes, one whose provider refuses the
key (401), and a panel (a zip download)."""

from __future__ import annotations

import io
import logging
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn

from app.cli.main import main
from app.config import Settings
from app.web.app import create_app
from app.web.security import Access
from tests.conftest import fake_settings
from tests.fakes.llm_server import FakeLLMServer
from tests.web.conftest import LiveServer, http_providers, stop
from tests.web.sse import parse

KEYS = {
    "ANTHROPIC_API_KEY": "sk-ant-api03-SENTINEL-anthropic-6f1d0c",
    "GEMINI_API_KEY": "AIzaSy-SENTINEL-gemini-9b7e24",
    "OPENAI_API_KEY": "sk-proj-SENTINEL-openai-c3a58f",
}
TOKEN = "argue-SENTINEL-token-51e0b9d7"
SENTINELS = (*KEYS.values(), TOKEN)


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture
def logs() -> Iterator[Collect]:
    """Every log record at DEBUG, from every logger, including those that do not propagate
    (uvicorn's access log)."""
    handler = Collect()
    root = logging.getLogger()
    old_level = root.level
    root.setLevel(logging.DEBUG)
    loggers = [root] + [
        logger
        for logger in logging.root.manager.loggerDict.values()
        if isinstance(logger, logging.Logger) and not logger.propagate
    ]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        yield handler
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
        root.setLevel(old_level)


@pytest.fixture
def secret_settings(fake_llm: FakeLLMServer, tmp_path: Path) -> Settings:
    return fake_settings(fake_llm, tmp_path / "argue-home", auth_token=TOKEN, **KEYS)


@pytest.fixture
def live(secret_settings: Settings) -> Iterator[LiveServer]:
    app = create_app(secret_settings, providers=http_providers(secret_settings))
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="info", access_log=True)
    server = uvicorn.Server(config)
    import threading

    thread = threading.Thread(target=server.run, daemon=True, name="argue-secrets")
    thread.start()
    while not server.started:  # startup is a few milliseconds; nothing to await across threads
        assert thread.is_alive(), "the app did not start"
        thread.join(0.02)
    live = LiveServer(app, server, thread)
    try:
        yield live
    finally:
        stop(live)


def found_in(text: str) -> list[str]:
    return [secret for secret in SENTINELS if secret in text]


def run_to_end(client: httpx.Client, body: dict[str, object]) -> tuple[str, str]:
    """Start a debate and read its event stream, which ends when the debate does."""
    created = client.post("/api/debates", json=body)
    assert created.status_code == 201, created.text
    debate_id: str = created.json()["id"]
    events = client.get(f"/api/debates/{debate_id}/events", timeout=30)
    messages = parse(events.text)
    assert messages and messages[-1].event == "end", events.text[-500:]
    return debate_id, events.text


def test_no_key_or_token_reaches_a_page_a_log_a_message_or_a_file(
    live: LiveServer,
    logs: Collect,
    fake_llm: FakeLLMServer,
    secret_settings: Settings,
    capsys: pytest.CaptureFixture[str],
) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    seen: dict[str, str] = {}  # what was read -> its text
    with httpx.Client(base_url=live.url, headers=auth, timeout=10) as client:
        ok_id, seen["events ok"] = run_to_end(client, {"topic": "Tabs or spaces", "rounds": 1})
        fake_llm.script(provider="openai", fault="http_401")  # auth is not retried
        failed_id, seen["events failed"] = run_to_end(
            client,
            {"topic": "Vim or Emacs", "rounds": 1, "seats": {"claude": {"provider": "openai"}}},
        )
        assert fake_llm.pending == 0
        panel_id, seen["events panel"] = run_to_end(
            client, {"topic": "Remote work", "format": "panel"}
        )
        failed = client.get(f"/api/debates/{failed_id}").json()
        assert failed["status"] == "failed"
        assert any(t["error_kind"] == "auth" for t in failed["turns"]), failed["turns"]

        paths = ["/", "/debates", "/debates?q=Vim", "/api/debates", "/openapi.json", "/docs"]
        paths += ["/healthz", "/login", "/no-such-page", "/api/debates/nope"]
        for debate_id in (ok_id, failed_id, panel_id):
            paths += [
                f"/debates/{debate_id}",
                f"/api/debates/{debate_id}",
                f"/debates/{debate_id}/stream",
                f"/api/debates/{debate_id}/events",
                f"/debates/{debate_id}/transcript.md",
                f"/debates/{debate_id}/finals.md",
            ]
        paths.append(f"/debates/{panel_id}/workspace.zip")
        for path in paths:
            response = client.get(path)
            seen[f"GET {path}"] = _text(response.content) + str(response.headers)
        assert client.get(f"/debates/{panel_id}/workspace.zip").status_code == 200
        # Refusals and errors too: a wrong token, a cross-site post, an invalid request.
        for name, response in {
            "wrong token": client.get("/api/debates", headers={"Authorization": "Bearer x"}),
            "no token": httpx.get(f"{live.url}/", headers={"Accept": "text/html"}),
            "cross-site": client.post(
                "/api/debates", json={}, headers={"Origin": "https://evil.example", **auth}
            ),
            "invalid": client.post("/api/debates", json={"topic": ""}),
            "resume": client.post(f"/api/debates/{ok_id}/resume"),
        }.items():
            seen[name] = response.text + str(response.headers)

    files = sorted(p for p in secret_settings.data_dir.rglob("*") if p.is_file())
    assert any(p.name == "argue.db" for p in files)
    for file in files:
        seen[f"file {file.name}"] = _text(file.read_bytes())
    seen["logs"] = "\n".join(logs.lines)
    captured = capsys.readouterr()
    seen["stdout+stderr"] = captured.out + captured.err

    assert any("GET /api/debates/" in line for line in logs.lines), "no access log captured"
    leaks = {where: found_in(text) for where, text in seen.items() if found_in(text)}
    assert leaks == {}
    # The keys were live: each provider received its own.
    assert _received(fake_llm, "anthropic", KEYS["ANTHROPIC_API_KEY"])
    assert _received(fake_llm, "gemini", KEYS["GEMINI_API_KEY"])
    assert _received(fake_llm, "openai", KEYS["OPENAI_API_KEY"])


def _received(fake: FakeLLMServer, provider: str, key: str) -> bool:
    """Every request the provider got carried the key, in whichever header its SDK uses."""
    requests = fake.requests_for(provider)
    assert requests, f"nothing reached {provider}"
    return all(any(key in value for value in r.headers.values()) for r in requests)


def _text(data: bytes) -> str:
    """Bytes as text; a zip's members unpacked, since compression would hide a leak."""
    if data.startswith(b"PK"):
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return "\n".join(_text(archive.read(name)) for name in archive.namelist())
    return data.decode("utf-8", errors="replace")


def test_argue_models_shows_no_key(
    fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_llm.anthropic_base_url)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_llm.gemini_base_url)
    monkeypatch.setenv("ARGUE_AUTH_TOKEN", TOKEN)
    fake_llm.set_models("openai", ["gpt-5.5"])
    assert main(["models"]) == 0
    assert main(["models", "--json"]) == 0
    captured = capsys.readouterr()
    assert "gpt-5.5" in captured.out
    assert found_in(captured.out + captured.err) == []
    assert _received(fake_llm, "openai", KEYS["OPENAI_API_KEY"])


def test_settings_and_access_rules_do_not_print_their_secrets(secret_settings: Settings) -> None:
    access = Access.from_settings(secret_settings)
    for text in (repr(secret_settings), str(secret_settings), repr(access)):
        assert found_in(text) == []
    with pytest.raises(ValueError) as refused:
        Settings(**KEYS, auth_token=TOKEN, auth_user="ada")  # type: ignore[arg-type]
    assert found_in(str(refused.value)) == []


def test_a_provider_error_that_echoes_the_key_is_shown_redacted(
    secret_settings: Settings, fake_llm: FakeLLMServer
) -> None:
    from tests.security.conftest import running
    from tests.web.conftest import wait_for_debate

    echoed = f"Incorrect API key provided: {KEYS['OPENAI_API_KEY']}"
    fake_llm.script(provider="openai", fault="http_401", error_message=echoed)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with running(secret_settings) as client:
        body = {"topic": "Vim", "rounds": 1, "seats": {"claude": {"provider": "openai"}}}
        debate_id = client.post("/api/debates", json=body, headers=auth).json()["id"]
        assert wait_for_debate(client, debate_id) == "failed"
        shown = client.get(f"/api/debates/{debate_id}", headers=auth).text
        shown += client.get(f"/debates/{debate_id}", headers=auth).text
    assert "Incorrect API key provided" in shown
    assert found_in(shown) == []
