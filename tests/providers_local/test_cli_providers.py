"""The CLI providers against fake ``claude`` / ``gemini`` / ``codex`` executables on PATH."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from app.config import Settings
from app.providers.base import ErrorKind, Finished, Message, ProviderError, TextDelta
from app.providers.cli import GEMINI_INSTRUCTION, build_cli_provider, render_prompt
from bench.processes import is_alive

NASTY = 'He said "don\'t" `uname` $(rm -rf /) $HOME; \\n\n\tnext line\n日本語のテキスト — ok'
SYSTEM = "You are 'terse' & \"exact\"."


async def collect(provider_name: str, settings: Settings, **kwargs: object) -> list[object]:
    provider = build_cli_provider(provider_name, settings)
    args: dict[str, object] = {
        "model": "default",
        "system": SYSTEM,
        "messages": (Message("user", NASTY),),
        "max_tokens": 100,
    }
    args.update(kwargs)
    return [event async for event in provider.stream(**args)]  # type: ignore[arg-type]


def text_of(events: list[object]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


async def test_prompt_reaches_claude_stdin_byte_for_byte_and_never_argv(
    settings: Settings, echo_cli: Callable[[str], Path]
) -> None:
    state = echo_cli("claude")
    events = await collect("claude-cli", settings)
    assert text_of(events) == render_prompt(SYSTEM, [Message("user", NASTY)])
    assert NASTY in text_of(events)
    assert (state / "argv.txt").read_text() == "-p"


async def test_usage_is_estimated_from_prompt_and_reply(
    settings: Settings, echo_cli: Callable[[str], Path]
) -> None:
    echo_cli("claude")
    events = await collect("claude-cli", settings)
    finished = events[-1]
    assert isinstance(finished, Finished)
    assert finished.usage.estimated is True
    assert finished.usage.input_tokens > 10
    assert finished.usage.output_tokens == finished.usage.input_tokens  # the echo is the prompt


@pytest.mark.parametrize(
    ("provider", "binary", "model", "argv"),
    [
        ("claude-cli", "claude", "opus", ["-p", "--model=opus"]),
        (
            "gemini-cli",
            "gemini",
            "gemini-2.5-flash",
            ["--model=gemini-2.5-flash", "-p", GEMINI_INSTRUCTION],
        ),
        ("gemini-cli", "gemini", "default", ["-p", GEMINI_INSTRUCTION]),
        ("codex-cli", "codex", "o3", ["exec", "--skip-git-repo-check", "--model=o3", "-"]),
    ],
)
async def test_each_cli_gets_its_fixed_arguments_and_the_prompt_on_stdin(
    settings: Settings,
    echo_cli: Callable[[str], Path],
    provider: str,
    binary: str,
    model: str,
    argv: list[str],
) -> None:
    state = echo_cli(binary)
    events = await collect(provider, settings, model=model)
    assert (state / "argv.txt").read_text().split("\n") == argv
    assert NASTY in text_of(events)


async def test_binary_name_comes_from_settings(
    echo_cli: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    echo_cli("my-claude")
    monkeypatch.setenv("ARGUE_CLAUDE_CLI", "my-claude")
    events = await collect("claude-cli", Settings())
    assert NASTY in text_of(events)


async def test_output_streams_while_the_process_is_still_running(
    settings: Settings, fake_cli: Callable[[str, str], Path]
) -> None:
    state = fake_cli(
        "claude",
        """
        sys.stdin.read()
        print("first part", flush=True)
        while not (STATE / "gate").exists():  # held until the test has seen the first part
            time.sleep(0.01)
        print("second part", flush=True)
        """,
    )
    provider = build_cli_provider("claude-cli", settings)
    stream = provider.stream(
        model="default", system="", messages=[Message("user", "x")], max_tokens=5
    )
    first = await asyncio.wait_for(anext(stream), 10)
    assert isinstance(first, TextDelta)
    assert first.text.startswith("first")  # arrived while the CLI waits for the gate
    (state / "gate").touch()
    rest = [event async for event in stream]
    assert first.text + text_of(rest) == "first part\nsecond part\n"
    assert isinstance(rest[-1], Finished)


async def test_multibyte_text_split_across_reads_is_decoded_intact(
    settings: Settings, fake_cli: Callable[[str, str], Path]
) -> None:
    fake_cli(
        "gemini",
        """
        sys.stdin.read()
        data = "日本語で議論する".encode()
        for i in range(0, len(data), 2):  # cut through the middle of every character
            sys.stdout.buffer.write(data[i:i + 2])
            sys.stdout.buffer.flush()
            time.sleep(0.005)
        """,
    )
    events = await collect("gemini-cli", settings)
    assert text_of(events) == "日本語で議論する"
    assert all("\ufffd" not in e.text for e in events if isinstance(e, TextDelta))


async def test_nonzero_exit_is_a_server_error_carrying_stderr_tail(
    settings: Settings, fake_cli: Callable[[str, str], Path]
) -> None:
    fake_cli(
        "codex",
        """
        sys.stdin.read()
        for i in range(20):
            print(f"noise {i}", file=sys.stderr)
        print("model is overloaded, try again", file=sys.stderr)
        sys.exit(3)
        """,
    )
    with pytest.raises(ProviderError) as caught:
        await collect("codex-cli", settings)
    error = caught.value
    assert error.kind is ErrorKind.SERVER
    assert error.retryable is True
    assert error.provider == "codex-cli"
    assert "status 3" in error.message
    assert "model is overloaded, try again" in error.message
    assert "noise 0" not in error.message  # only the last lines


async def test_login_complaint_on_stderr_is_an_auth_error_not_retried(
    settings: Settings, fake_cli: Callable[[str, str], Path]
) -> None:
    fake_cli(
        "claude",
        """
        sys.stdin.read()
        print("Invalid API key · Please run /login", file=sys.stderr)
        sys.exit(1)
        """,
    )
    with pytest.raises(ProviderError) as caught:
        await collect("claude-cli", settings)
    assert caught.value.kind is ErrorKind.AUTH
    assert caught.value.retryable is False
    assert "Please run /login" in caught.value.message


async def test_missing_binary_is_not_configured_and_raises_not_found(settings: Settings) -> None:
    provider = build_cli_provider("claude-cli", settings)
    status = provider.status()
    assert status.configured is False
    assert "`claude` not on PATH" in status.reason
    with pytest.raises(ProviderError) as caught:
        await collect("claude-cli", settings)
    assert caught.value.kind is ErrorKind.NOT_FOUND
    assert caught.value.retryable is False


async def test_present_binary_is_configured_with_its_path(
    settings: Settings, echo_cli: Callable[[str], Path], tmp_path: Path
) -> None:
    echo_cli("codex")
    status = build_cli_provider("codex-cli", settings).status()
    assert status.configured is True
    assert str(tmp_path / "bin" / "codex") in status.reason
    assert status.default_model == "default"


async def test_closing_the_stream_kills_the_cli_and_its_children(
    settings: Settings, fake_cli: Callable[[str, str], Path]
) -> None:
    state = fake_cli(
        "claude",
        """
        import subprocess
        sys.stdin.read()
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        (STATE / "pids").write_text(f"{os.getpid()} {child.pid}")
        print("working", flush=True)
        time.sleep(600)
        """,
    )
    provider = build_cli_provider("claude-cli", settings)
    stream = provider.stream(
        model="default", system="", messages=[Message("user", "x")], max_tokens=5
    )
    first = await asyncio.wait_for(anext(stream), 10)
    assert isinstance(first, TextDelta)
    cli_pid, child_pid = map(int, (state / "pids").read_text().split())
    await asyncio.wait_for(stream.aclose(), 10)  # type: ignore[attr-defined]
    assert not is_alive(cli_pid)
    for _ in range(200):  # the grandchild is reaped by init, not by us: give it a moment
        if not is_alive(child_pid):
            break
        await asyncio.sleep(0.01)
    assert not is_alive(child_pid)


async def test_cancelling_the_consumer_task_kills_the_cli(
    settings: Settings, fake_cli: Callable[[str, str], Path]
) -> None:
    state = fake_cli(
        "claude",
        """
        sys.stdin.read()
        (STATE / "pid").write_text(str(os.getpid()))
        print("working", flush=True)
        time.sleep(600)
        """,
    )
    provider = build_cli_provider("claude-cli", settings)
    started = asyncio.Event()

    async def consume() -> None:
        async for _ in provider.stream(
            model="default", system="", messages=[Message("user", "x")], max_tokens=5
        ):
            started.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not is_alive(int((state / "pid").read_text()))


def test_a_conversation_is_rendered_as_a_transcript_ending_with_the_last_message() -> None:
    messages = [
        Message("user", "Opening: cats."),
        Message("assistant", "Dogs, surely."),
        Message("user", "Rebut that."),
    ]
    prompt = render_prompt("Debate well.", messages)
    assert prompt.startswith("Debate well.\n\n")
    order = [prompt.index(m.content) for m in messages]
    assert order == sorted(order)
    assert "[Assistant (you)]\nDogs, surely." in prompt
    assert prompt.rstrip().endswith("Output only the reply.")


def test_unknown_cli_provider_is_a_value_error(settings: Settings) -> None:
    with pytest.raises(ValueError, match="unknown CLI provider"):
        build_cli_provider("cursor-cli", settings)
