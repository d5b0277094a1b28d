"""How the web app reads a JSON body and answers input it refuses.

A body must be plain JSON. Python's reader also takes ``NaN`` and ``Infinity``, turns a number
no float can hold (``1e999``) into infinity, fails on an integer of thousands of digits and
on deep nesting; such values could not be written back in an answer. Each is refused here
with a 422 that names the problem (``PlainJSONRequest``). A body longer than
``MAX_JSON_BODY_BYTES`` is not read at all: a 413 that says the limit.

What a refusal repeats of the request is bounded (``validation_response``): at most
``MAX_ERRORS_LISTED`` errors, then one item counting the others; each echoed input cut to a
few short strings and shallow levels. So an answer stays small however large the request
is, and always encodes (a lone surrogate from a JSON escape becomes U+FFFD).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from fastapi import HTTPException, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute

from app.debates import MAX_CONTEXT_FILE_BYTES, MAX_CONTEXT_FILES
from app.web.uploads import declared_length

# The largest JSON body read: a new debate's ten context files at their size limit, with
# room for JSON's escapes (a character written as six-byte ``\u`` escapes, a surrogate pair
# for an emoji, takes up to three times its UTF-8 bytes) and the other fields.
MAX_JSON_BODY_BYTES = 4 * MAX_CONTEXT_FILES * MAX_CONTEXT_FILE_BYTES
# No field takes a number anywhere near this long; Python refuses past 4,300 digits anyway.
MAX_INT_DIGITS = 40
MAX_ERRORS_LISTED = 20
MAX_ECHO_CHARS = 200
MAX_INNER_ECHO_CHARS = 60
MAX_MESSAGE_CHARS = 500
# An echoed list or object shows this many items, over all its levels, and goes this deep.
MAX_ECHO_ITEMS = 10
MAX_ECHO_DEPTH = 2
MAX_LOC_PARTS = 10
_SURROGATE = re.compile(r"[\ud800-\udfff]")


# -- reading a body --------------------------------------------------------------------------


class NotPlainJSON(ValueError):
    """A value that JSON does not have, or that this app does not read."""


class BadJSONBody(HTTPException):
    """A body that is not plain JSON. An ``HTTPException`` so that FastAPI, which turns any
    other error while reading a body into a bare 400, lets it through to the route."""

    def __init__(self, message: str, loc: Sequence[str | int] = ()) -> None:
        self.errors = [{"type": "json_invalid", "loc": ["body", *loc], "msg": message}]
        super().__init__(422, self.errors)


def _refuse_constant(name: str) -> NoReturn:
    raise NotPlainJSON(f"{name} is not a JSON number; send a number or null")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise NotPlainJSON(f"the number {cut(text, 40)} is too large for a float")
    return value


def _bounded_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise NotPlainJSON(f"a number of {digits:,} digits is too long (at most {MAX_INT_DIGITS})")
    return int(text)


def parse_json_body(body: bytes) -> Any:
    """``body`` read as plain JSON; ``BadJSONBody`` (a 422 naming the problem) otherwise."""
    try:
        return json.loads(
            body,
            parse_constant=_refuse_constant,
            parse_float=_finite_float,
            parse_int=_bounded_int,
        )
    except json.JSONDecodeError as error:
        where = f"at line {error.lineno} column {error.colno}"
        raise BadJSONBody(f"Invalid JSON {where}: {error.msg}", (error.pos,)) from None
    except NotPlainJSON as error:
        raise BadJSONBody(f"Invalid JSON: {error}") from None
    except UnicodeDecodeError:
        raise BadJSONBody("Invalid JSON: the body is not UTF-8 text") from None
    except RecursionError:
        raise BadJSONBody("Invalid JSON: nested too deeply") from None


class BodyTooLarge(HTTPException):
    """A body longer than ``MAX_JSON_BODY_BYTES``; an ``HTTPException`` for the same reason
    as ``BadJSONBody``."""

    def __init__(self) -> None:
        super().__init__(
            413,
            f"The request body is larger than {MAX_JSON_BODY_BYTES:,} bytes, the most the "
            "API reads.",
        )


class PlainJSONRequest(Request):
    """A request whose ``json()`` is ``parse_json_body``, of a body read no further than
    ``MAX_JSON_BODY_BYTES`` (one declared longer is not read at all)."""

    async def body(self) -> bytes:
        if not hasattr(self, "_body"):
            declared = declared_length(self.headers)
            if declared is not None and declared > MAX_JSON_BODY_BYTES:
                raise BodyTooLarge
            chunks: list[bytes] = []
            size = 0
            async for chunk in self.stream():
                size += len(chunk)
                if size > MAX_JSON_BODY_BYTES:
                    raise BodyTooLarge
                chunks.append(chunk)
            self._body = b"".join(chunks)
        return self._body

    async def json(self) -> Any:
        if not hasattr(self, "_plain_json"):
            self._plain_json = parse_json_body(await self.body())
        return self._plain_json


# -- answering with what was refused ---------------------------------------------------------


def cut(text: str, limit: int = MAX_ECHO_CHARS) -> str:
    """``text`` cut to ``limit`` characters, lone surrogates made U+FFFD (they cannot be
    encoded as UTF-8)."""
    short = text if len(text) <= limit else text[:limit] + "…"
    return _SURROGATE.sub("\ufffd", short)


@dataclass
class _Room:
    items: int


def echo(value: Any) -> Any:
    """``value`` as a little plain JSON: strings cut, at most ``MAX_ECHO_ITEMS`` items of lists
    and objects over ``MAX_ECHO_DEPTH`` levels (with a note of how many were left out)."""
    return _echo(value, depth=0, room=_Room(MAX_ECHO_ITEMS))


def _echo(value: Any, *, depth: int, room: _Room) -> Any:
    if isinstance(value, str):
        return cut(value, MAX_ECHO_CHARS if depth == 0 else MAX_INNER_ECHO_CHARS)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if value.bit_length() <= 128 else "a very large number"
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, bytes | bytearray):
        return cut(bytes(value[: MAX_ECHO_CHARS + 1]).decode("utf-8", "replace"))
    if isinstance(value, dict):
        shown = _shown(value.items(), len(value), depth=depth, room=room)
        echoed = {cut(str(key), 80): item for key, item in shown.pairs}
        if shown.left:
            echoed["…"] = f"{shown.left:,} more"
        return echoed
    if isinstance(value, list | tuple):
        shown = _shown(enumerate(value), len(value), depth=depth, room=room)
        echoed_list = [item for _, item in shown.pairs]
        if shown.left:
            echoed_list.append(f"… {shown.left:,} more")
        return echoed_list
    return cut(str(value))


@dataclass(frozen=True)
class _Shown:
    pairs: tuple[tuple[Any, Any], ...]
    left: int


def _shown(pairs: Iterable[tuple[Any, Any]], size: int, *, depth: int, room: _Room) -> _Shown:
    """The first of ``pairs`` (keys or indexes, and values) that the room left allows."""
    shown: list[tuple[Any, Any]] = []
    if depth < MAX_ECHO_DEPTH:
        for key, item in pairs:
            if room.items <= 0:
                break
            room.items -= 1
            shown.append((key, _echo(item, depth=depth + 1, room=room)))
    return _Shown(tuple(shown), size - len(shown))


def _error_item(error: Any) -> dict[str, Any]:
    if not isinstance(error, dict):
        return {"type": "value_error", "loc": [], "msg": cut(str(error), MAX_MESSAGE_CHARS)}
    item: dict[str, Any] = {}
    for key, value in list(error.items())[:8]:
        name = cut(str(key), 40)
        if name == "loc" and isinstance(value, list | tuple):
            parts = value[:MAX_LOC_PARTS]
            item[name] = [part if isinstance(part, int) else cut(str(part)) for part in parts]
        elif name == "msg" and isinstance(value, str):
            item[name] = cut(value.removeprefix("Value error, "), MAX_MESSAGE_CHARS)
        else:
            item[name] = echo(value)
    return item


def validation_response(errors: Iterable[Any]) -> JSONResponse:
    """A 422 listing the first ``MAX_ERRORS_LISTED`` of ``errors``, made small and safe to
    encode, and counting the rest in a last ``too_many_errors`` item."""
    every = list(errors)
    listed = [_error_item(error) for error in every[:MAX_ERRORS_LISTED]]
    left = len(every) - len(listed)
    if left:
        first_left = _error_item(every[len(listed)]).get("loc") or ["body"]
        listed.append(
            {
                "type": "too_many_errors",
                "loc": first_left[:1],
                "msg": f"{left:,} more errors not listed",
            }
        )
    return JSONResponse({"detail": listed}, status_code=422)


def field_errors(loc: tuple[str, ...], message: str) -> list[dict[str, Any]]:
    """One pydantic-style error, for a check made after the body validated."""
    return [{"type": "value_error", "loc": ["body", *loc], "msg": message}]


async def validation_error_handler(request: Request, exc: Exception) -> Response:
    """The app-wide answer to a request that does not validate (pages and forms too)."""
    assert isinstance(exc, RequestValidationError)
    return validation_response(exc.errors())


class ValidationErrorsRoute(APIRoute):
    """Reads JSON bodies as plain JSON, and answers a request that does not validate with
    its details, bounded and safe to encode."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            try:
                return await handler(PlainJSONRequest(request.scope, request.receive))
            except RequestValidationError as error:
                return validation_response(error.errors())
            except BadJSONBody as error:
                return validation_response(error.errors)

        return route
