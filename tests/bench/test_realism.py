"""The benchmark's fake providers and viewers cost the app no less than real ones: text
chunks carry every field the real APIs send (which the SDKs parse), and viewers watch the
page's stream, the one a browser renders, reading the stamps out of its HTML."""

from __future__ import annotations

import json

from google.genai import types as genai_types
from openai.types.chat import ChatCompletionChunk

from bench.clients import STREAM_PATHS
from bench.fake_providers import _full_shape, stamps_in
from tests.fakes import anthropic_wire, gemini_wire, openai_wire


def _json_of(frame: bytes) -> dict[str, object]:
    data = frame.decode().split("data: ", 1)[1].strip()
    payload: dict[str, object] = json.loads(data)
    return payload


def test_gemini_chunks_repeat_usage_and_ids_as_the_real_api_does() -> None:
    frame = _full_shape("gemini", gemini_wire.stream_token("gemini-x", "word "))
    assert frame.endswith(b"\r\n\r\n")
    chunk = genai_types.GenerateContentResponse.model_validate(_json_of(frame))
    assert chunk.text == "word "
    assert chunk.usage_metadata is not None and chunk.usage_metadata.prompt_token_count == 412
    assert chunk.response_id


def test_openai_chunks_carry_the_service_tier_usage_and_obfuscation_fields() -> None:
    frame = _full_shape("openai", openai_wire.stream_token("gpt-x", "word "))
    assert frame.endswith(b"\n\n") and not frame.endswith(b"\r\n\r\n")
    payload = _json_of(frame)
    assert {"service_tier", "usage", "obfuscation"} <= payload.keys()
    chunk = ChatCompletionChunk.model_validate(payload)
    assert chunk.choices[0].delta.content == "word "


def test_anthropic_text_deltas_are_already_the_real_shape() -> None:
    frame = anthropic_wire.stream_token("claude-x", "word ")
    assert _full_shape("anthropic", frame) == frame


def test_viewers_watch_the_page_stream_and_read_stamps_from_its_html() -> None:
    assert STREAM_PATHS["page"] == "/debates/{id}/stream"
    html = '<div hx-swap-oob="beforeend:#x-r1">t12.500000s t12.520000s </div>'
    assert stamps_in(html) == [12.5, 12.52]
    assert stamps_in('<p>t3.250000s</p><template id="s-t1">t3.250000s') == [3.25, 3.25]
    assert stamps_in("at12.5s t12.5sx 12.5") == []  # only whole words
