"""``argue serve``: loopback by default, and the app it serves is the one create_app builds."""

from __future__ import annotations

from app.cli.main import build_parser


def test_serve_binds_to_loopback_on_port_8000_by_default() -> None:
    args = build_parser().parse_args(["serve"])
    assert (args.host, args.port) == ("127.0.0.1", 8000)
    custom = build_parser().parse_args(["serve", "--host", "0.0.0.0", "--port", "9001"])
    assert (custom.host, custom.port) == ("0.0.0.0", 9001)
