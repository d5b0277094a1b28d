"""OpenAI's Chat Completions API on the wire: data-only SSE chunks ending ``[DONE]``.

Pure functions of plain values; ``llm_server`` decides what to send and when.
"""

from __future__ import annotations

import json
from typing import Any

from tests.fakes.wire import ParsedRequest, block_text

NAME = "openai"

ERRORS = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None),
    503: ("server_error", None),
}


def parse(body: dict[str, Any], path_model: str | None, action: str) -> ParsedRequest:
    del path_model, action
    system: list[str] = []
    messages: list[tuple[str, str]] = []
    for m in body.get("messages", []):
        role, text = str(m.get("role")), block_text(m.get("content"))
        if role in ("system", "developer"):
            system.append(text)
        else:
            messages.append((role, text))
    options = body.get("stream_options") or {}
    return ParsedRequest(
        provider=NAME,
        model=str(body.get("model", "")),
        stream=bool(body.get("stream")),
        system="\n".join(system),
        messages=tuple(messages),
        include_usage=bool(options.get("include_usage")),
    )


def _chunk(model: str, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": model,
        "system_fingerprint": None,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
    }


def _data(obj: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(obj)}\n\n".encode()


def stream_start(model: str, input_tokens: int) -> list[bytes]:
    del input_tokens
    return [_data(_chunk(model, {"role": "assistant", "content": ""}))]


def stream_token(model: str, text: str) -> bytes:
    return _data(_chunk(model, {"content": text}))


def _usage(input_tokens: int, output_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": input_tokens,
        "completion_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
    }


def stream_end(
    model: str, input_tokens: int, output_tokens: int, stop_reason: str, usage: bool
) -> list[bytes]:
    frames = [_data(_chunk(model, {}, stop_reason))]
    if usage:
        final = _chunk(model, {})
        final["choices"] = []
        final["usage"] = _usage(input_tokens, output_tokens)
        frames.append(_data(final))
    frames.append(b"data: [DONE]\n\n")
    return frames


def stream_error(status: int, message: str) -> bytes:
    return _data(error_body(status, message))


def malformed() -> bytes:
    return b'data: {"id": "chatcmpl-fake", "choices": [\n\n'


def unexpected_event(model: str) -> bytes:
    """Well-formed JSON of an unusual shape: a choice without its ``delta``."""
    chunk = _chunk(model, {})
    del chunk["choices"][0]["delta"]
    return _data(chunk)


def complete(
    model: str, text: str, input_tokens: int, output_tokens: int, stop_reason: str, usage: bool
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "logprobs": None,
                "finish_reason": stop_reason,
            }
        ],
    }
    if usage:
        body["usage"] = _usage(input_tokens, output_tokens)
    return body


def error_body(status: int, message: str, retry_after: float | None = None) -> dict[str, Any]:
    del retry_after  # sent as a header only
    kind, code = ERRORS.get(
        status, ("server_error" if status >= 500 else "invalid_request_error", None)
    )
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def models(names: list[str]) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [
            {"id": n, "object": "model", "created": 1700000000, "owned_by": "fake"} for n in names
        ],
    }


DEFAULT_STOP = "stop"
MODELS = ["gpt-5", "gpt-5-mini", "gpt-4.1"]
