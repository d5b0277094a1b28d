"""``argue serve``: loopback by default, and the app it serves is the one create_app builds."""

from __future__ import annotations

from typing import Any

from app.cli.main import build_parser


def test_serve_binds_to_loopback_on_port_8000_by_default() -> None:
    args = build_parser().parse_args(["serve"])
    assert (args.host, args.port) == ("127.0.0.1", 8000)
    custom = build_parser().parse_args(["serve", "--host", "0.0.0.0", "--port", "9001"])
    assert (custom.host, custom.port) == ("0.0.0.0", 9001)


def test_every_template_is_compiled_before_serving() -> None:
    from app.web.deps import compile_all, make_templates

    templates = make_templates()
    compile_all(templates)
    compiled: list[str] = []
    original = templates.env.compile

    def counting(source: Any, name: str | None = None, *args: Any, **kwargs: Any) -> Any:
        compiled.append(name or "?")
        return original(source, name, *args, **kwargs)

    templates.env.compile = counting  # type: ignore[method-assign]
    for name in templates.env.list_templates():
        templates.env.get_template(name)
    assert templates.env.list_templates() and compiled == []
