"""With ``ARGUE_ASSETS=local`` the pages load the pinned htmx files from this app, under the
same integrity hashes, and the policy allows scripts from this origin only; the app serves
exactly the checked bytes (no credential needed, like the other static files) and nothing
else under their prefix. On the default setting it serves no copies at all."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app import vendored
from app.config import Settings
from app.web.assets import LOCAL_PREFIX
from tests.security.conftest import TOKEN, running, with_access
from tests.security.test_headers import policy
from tests.web.conftest import start_duel, wait_for_debate
from tests.web.htmx_assets import tarball
from tests.web.npm_registry import fake_registry
from tests.web.test_browser import unavailable
from tests.web.test_offline import keep_pinned_files

SCRIPT_TAG = re.compile(r"<script\b([^>]*)>")


def local(settings: Settings, folder: Path, **changes: object) -> Settings:
    return settings.model_copy(update={"assets": "local", "assets_dir": folder, **changes})


@pytest.fixture
def kept_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "assets"
    try:
        keep_pinned_files(folder)
    except OSError as error:
        unavailable(f"cannot fetch the pinned htmx files: {error}")
    return folder


@pytest.fixture
def local_client(settings: Settings, kept_folder: Path) -> Iterator[TestClient]:
    with running(local(settings, kept_folder)) as client:
        yield client


def test_with_local_assets_pages_load_htmx_from_here_under_the_pinned_hashes(
    local_client: TestClient,
) -> None:
    debate_id = start_duel(local_client)
    assert wait_for_debate(local_client, debate_id) == "completed"
    expected = [f'src="{LOCAL_PREFIX}{s.local_path}"' for s in vendored.SCRIPTS]
    for path in ("/", "/debates", f"/debates/{debate_id}"):
        response = local_client.get(path)
        tags = SCRIPT_TAG.findall(response.text)
        for src, script in zip(expected, vendored.SCRIPTS, strict=True):
            assert any(src in tag and f'integrity="{script.integrity}"' in tag for tag in tags)
        assert "cdn.jsdelivr.net" not in response.text
        csp = policy(response)
        assert csp["script-src"] == ["'self'"] and csp["connect-src"] == ["'self'"]


def test_the_app_serves_the_exact_pinned_bytes_with_no_credential(
    settings: Settings, kept_folder: Path
) -> None:
    with running(with_access(local(settings, kept_folder), auth_token=TOKEN)) as client:
        for script in vendored.SCRIPTS:
            response = client.get(LOCAL_PREFIX + script.local_path)
            assert response.status_code == 200
            assert vendored.integrity_of(response.content) == script.integrity
            assert response.headers["content-type"].startswith("text/javascript")
            assert "immutable" in response.headers["cache-control"]
        assert client.get(f"{LOCAL_PREFIX}htmx.org@2.0.11/package.json").status_code == 404
        assert client.get(f"{LOCAL_PREFIX}htmx.org@2.0.10/dist/htmx.min.js").status_code == 404


def test_on_its_first_start_the_app_fetches_checks_and_keeps_the_files(
    settings: Settings, tmp_path: Path
) -> None:
    folder = tmp_path / "empty-assets"
    with fake_registry() as registry:
        try:
            for script in vendored.SCRIPTS:
                registry.publish(script, tarball(script))
        except OSError as error:
            unavailable(f"cannot fetch the pinned htmx tarballs: {error}")
        with running(local(settings, folder, assets_registry=registry.url)) as client:
            served = client.get(LOCAL_PREFIX + vendored.HTMX.local_path)
        assert len(registry.requests) == len(vendored.SCRIPTS)
    assert vendored.integrity_of(served.content) == vendored.HTMX.integrity
    for script in vendored.SCRIPTS:
        assert vendored.integrity_of((folder / script.local_path).read_bytes()) == script.integrity


def test_on_the_cdn_setting_the_app_serves_no_copies(
    open_client: TestClient, kept_folder: Path
) -> None:
    response = open_client.get(LOCAL_PREFIX + vendored.HTMX.local_path)
    assert response.status_code == 404
    assert "'self'" in policy(open_client.get("/"))["script-src"]
