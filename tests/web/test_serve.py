"""``argue serve``: loopback by default, and the app it serves is the one create_app builds."""

from __future__ import annotations

import pytest

from app.cli.main import build_parser, main


def test_serve_binds_to_loopback_on_port_8000_by_default() -> None:
    args = build_parser().parse_args(["serve"])
    assert (args.host, args.port) == ("127.0.0.1", 8000)
    custom = build_parser().parse_args(["serve", "--host", "0.0.0.0", "--port", "9001"])
    assert (custom.host, custom.port) == ("0.0.0.0", 9001)


@pytest.mark.parametrize("port", ["65536", "99999", "-1"])
def test_a_port_no_socket_can_have_is_refused_before_anything_starts(
    port: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["serve", "--port", port])

    assert code == 2
    assert (
        f"argue serve: --port must be between 0 and 65535 (got {port})" in capsys.readouterr().err
    )
