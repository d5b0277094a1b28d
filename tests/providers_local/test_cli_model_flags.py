"""A model name reaches a CLI as the value of ``--model`` and nothing else: even a name
that looks like an option (one saved before names were checked, or set in a setting) cannot
turn into a flag of ``claude``, ``gemini`` or ``codex``.

The fake CLIs read their arguments the way real ones do (an option parser that takes
``--model VALUE`` and ``--model=VALUE``), and record what they understood.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from app.config import Settings
from app.providers.base import Message
from app.providers.cli import build_cli_provider

FakeCli = Callable[[str, str], Path]

# Flags each real CLI has that must never be switched on by a model name.
PARSE_ARGUMENTS = """
import argparse, json
parser = argparse.ArgumentParser()
parser.add_argument("command", nargs="*")
parser.add_argument("--model", "-m")
parser.add_argument("-p", "--print", dest="prompt", nargs="?", const="")
parser.add_argument("--skip-git-repo-check", action="store_true")
for flag in ("--yolo", "--dangerously-skip-permissions", "--full-auto", "--debug"):
    parser.add_argument(flag, action="store_true")
parsed, unknown = parser.parse_known_intermixed_args()
(STATE / "parsed.json").write_text(json.dumps({**vars(parsed), "unknown": unknown}))
sys.stdin.read()
print("ok")
"""

HOSTILE = ("--yolo", "--dangerously-skip-permissions", "-m", "--full-auto --debug")
CLIS = (("claude-cli", "claude"), ("gemini-cli", "gemini"), ("codex-cli", "codex"))


async def understood(
    fake_cli: FakeCli, settings: Settings, provider: str, binary: str, model: str
) -> dict[str, object]:
    state = fake_cli(binary, PARSE_ARGUMENTS)
    cli = build_cli_provider(provider, settings)
    events = cli.stream(model=model, system="", messages=[Message("user", "hi")], max_tokens=8)
    async for _ in events:
        pass
    parsed: dict[str, object] = json.loads((state / "parsed.json").read_text())
    return parsed


@pytest.mark.parametrize("model", HOSTILE)
@pytest.mark.parametrize(("provider", "binary"), CLIS)
async def test_an_option_like_model_name_stays_the_value_of_model(
    fake_cli: FakeCli, settings: Settings, provider: str, binary: str, model: str
) -> None:
    parsed = await understood(fake_cli, settings, provider, binary, model)
    assert parsed["model"] == model
    switched_on = [flag for flag in ("yolo", "dangerously_skip_permissions", "full_auto", "debug")
                   if parsed[flag]]  # fmt: skip
    assert switched_on == []
    assert parsed["unknown"] == []


@pytest.mark.parametrize(("provider", "binary"), CLIS)
async def test_an_ordinary_model_name_still_reaches_the_cli(
    fake_cli: FakeCli, settings: Settings, provider: str, binary: str
) -> None:
    parsed = await understood(fake_cli, settings, provider, binary, "some-model:7b")
    assert parsed["model"] == "some-model:7b"
