"""A fake npm registry on 127.0.0.1: serves the tarballs a test puts in it, counts the
requests, and builds tarballs shaped like npm's (every file under ``package/``)."""

from __future__ import annotations

import io
import tarfile
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from app.vendored import Script


def npm_tarball(files: Mapping[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path, data in files.items():
            info = tarfile.TarInfo(f"package/{path}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


class FakeRegistry:
    def __init__(self) -> None:
        self.tarballs: dict[str, bytes] = {}
        self.requests: list[str] = []
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                registry.requests.append(self.path)
                body = registry.tarballs.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def publish(self, script: Script, tarball: bytes) -> None:
        """Serve ``tarball`` where the registry keeps ``script``'s package."""
        self.tarballs[script.tarball_in(self.url).removeprefix(self.url)] = tarball


@contextmanager
def fake_registry() -> Iterator[FakeRegistry]:
    registry = FakeRegistry()
    registry.thread.start()
    try:
        yield registry
    finally:
        registry.server.shutdown()
        registry.server.server_close()
