"""The pinned front-end files the pages load from a CDN, with their integrity hashes.

This is the one place the versions, URLs and ``sha384`` hashes live: templates read them from
here, and the browser test fetches the same versions from the npm registry, checks them against
these hashes and serves them in place of the CDN. The hashes were computed from the npm
tarballs (``npm pack htmx.org@2.0.11``, then ``openssl dgst -sha384 -binary dist/htmx.min.js |
openssl base64 -A``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Script:
    package: str
    version: str
    path: str
    integrity: str

    @property
    def url(self) -> str:
        return f"https://cdn.jsdelivr.net/npm/{self.package}@{self.version}/{self.path}"

    @property
    def tarball_url(self) -> str:
        """Where the npm registry serves the package that contains this file."""
        name = self.package.rsplit("/", 1)[-1]
        return f"https://registry.npmjs.org/{self.package}/-/{name}-{self.version}.tgz"


HTMX = Script(
    package="htmx.org",
    version="2.0.11",
    path="dist/htmx.min.js",
    integrity="sha384-2OatzQy1H+Zd/IIrjr1TcuDGqLXeHhbooAyJY1KdQMKnr4LZ22k31GBLdYKHmVjg",
)
HTMX_SSE = Script(
    package="htmx-ext-sse",
    version="2.2.4",
    path="dist/sse.min.js",
    integrity="sha384-A986SAtodyH8eg8x8irJnYUk7i9inVQqYigD6qZ9evobksGNIXfeFvDwLSHcp31N",
)
SCRIPTS: tuple[Script, ...] = (HTMX, HTMX_SSE)
