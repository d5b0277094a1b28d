"""The fake LLM server itself: scripting, rules, recording, timing, and its process mode."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from tests.fakes import FakeLLMServer, closed_port_url
from tests.fakes.llm_server import split_tokens

REPO = Path(__file__).resolve().parents[2]


def _openai_chat(url: str, text: str, *, stream: bool = False) -> httpx.Response:
    body = {"model": "gpt-test", "messages": [{"role": "user", "content": text}], "stream": stream}
    return httpx.post(f"{url}/v1/chat/completions", json=body, timeout=5)


def _openai_stream_text(response: httpx.Response) -> str:
    text = ""
    for line in response.text.splitlines():
        if line.startswith("data: {"):
            for choice in json.loads(line[6:])["choices"]:
                text += choice["delta"].get("content") or ""
    return text


def test_split_tokens_join_back_to_the_exact_text() -> None:
    text = "  Hello,  wide\nworld! "
    assert "".join(split_tokens(text)) == text
    assert len(split_tokens(text)) == 3


def test_scripted_replies_are_used_in_order_then_the_default(fake_llm: FakeLLMServer) -> None:
    fake_llm.script(provider="openai", reply="first")
    fake_llm.script(reply="second")  # any provider
    replies = [_openai_chat(fake_llm.url, "tell me about owls").json() for _ in range(3)]
    texts = [r["choices"][0]["message"]["content"] for r in replies]
    assert texts[:2] == ["first", "second"]
    assert texts[2] == "Fake openai reply about: tell me about owls."
    assert fake_llm.pending == 0


def test_a_rule_replies_whenever_its_substring_appears(fake_llm: FakeLLMServer) -> None:
    fake_llm.rule(contains="CONVERGED?", reply="VERDICT: CONVERGED")
    for _ in range(2):
        body = _openai_chat(fake_llm.url, "Have we CONVERGED? answer").json()
        assert body["choices"][0]["message"]["content"] == "VERDICT: CONVERGED"
    other = _openai_chat(fake_llm.url, "something else").json()
    assert other["choices"][0]["message"]["content"].startswith("Fake openai reply")


def test_streamed_reply_arrives_token_by_token_and_ends_with_done(fake_llm: FakeLLMServer) -> None:
    fake_llm.script(provider="openai", tokens=["Hel", "lo", " you"])
    response = _openai_chat(fake_llm.url, "hi", stream=True)
    assert response.headers["content-type"].startswith("text/event-stream")
    assert _openai_stream_text(response) == "Hello you"
    assert response.text.rstrip().endswith("data: [DONE]")


def test_every_request_is_recorded_with_body_headers_and_times(fake_llm: FakeLLMServer) -> None:
    _openai_chat(fake_llm.url, "record me")
    assert fake_llm.wait_for_requests(1, finished=True)  # the handler ends just after replying
    (request,) = fake_llm.requests
    assert request.provider == "openai"
    assert request.path == "/v1/chat/completions"
    assert request.body["messages"][0]["content"] == "record me"
    assert request.model == "gpt-test"
    assert "content-type" in request.headers
    assert request.ended is not None and request.ended >= request.started


def test_http_fault_answers_in_the_providers_error_shape(fake_llm: FakeLLMServer) -> None:
    fake_llm.script(provider="gemini", fault="http_429", retry_after=3)
    response = httpx.post(
        f"{fake_llm.url}/v1beta/models/gemini-test:generateContent",
        json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
        timeout=5,
    )
    assert response.status_code == 429
    assert response.headers["retry-after"] == "3"
    assert response.json()["error"]["status"] == "RESOURCE_EXHAUSTED"


def test_timeline_shows_requests_that_overlapped(fake_llm: FakeLLMServer) -> None:
    fake_llm.script(provider="openai", reply="slow", first_token_delay=0.3, times=3)
    threads = [threading.Thread(target=_openai_chat, args=(fake_llm.url, "x")) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert fake_llm.wait_for_requests(3, finished=True)
    assert fake_llm.max_concurrency() == 3


def test_unknown_fault_is_refused_when_scripted(fake_llm: FakeLLMServer) -> None:
    with pytest.raises(ValueError, match="unknown fault"):
        fake_llm.script(reply="x", fault="explode")


def test_closed_port_url_refuses_connections() -> None:
    with pytest.raises(httpx.ConnectError):
        httpx.get(closed_port_url(), timeout=2)


def test_runs_as_a_process_scriptable_over_http() -> None:
    port = int(closed_port_url().rsplit(":", 1)[1])
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.llm_server", "--port", str(port)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert "fake LLM server on" in process.stdout.readline()  # printed once it listens
        url = f"http://127.0.0.1:{port}"
        httpx.post(f"{url}/_fake/script", json={"provider": "openai", "reply": "scripted"})
        reply = _openai_chat(url, "hi").json()["choices"][0]["message"]["content"]
        recorded = httpx.get(f"{url}/_fake/requests").json()
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert reply == "scripted"
    assert [r["provider"] for r in recorded] == ["openai"]
