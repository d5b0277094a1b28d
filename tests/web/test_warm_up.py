"""An app loads every template while it starts, not on first use mid-stream, and an app
built later in the same process loads them compiled."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.templating import Jinja2Templates
from fastapi.testclient import TestClient

from app.web.deps import compile_all, make_templates


@contextmanager
def counting_compiles(templates: Jinja2Templates) -> Iterator[list[str]]:
    compiled: list[str] = []
    env = templates.env
    original = env.compile

    def counting(source: Any, name: str | None = None, *args: Any, **kwargs: Any) -> Any:
        compiled.append(name or "?")
        return original(source, name, *args, **kwargs)

    env.compile = counting  # type: ignore[method-assign]
    try:
        yield compiled
    finally:
        env.compile = original  # type: ignore[method-assign]


@contextmanager
def counting_loads(templates: Jinja2Templates) -> Iterator[list[str]]:
    """Templates the environment had to load (compile, or read compiled) to render."""
    loaded: list[str] = []
    loader = templates.env.loader
    assert loader is not None
    original = loader.load

    def counting(environment: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        loaded.append(name)
        return original(environment, name, *args, **kwargs)

    loader.load = counting  # type: ignore[method-assign]
    try:
        yield loaded
    finally:
        loader.load = original  # type: ignore[method-assign]


def render_every_template(templates: Jinja2Templates) -> int:
    names = templates.env.list_templates()
    for name in names:
        templates.env.get_template(name)
    return len(names)


def test_a_started_app_loads_no_template_when_it_renders(app: FastAPI) -> None:
    templates: Jinja2Templates = app.state.templates
    with TestClient(app), counting_loads(templates) as loaded:
        rendered = render_every_template(templates)
    assert rendered > 20 and loaded == []


def test_a_later_app_loads_the_templates_compiled_by_an_earlier_one() -> None:
    compile_all(make_templates())
    later = make_templates()
    with counting_compiles(later) as compiled:
        compile_all(later)
    assert compiled == []
    assert render_every_template(later) > 20
