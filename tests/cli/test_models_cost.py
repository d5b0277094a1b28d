"""``argue models`` reports what it can without paying for it: a hosted provider whose key is
unset is described without importing its SDK, the local model's file is found, never loaded,
and the database commands' modules are not imported. Each case runs ``argue models`` in a
fresh interpreter, where ``sys.modules`` shows what the command alone imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.cli.main import main
from app.config import Settings
from app.providers.registry import build_provider, provider_status

SDK_MODULES = ("anthropic", "openai", "google.genai")
# What only the database commands need: ``argue models`` has no use for it.
HEAVY_MODULES = (*SDK_MODULES, "sqlmodel")

PROBE = """
import contextlib, io, json, sys
from app.cli.main import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(["models", "--json"])
from app.providers import local
print(json.dumps({
    "code": code,
    "reports": json.loads(out.getvalue()),
    "imported": sorted(m for m in %r if m in sys.modules),
    "loaded_models": len(local._models),
}))
"""


def _models_in_a_fresh_process(tmp_path: Path) -> dict[str, Any]:
    env = {**os.environ, "ARGUE_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE % (HEAVY_MODULES,)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_models_with_no_keys_imports_no_sdk_nor_the_database_and_loads_no_model(
    tmp_path: Path,
) -> None:
    result = _models_in_a_fresh_process(tmp_path)

    assert result["code"] == 0
    assert result["imported"] == []
    assert result["loaded_models"] == 0
    reports = {report["name"]: report for report in result["reports"]}
    assert reports["anthropic"]["reason"] == "ANTHROPIC_API_KEY not set"
    assert reports["local"]["configured"] is True


def test_models_imports_only_the_sdk_whose_key_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A port nothing listens on: the listing fails at once and says so.
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")

    result = _models_in_a_fresh_process(tmp_path)

    assert result["imported"] == ["openai"]


@pytest.mark.parametrize(
    "environment",
    [
        {},
        {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"},
        {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"},
        {"GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:9"},
    ],
)
def test_a_keyless_status_says_what_the_adapter_itself_says(
    environment: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    settings = Settings()

    for name in ("anthropic", "gemini", "openai"):
        assert provider_status(name, settings) == build_provider(name, settings).status()


@pytest.mark.parametrize("written", ["nan", "inf", "0", "-1", "soon"])
def test_a_listing_timeout_that_is_not_a_positive_number_of_seconds_is_refused(
    written: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["models", "--timeout", written])

    assert stopped.value.code == 2
    assert f"argument --timeout: {written!r} is not a positive number of seconds" in (
        capsys.readouterr().err
    )
