"""``GET /docs``: the API reference, rendered on the server from the app's own OpenAPI schema.

It needs no script at all (nothing from a CDN, nothing inline), so it reads the same offline
and under the pages' Content-Security-Policy. ``/openapi.json`` stays the machine-readable
source. Here the schema becomes plain values (operations, parameters, responses, schemas) that
``templates/api_docs.html`` lays out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from markupsafe import Markup, escape

from app.web.deps import TemplatesDep

router = APIRouter(include_in_schema=False)

HTTP_METHODS = ("get", "post", "put", "patch", "delete")
REF_PREFIX = "#/components/schemas/"
API_TAG = "api"

Schema = Mapping[str, Any]


@dataclass(frozen=True)
class FieldDoc:
    """A parameter or a schema property."""

    name: str
    where: str  # path, query, header, body property
    type_html: Markup
    required: bool
    description: str
    constraints: str


@dataclass(frozen=True)
class Reply:
    status: str
    description: str
    media_type: str | None
    type_html: Markup | None


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    summary: str
    description: str
    parameters: tuple[FieldDoc, ...]
    body_media_type: str | None
    body_type_html: Markup | None
    body_required: bool
    replies: tuple[Reply, ...]

    @property
    def key(self) -> str:
        return f"{self.method} {self.path}"

    @property
    def anchor(self) -> str:
        return "op-" + self.method.lower() + re.sub(r"[^a-z0-9]+", "-", self.path.lower())


@dataclass(frozen=True)
class Section:
    title: str
    operations: tuple[Operation, ...]


@dataclass(frozen=True)
class SchemaDoc:
    name: str
    description: str
    type_html: Markup
    fields: tuple[FieldDoc, ...]


@dataclass(frozen=True)
class Reference:
    title: str
    version: str
    summary: str
    sections: tuple[Section, ...]
    schemas: tuple[SchemaDoc, ...]


# -- types as text ------------------------------------------------------------------------------


def _ref_name(ref: str) -> str:
    return ref.removeprefix(REF_PREFIX)


def type_html(schema: Schema) -> Markup:
    """A schema's type in a few words, each named schema a link to its description."""
    if "$ref" in schema:
        name = _ref_name(str(schema["$ref"]))
        return Markup('<a href="#schema-{0}">{0}</a>').format(name)
    for combiner in ("anyOf", "oneOf"):
        if combiner in schema:
            return Markup(" | ").join(type_html(part) for part in schema[combiner])
    if "allOf" in schema:
        return Markup(" & ").join(type_html(part) for part in schema["allOf"])
    if "const" in schema:
        return escape(json.dumps(schema["const"]))
    if "enum" in schema:
        return escape(" | ".join(json.dumps(value) for value in schema["enum"]))
    kind = schema.get("type")
    if kind == "array":
        return Markup("list[{}]").format(type_html(schema.get("items", {})))
    if kind == "object" and isinstance(schema.get("additionalProperties"), Mapping):
        return Markup("dict[string, {}]").format(type_html(schema["additionalProperties"]))
    if isinstance(kind, str):
        detail = schema.get("format") or schema.get("contentMediaType")
        return escape(f"{kind} ({detail})" if detail else kind)
    return escape("any")


def _number(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def constraints(schema: Schema) -> str:
    """Limits and the default, in words: ``1 to 8``, ``at most 2000 characters``."""
    words: list[str] = []
    branches = [schema, *schema.get("anyOf", ()), *schema.get("oneOf", ())]
    for part in branches:
        low, high = part.get("minimum"), part.get("maximum")
        if low is not None and high is not None:
            words.append(f"{_number(low)} to {_number(high)}")
        elif low is not None:
            words.append(f"at least {_number(low)}")
        elif high is not None:
            words.append(f"at most {_number(high)}")
        if part.get("minLength", 0) > 1:
            words.append(f"at least {part['minLength']} characters")
        if "maxLength" in part:
            words.append(f"at most {part['maxLength']} characters")
        for key, noun in (("maxItems", "items"), ("maxProperties", "entries")):
            if key in part:
                words.append(f"at most {part[key]} {noun}")
        if "pattern" in part:
            words.append(f"matches {part['pattern']}")
    if "default" in schema and schema["default"] is not None:
        words.append(f"default {json.dumps(schema['default'])}")
    return "; ".join(words)


# -- the schema as values -------------------------------------------------------------------------


def _parameter(raw: Schema) -> FieldDoc:
    schema = raw.get("schema", {})
    return FieldDoc(
        name=str(raw.get("name", "")),
        where=str(raw.get("in", "")),
        type_html=type_html(schema),
        required=bool(raw.get("required")),
        description=str(raw.get("description") or schema.get("description") or ""),
        constraints=constraints(schema),
    )


def _first_content(content: Mapping[str, Any] | None) -> tuple[str | None, Markup | None]:
    if not content:
        return None, None
    media_type, body = next(iter(content.items()))
    schema = body.get("schema") if isinstance(body, Mapping) else None
    return str(media_type), (type_html(schema) if schema else None)


def _operation(method: str, path: str, raw: Schema) -> Operation:
    body = raw.get("requestBody") or {}
    body_media_type, body_type = _first_content(body.get("content"))
    replies = []
    for status, reply in raw.get("responses", {}).items():
        media_type, reply_type = _first_content(reply.get("content"))
        replies.append(
            Reply(str(status), str(reply.get("description", "")), media_type, reply_type)
        )
    return Operation(
        method=method.upper(),
        path=path,
        summary=str(raw.get("summary", "")),
        description=str(raw.get("description", "")),
        parameters=tuple(_parameter(p) for p in raw.get("parameters", ())),
        body_media_type=body_media_type,
        body_type_html=body_type,
        body_required=bool(body.get("required")),
        replies=tuple(replies),
    )


def _schema_doc(name: str, raw: Schema) -> SchemaDoc:
    required = set(raw.get("required", ()))
    fields = tuple(
        FieldDoc(
            name=prop,
            where="property",
            type_html=type_html(schema),
            required=prop in required,
            description=str(schema.get("description", "")),
            constraints=constraints(schema),
        )
        for prop, schema in raw.get("properties", {}).items()
    )
    return SchemaDoc(name, str(raw.get("description", "")), type_html(raw), fields)


def reference(openapi: Schema) -> Reference:
    """The whole reference: the JSON API first, then the pages, streams and downloads."""
    api: list[Operation] = []
    pages: list[Operation] = []
    for path, item in openapi.get("paths", {}).items():
        for method in HTTP_METHODS:
            if method in item:
                raw = item[method]
                (api if API_TAG in raw.get("tags", ()) else pages).append(
                    _operation(method, path, raw)
                )
    info = openapi.get("info", {})
    schemas = openapi.get("components", {}).get("schemas", {})
    sections: Sequence[Section] = (
        Section("JSON API", tuple(api)),
        Section("Pages, the page stream and downloads", tuple(pages)),
    )
    return Reference(
        title=str(info.get("title", "")),
        version=str(info.get("version", "")),
        summary=str(info.get("summary") or info.get("description") or ""),
        sections=tuple(section for section in sections if section.operations),
        schemas=tuple(_schema_doc(name, raw) for name, raw in schemas.items()),
    )


@router.get("/docs", response_class=HTMLResponse)
def api_reference(request: Request, templates: TemplatesDep) -> HTMLResponse:
    openapi_url = request.app.openapi_url or ""
    response: HTMLResponse = templates.TemplateResponse(
        request,
        "api_docs.html",
        {"reference": reference(request.app.openapi()), "openapi_url": openapi_url},
    )
    return response
