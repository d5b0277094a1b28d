"""``argue models`` and ``argue ask``, run in-process through ``app.cli.main.main``."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.cli import main as cli_main
from app.config import Settings


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


Argue = Callable[..., Result]


@pytest.fixture
def argue(capsys: pytest.CaptureFixture[str]) -> Argue:
    def run(*argv: str) -> Result:
        capsys.readouterr()
        code = cli_main.main(list(argv))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


def line_of(output: str, provider: str) -> str:
    return next(line for line in output.splitlines() if line.startswith(f"{provider} "))


def test_models_with_no_keys_shows_local_ready_and_the_rest_not_configured(argue: Argue) -> None:
    result = argue("models")
    assert result.code == 0
    local = line_of(result.out, "local")
    assert "ready" in local
    assert "SmolLM2-135M-Instruct (Q4_1) at " in local
    assert "model: smollm2-135m-instruct" in result.out
    anthropic = line_of(result.out, "anthropic")
    assert "not configured" in anthropic
    assert "ANTHROPIC_API_KEY not set" in anthropic
    assert f"model: {Settings().anthropic_model}" in result.out  # shown even unconfigured


def test_models_shows_a_missing_claude_binary_as_not_on_path(argue: Argue) -> None:
    claude = line_of(argue("models").out, "claude-cli")
    assert "not configured" in claude
    assert "`claude` not on PATH" in claude


def test_models_shows_a_claude_on_path_as_ready(
    argue: Argue, echo_cli: Callable[[str], Path], tmp_path: Path
) -> None:
    echo_cli("claude")
    claude = line_of(argue("models").out, "claude-cli")
    assert "ready" in claude
    assert str(tmp_path / "bin" / "claude") in claude


def test_models_json_lists_every_provider_with_its_state(argue: Argue) -> None:
    reports = json.loads(argue("models", "--json").out)
    by_name = {report["name"]: report for report in reports}
    assert list(by_name) == [
        "anthropic",
        "gemini",
        "openai",
        "local",
        "claude-cli",
        "gemini-cli",
        "codex-cli",
    ]
    assert by_name["local"]["configured"] is True
    assert by_name["local"]["models"] == ["smollm2-135m-instruct"]
    assert by_name["openai"]["configured"] is False
    assert by_name["openai"]["models"] == [Settings().openai_model]


@pytest.fixture
def fake_openai(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    llm_server = pytest.importorskip("tests.fakes.llm_server")
    with llm_server.FakeLLMServer() as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        yield server


def test_models_lists_what_an_openai_compatible_server_offers(
    argue: Argue, fake_openai: object
) -> None:
    fake_openai.set_models("openai", ["gpt-4o", "llama3.2:1b"])  # type: ignore[attr-defined]
    reports = json.loads(argue("models", "--json").out)
    openai = next(report for report in reports if report["name"] == "openai")
    assert openai["configured"] is True
    assert "llama3.2:1b" in openai["models"]


def test_ask_streams_a_cli_reply_and_reports_estimated_usage(
    argue: Argue, echo_cli: Callable[[str], Path]
) -> None:
    state = echo_cli("claude")
    prompt = 'Is "$(whoami)" safe?\n日本語で答えて'
    result = argue("ask", "--provider", "claude-cli", "--system", "Be brief.", prompt)
    assert result.code == 0
    assert result.out.startswith("Be brief.\n\n")
    assert prompt in result.out
    assert (state / "argv.txt").read_text() == "-p"
    assert "claude-cli · default" in result.err
    assert "(estimated)" in result.err
    assert " in, " in result.err


def test_ask_retries_a_failed_cli_call_and_prints_the_retry(
    argue: Argue, fake_cli: Callable[[str, str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_cli(
        "codex",
        """
        sys.stdin.read()
        first = not (STATE / "tried").exists()
        (STATE / "tried").touch()
        if first:
            print("upstream hiccup", file=sys.stderr)
            sys.exit(1)
        print("second time lucky")
        """,
    )
    monkeypatch.setenv("ARGUE_RETRY_BASE_DELAY", "0")
    result = argue("ask", "--provider", "codex-cli", "hello")
    assert result.code == 0
    assert result.out == "second time lucky\n"
    assert "upstream hiccup" in result.err
    assert "retry 1" in result.err


def test_ask_prints_the_provider_error_and_kind_and_exits_1(
    argue: Argue, fake_cli: Callable[[str, str], Path]
) -> None:
    fake_cli(
        "gemini",
        """
        sys.stdin.read()
        print("Please set an Auth method in your settings", file=sys.stderr)
        sys.exit(41)
        """,
    )
    result = argue("ask", "--provider", "gemini-cli", "hello")
    assert result.code == 1
    assert "gemini-cli failed (auth)" in result.err
    assert "Please set an Auth method" in result.err


def test_ask_an_unconfigured_provider_says_why_and_exits_2(argue: Argue) -> None:
    result = argue("ask", "--provider", "anthropic", "hello")
    assert result.code == 2
    assert result.out == ""
    assert "anthropic is not configured: ANTHROPIC_API_KEY not set" in result.err


@pytest.mark.parametrize("cap", ["0", "-3"])
def test_ask_refuses_a_reply_cap_below_one_token(argue: Argue, cap: str) -> None:
    result = argue("ask", "--provider", "local", "--max-tokens", cap, "hello")
    assert result.code == 2
    assert result.out == ""
    assert f"argue ask: --max-tokens must be at least 1 (got {cap})" in result.err


def test_ask_with_no_prompt_exits_2(argue: Argue, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", None)
    result = argue("ask", "--provider", "local")
    assert result.code == 2
    assert "give a prompt" in result.err


def test_ask_openai_streams_from_an_openai_compatible_server(
    argue: Argue, fake_openai: object
) -> None:
    fake_openai.script(provider="openai", reply="Hello from the wire")  # type: ignore[attr-defined]
    result = argue("ask", "--provider", "openai", "--model", "gpt-5-mini", "hi")
    assert result.code == 0
    assert result.out == "Hello from the wire\n"
    assert "openai · gpt-5-mini" in result.err
    assert "(estimated)" not in result.err


@pytest.mark.local_model
def test_ask_local_generates_real_text_with_counted_usage(argue: Argue) -> None:
    result = argue("ask", "--provider", "local", "--max-tokens", "8", "Name a colour.")
    assert result.code == 0
    assert result.out.strip()
    assert "local · smollm2-135m-instruct" in result.err
    assert " out" in result.err
    assert "(estimated)" not in result.err
