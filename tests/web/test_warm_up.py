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
def counting_calls(owner: Any, method: str) -> Iterator[list[str]]:
    """The template names ``owner.method`` is called with meanwhile (the environment's
    ``compile``: templates compiled; its loader's ``load``: templates loaded at all)."""
    names: list[str] = []
    original = getattr(owner, method)

    def counting(*args: Any, **kwargs: Any) -> Any:
        names.append(str(kwargs.get("name", args[1] if len(args) > 1 else "?")))
        return original(*args, **kwargs)

    setattr(owner, method, counting)
    try:
        yield names
    finally:
        setattr(owner, method, original)


def render_every_template(templates: Jinja2Templates) -> int:
    names = templates.env.list_templates()
    for name in names:
        templates.env.get_template(name)
    return len(names)


def test_a_started_app_loads_no_template_when_it_renders(app: FastAPI) -> None:
    templates: Jinja2Templates = app.state.templates
    with TestClient(app), counting_calls(templates.env.loader, "load") as loaded:
        rendered = render_every_template(templates)
    assert rendered > 20 and loaded == []


def test_a_later_app_loads_the_templates_compiled_by_an_earlier_one() -> None:
    compile_all(make_templates())
    later = make_templates()
    with counting_calls(later.env, "compile") as compiled:
        compile_all(later)
    assert compiled == []
    assert render_every_template(later) > 20
