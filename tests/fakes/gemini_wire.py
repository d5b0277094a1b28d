"""Gemini's generateContent API on the wire: ``data:`` SSE chunks of GenerateContentResponse.

Pure functions of plain values; ``llm_server`` decides what to send and when.
Errors use Google's ``{"error": {"code", "message", "status"}}`` shape.
"""

from __future__ import annotations

import json
from typing import Any

from tests.fakes.wire import ParsedRequest, block_text

NAME = "gemini"

STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
    529: "UNAVAILABLE",
}


def parse(body: dict[str, Any], path_model: str | None, action: str) -> ParsedRequest:
    config = body.get("generationConfig") or {}
    del config
    return ParsedRequest(
        provider=NAME,
        model=path_model or "",
        stream=action == "streamGenerateContent",
        system=block_text(body.get("systemInstruction")),
        messages=tuple(
            (str(c.get("role", "user")), block_text(c.get("parts")))
            for c in body.get("contents", [])
        ),
        include_usage=True,
    )


def _data(obj: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(obj)}\r\n\r\n".encode()


def _response(
    model: str, text: str, usage: dict[str, int] | None, finish_reason: str | None = None
) -> dict[str, Any]:
    candidate: dict[str, Any] = {
        "content": {"parts": [{"text": text}], "role": "model"},
        "index": 0,
    }
    if finish_reason:
        candidate["finishReason"] = finish_reason
    body: dict[str, Any] = {"candidates": [candidate], "modelVersion": model}
    if usage is not None:
        body["usageMetadata"] = usage
    return body


def _usage(input_tokens: int, output_tokens: int) -> dict[str, int]:
    return {
        "promptTokenCount": input_tokens,
        "candidatesTokenCount": output_tokens,
        "totalTokenCount": input_tokens + output_tokens,
    }


def stream_start(model: str, input_tokens: int) -> list[bytes]:
    del model, input_tokens
    return []  # Gemini's first chunk already carries text.


def stream_token(model: str, text: str) -> bytes:
    return _data(_response(model, text, None))


def stream_end(
    model: str, input_tokens: int, output_tokens: int, stop_reason: str, usage: bool
) -> list[bytes]:
    return [
        _data(
            _response(
                model, "", _usage(input_tokens, output_tokens) if usage else None, stop_reason
            )
        )
    ]


def stream_error(status: int, message: str) -> bytes:
    return _data(error_body(status, message))


def malformed() -> bytes:
    return b'data: {"candidates": [{"content": \r\n\r\n'


def unexpected_event(model: str) -> bytes:
    """Well-formed JSON of an unusual shape: a candidate without its ``content``."""
    return _data({"candidates": [{"index": 0}], "modelVersion": model})


def complete(
    model: str, text: str, input_tokens: int, output_tokens: int, stop_reason: str, usage: bool
) -> dict[str, Any]:
    return _response(
        model, text, _usage(input_tokens, output_tokens) if usage else None, stop_reason
    )


def error_body(status: int, message: str, retry_after: float | None = None) -> dict[str, Any]:
    code = 503 if status == 529 else status
    error: dict[str, Any] = {
        "code": code,
        "message": message,
        "status": STATUSES.get(status, "UNKNOWN"),
    }
    if retry_after is not None:
        # Google says when to retry in a RetryInfo detail rather than (only) a header.
        error["details"] = [
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{retry_after:g}s"}
        ]
    return {"error": error}


def models(names: list[str]) -> dict[str, Any]:
    return {
        "models": [
            {
                "name": f"models/{n}",
                "displayName": n,
                "supportedGenerationMethods": ["generateContent", "countTokens"],
            }
            for n in names
        ]
    }


DEFAULT_STOP = "STOP"
MODELS = ["gemini-2.5-pro", "gemini-2.5-flash"]
