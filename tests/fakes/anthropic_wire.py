"""Anthropic's Messages API on the wire: request parsing, SSE frames, JSON bodies, errors.

Pure functions of plain values; ``llm_server`` decides what to send and when.
Shapes follow https://docs.anthropic.com/en/api/messages-streaming and /en/api/errors.
"""

from __future__ import annotations

import json
from typing import Any

from tests.fakes.wire import ParsedRequest, block_text

NAME = "anthropic"

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    503: "api_error",
    529: "overloaded_error",
}


def parse(body: dict[str, Any], path_model: str | None, action: str) -> ParsedRequest:
    del path_model, action
    return ParsedRequest(
        provider=NAME,
        model=str(body.get("model", "")),
        stream=bool(body.get("stream")),
        system=block_text(body.get("system")),
        messages=tuple(
            (str(m.get("role")), block_text(m.get("content"))) for m in body.get("messages", [])
        ),
        include_usage=True,
    )


def _frame(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def stream_start(model: str, input_tokens: int) -> list[bytes]:
    message = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": model,
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 1},
    }
    return [
        _frame("message_start", {"type": "message_start", "message": message}),
        _frame(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        _frame("ping", {"type": "ping"}),
    ]


def stream_token(model: str, text: str) -> bytes:
    del model
    return _frame(
        "content_block_delta",
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
    )


def stream_end(
    model: str, input_tokens: int, output_tokens: int, stop_reason: str, usage: bool
) -> list[bytes]:
    del model, input_tokens, usage  # Anthropic always reports usage.
    return [
        _frame("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _frame(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            },
        ),
        _frame("message_stop", {"type": "message_stop"}),
    ]


def stream_error(status: int, message: str) -> bytes:
    return _frame("error", error_body(status, message))


def malformed() -> bytes:
    return b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0,\n\n'


def unexpected_event(model: str) -> bytes:
    """Well-formed JSON of an unusual shape: a ``message_delta`` without its ``usage``."""
    del model
    return _frame("message_delta", {"type": "message_delta", "delta": {"stop_reason": None}})


def complete(
    model: str, text: str, input_tokens: int, output_tokens: int, stop_reason: str, usage: bool
) -> dict[str, Any]:
    del usage
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }


def error_body(status: int, message: str, retry_after: float | None = None) -> dict[str, Any]:
    del retry_after  # sent as a header only
    kind = ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def models(names: list[str]) -> dict[str, Any]:
    data = [
        {"type": "model", "id": n, "display_name": n, "created_at": "2025-01-01T00:00:00Z"}
        for n in names
    ]
    return {
        "data": data,
        "has_more": False,
        "first_id": names[0] if names else None,
        "last_id": names[-1] if names else None,
    }


DEFAULT_STOP = "end_turn"
MODELS = ["claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5"]
