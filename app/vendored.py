"""The third-party files Argue's pages load (htmx and its SSE extension), pinned, and the copies
of them the app keeps so that it can serve them itself.

This is the one place their versions and ``sha384`` integrity hashes live: the pages name the
CDN URL (default) or this app's own copy with the same hash, and the browser refuses a file that
does not match. The hashes were computed from the npm tarballs (``npm pack htmx.org@2.0.11``,
then ``openssl dgst -sha384 -binary dist/htmx.min.js | openssl base64 -A``).

With ``ARGUE_ASSETS=local`` the copies are kept under ``<folder>/<package>@<version>/<path>``
(``ARGUE_ASSETS_DIR``, default ``ARGUE_HOME/assets``): fetched once from the npm registry's
tarball, checked against the pinned hash before anything is written, and checked again each
time they are read. A file that does not match is never kept nor served.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import tarfile
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from app.config import Settings

CDN = "https://cdn.jsdelivr.net/npm"
NPM_REGISTRY = "https://registry.npmjs.org"
FETCH_TIMEOUT_SECONDS = 30.0
# Far above either tarball (~0.5 MB) or file: a registry that sends more is not sending the
# package, and the hash check then refuses whatever was read.
MAX_TARBALL_BYTES = 20 * 1024 * 1024


@dataclass(frozen=True)
class Script:
    package: str
    version: str
    path: str
    integrity: str

    @property
    def url(self) -> str:
        """Where the CDN serves the file."""
        return f"{CDN}/{self.package}@{self.version}/{self.path}"

    @property
    def local_path(self) -> str:
        """Where the kept copy lives, relative to the assets folder (and to the URL prefix
        the app serves the copies under)."""
        return f"{self.package}@{self.version}/{self.path}"

    @property
    def tarball_url(self) -> str:
        """Where the public npm registry serves the package that contains this file."""
        return self.tarball_in(NPM_REGISTRY)

    def tarball_in(self, registry: str) -> str:
        """Where an npm registry (the public one, or a mirror) serves that package."""
        name = self.package.rsplit("/", 1)[-1]
        return f"{registry.rstrip('/')}/{self.package}/-/{name}-{self.version}.tgz"


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


class AssetError(Exception):
    """A pinned file could not be had: not kept and not fetchable, or not the pinned file."""


def integrity_of(data: bytes) -> str:
    return "sha384-" + base64.b64encode(hashlib.sha384(data).digest()).decode()


def folder_of(settings: Settings) -> Path:
    return (settings.assets_dir or settings.data_dir / "assets").expanduser()


def download(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=FETCH_TIMEOUT_SECONDS) as response:
            data: bytes = response.read(MAX_TARBALL_BYTES + 1)
    except (urllib.error.URLError, OSError) as error:
        raise AssetError(f"could not fetch {url}: {error}") from error
    if len(data) > MAX_TARBALL_BYTES:
        raise AssetError(f"{url} is larger than {MAX_TARBALL_BYTES} bytes")
    return data


Downloader = Callable[[str], bytes]


def fetch(script: Script, *, registry: str, get: Downloader = download) -> bytes:
    """The pinned file, out of the package's tarball from ``registry``, checked."""
    url = script.tarball_in(registry)
    try:
        with tarfile.open(fileobj=io.BytesIO(get(url)), mode="r:gz") as archive:
            member = archive.extractfile(f"package/{script.path}")
            # Read no more than a script could be: the size in the header may lie.
            data = member.read(MAX_TARBALL_BYTES) if member is not None else None
    except (tarfile.TarError, KeyError, EOFError, OSError) as error:
        raise AssetError(f"{url} has no readable {script.path}: {error}") from error
    if data is None:
        raise AssetError(f"{url} has no file {script.path}")
    return checked(script, data, source=url)


def checked(script: Script, data: bytes, *, source: str) -> bytes:
    actual = integrity_of(data)
    if actual != script.integrity:
        raise AssetError(
            f"{script.local_path} from {source} is not the pinned file: it hashes to {actual}, "
            f"the pin is {script.integrity}. Nothing was kept."
        )
    return data


def kept(script: Script, folder: Path) -> bytes | None:
    """The kept copy if there is one and it is the pinned file; None otherwise."""
    path = folder / script.local_path
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    return data if integrity_of(data) == script.integrity else None


def keep(script: Script, folder: Path, data: bytes) -> None:
    """Write a checked file; a crash mid-write leaves no half file under the real name."""
    target = folder / script.local_path
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".partial-")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def ensure(
    folder: Path,
    *,
    registry: str,
    scripts: Iterable[Script] = SCRIPTS,
    get: Downloader = download,
) -> dict[str, bytes]:
    """Every pinned file, by ``local_path``: the kept copy, or fetched, checked and kept."""
    files: dict[str, bytes] = {}
    for script in scripts:
        data = kept(script, folder)
        if data is None:
            data = fetch(script, registry=registry, get=get)
            keep(script, folder, data)
        files[script.local_path] = data
    return files


def ensure_for(settings: Settings) -> dict[str, bytes]:
    return ensure(folder_of(settings), registry=settings.assets_registry)
