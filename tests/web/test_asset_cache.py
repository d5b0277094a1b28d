"""The copies of the pinned htmx files that ``ARGUE_ASSETS=local`` serves: fetched once from an
npm registry (a fake one on 127.0.0.1 here), checked against the pin before anything is kept,
never fetched again while the kept copy matches, and refused with a plain error otherwise.
``argue assets fetch`` and ``argue serve`` use the same cache."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from app import vendored
from app.cli import serve
from app.cli.main import build_parser, main
from app.vendored import AssetError, Script, integrity_of
from tests.web.htmx_assets import tarball
from tests.web.npm_registry import FakeRegistry, fake_registry, npm_tarball
from tests.web.test_browser import unavailable

CONTENT = b"/* a pinned file */ window.pinned = true;\n"
PINNED = Script(
    package="pinned-lib", version="1.2.3", path="dist/lib.min.js", integrity=integrity_of(CONTENT)
)


@pytest.fixture
def registry() -> Iterator[FakeRegistry]:
    with fake_registry() as registry:
        yield registry


def closed_port_url() -> str:
    """A loopback address where nothing listens: a registry that cannot be reached."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_a_missing_file_is_fetched_from_the_registry_checked_and_kept(
    registry: FakeRegistry, tmp_path: Path
) -> None:
    registry.publish(PINNED, npm_tarball({PINNED.path: CONTENT, "README.md": b"hi"}))
    files = vendored.ensure(tmp_path, registry=registry.url, scripts=[PINNED])
    assert files == {"pinned-lib@1.2.3/dist/lib.min.js": CONTENT}
    assert (tmp_path / "pinned-lib@1.2.3" / "dist" / "lib.min.js").read_bytes() == CONTENT
    assert registry.requests == ["/pinned-lib/-/pinned-lib-1.2.3.tgz"]


def test_a_kept_file_is_used_without_asking_the_registry_again(
    registry: FakeRegistry, tmp_path: Path
) -> None:
    registry.publish(PINNED, npm_tarball({PINNED.path: CONTENT}))
    vendored.ensure(tmp_path, registry=registry.url, scripts=[PINNED])
    again = vendored.ensure(tmp_path, registry=closed_port_url(), scripts=[PINNED])
    assert again == {PINNED.local_path: CONTENT}
    assert len(registry.requests) == 1


def test_a_tarball_whose_file_is_not_the_pinned_one_is_refused_and_nothing_is_kept(
    registry: FakeRegistry, tmp_path: Path
) -> None:
    registry.publish(PINNED, npm_tarball({PINNED.path: CONTENT + b"alert('tampered');"}))
    with pytest.raises(AssetError, match="is not the pinned file") as caught:
        vendored.ensure(tmp_path, registry=registry.url, scripts=[PINNED])
    assert PINNED.integrity in str(caught.value)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_a_tarball_without_the_file_is_refused(registry: FakeRegistry, tmp_path: Path) -> None:
    registry.publish(PINNED, npm_tarball({"dist/other.js": CONTENT}))
    with pytest.raises(AssetError, match=r"dist/lib\.min\.js"):
        vendored.ensure(tmp_path, registry=registry.url, scripts=[PINNED])
    assert not (tmp_path / PINNED.local_path).exists()


def test_a_kept_copy_that_was_altered_is_replaced_by_the_checked_file(
    registry: FakeRegistry, tmp_path: Path
) -> None:
    registry.publish(PINNED, npm_tarball({PINNED.path: CONTENT}))
    altered = tmp_path / PINNED.local_path
    altered.parent.mkdir(parents=True)
    altered.write_bytes(b"alert('altered on disk');")
    assert vendored.ensure(tmp_path, registry=registry.url, scripts=[PINNED]) == {
        PINNED.local_path: CONTENT
    }
    assert altered.read_bytes() == CONTENT
    assert len(registry.requests) == 1


def test_an_unreachable_registry_is_a_plain_error(tmp_path: Path) -> None:
    with pytest.raises(
        AssetError,
        match=r"could not fetch http://127\.0\.0\.1:\d+/pinned-lib/-/pinned-lib-1\.2\.3\.tgz",
    ):
        vendored.ensure(tmp_path, registry=closed_port_url(), scripts=[PINNED])


@pytest.fixture
def real_registry(registry: FakeRegistry) -> FakeRegistry:
    """The fake registry serving the real htmx tarballs (from the npm registry, once)."""
    try:
        for script in vendored.SCRIPTS:
            registry.publish(script, tarball(script))
    except OSError as error:
        unavailable(f"cannot fetch the pinned htmx tarballs: {error}")
    return registry


def test_argue_assets_fetch_keeps_the_pinned_files_once(
    real_registry: FakeRegistry,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ARGUE_ASSETS_DIR", str(tmp_path / "assets"))
    monkeypatch.setenv("ARGUE_ASSETS_REGISTRY", real_registry.url)
    assert main(["assets", "fetch"]) == 0
    first = capsys.readouterr().out
    for script in vendored.SCRIPTS:
        kept = tmp_path / "assets" / script.local_path
        assert integrity_of(kept.read_bytes()) == script.integrity
        assert f"{kept}  (fetched and checked" in first
    assert main(["assets", "fetch"]) == 0
    assert capsys.readouterr().out.count("already kept") == len(vendored.SCRIPTS)
    assert len(real_registry.requests) == len(vendored.SCRIPTS)


def test_serve_in_local_mode_stops_with_a_plain_message_when_the_files_cannot_be_had(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import uvicorn

    def must_not_serve(*args: object, **kwargs: object) -> None:
        raise AssertionError("served pages whose htmx cannot be had")

    monkeypatch.setattr(uvicorn, "run", must_not_serve)
    monkeypatch.setenv("ARGUE_ASSETS", "local")
    monkeypatch.setenv("ARGUE_ASSETS_REGISTRY", closed_port_url())
    assert serve.run(build_parser().parse_args(["serve"])) == 1
    error = capsys.readouterr().err
    assert "ARGUE_ASSETS=local" in error and "argue assets fetch" in error
    assert "could not fetch" in error
