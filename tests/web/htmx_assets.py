"""The pinned htmx files, for a browser that may not reach the CDN.

Tests run offline from the CDN, so this fetches the same versions from the npm registry (once;
cached under ``tests/.cache/npm``), takes the file the page loads out of the tarball, and
checks its sha384 against the integrity hash in ``app.web.assets`` before anything serves it.
"""

from __future__ import annotations

import base64
import hashlib
import io
import tarfile
import urllib.request
from pathlib import Path

from app.web.assets import Script

CACHE = Path(__file__).resolve().parent.parent / ".cache" / "npm"


def integrity_of(data: bytes) -> str:
    return "sha384-" + base64.b64encode(hashlib.sha384(data).digest()).decode()


def tarball(script: Script) -> bytes:
    path = CACHE / f"{script.package}-{script.version}.tgz"
    if not path.is_file():
        with urllib.request.urlopen(script.tarball_url, timeout=30) as response:
            data = response.read()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return path.read_bytes()


def pinned_file(script: Script) -> bytes:
    """The file the page's ``<script src=... integrity=...>`` names, verified."""
    with tarfile.open(fileobj=io.BytesIO(tarball(script)), mode="r:gz") as archive:
        member = archive.extractfile(f"package/{script.path}")
        assert member is not None, f"{script.path} is not in {script.package}@{script.version}"
        data = member.read()
    actual = integrity_of(data)
    if actual != script.integrity:
        raise AssertionError(
            f"{script.package}@{script.version}/{script.path} hashes to {actual}, "
            f"but the template says {script.integrity}"
        )
    return data
