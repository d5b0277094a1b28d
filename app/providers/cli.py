"""The command-line providers: ``claude -p``, ``gemini -p`` and ``codex exec`` as subprocesses.

This is how the seed documents reached their models, and it lets a person use a CLI they are
already signed in to instead of an API key. The whole prompt — the system text and a rendered
transcript of the messages — goes to the child's **stdin**, never onto a command line and never
through a shell, so quotes, ``$(...)``, newlines and any language arrive byte for byte:

- ``claude -p`` with no prompt argument reads the prompt from stdin.
- ``gemini -p TEXT`` appends TEXT to whatever arrives on stdin; we pass a fixed one-line
  instruction as TEXT (our own constant, not user input) and the prompt on stdin.
- ``codex exec -`` reads the prompt from stdin. ``--skip-git-repo-check`` because Argue may run
  from any folder; codex's default sandbox is read-only, and it prints only the final answer on
  stdout (progress goes to stderr).

The model goes on the command line as one ``--model=NAME`` argument, so no name can be read
as an option; every other argument is our own constant.

stdout is streamed as it arrives; the CLIs report no token counts, so usage is estimated.
Stalls are the resilience layer's business; this module only guarantees that the child (and its
process group) dies when the consumer stops listening.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import re
import shutil
import signal
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from app.config import Settings
from app.providers.base import (
    ErrorKind,
    Finished,
    Message,
    ProviderError,
    ProviderStatus,
    TextDelta,
    Usage,
    estimate_tokens,
)

CLI_DEFAULT_MODEL = "default"
"""The model name meaning "whatever the CLI itself is configured to use": no ``--model``."""

GEMINI_INSTRUCTION = "Reply to the request above."
READ_SIZE = 4096
STDERR_KEEP = 64 * 1024
ERROR_LINES = 8

_AUTH_WORDS = re.compile(
    r"log ?in|auth|api[ _-]?key|credential|unauthori[sz]ed|sign ?in|not logged", re.IGNORECASE
)


@dataclass(frozen=True)
class CliCommand:
    """How one CLI is invoked: its fixed arguments around the model flag."""

    provider: str
    setting: str  # the Settings field holding the binary name or path
    env_name: str  # how a person overrides it
    head: tuple[str, ...]  # arguments before the model flag
    tail: tuple[str, ...]  # arguments after it

    def argv(self, binary: str, model: str) -> list[str]:
        # One argument, ``--model=NAME``: whatever the name, the CLI's option parser reads it
        # as the value of --model, never as an option of its own (``--model --yolo`` would
        # leave ``--yolo`` to be read as a flag).
        model_args = [f"--model={model}"] if model and model != CLI_DEFAULT_MODEL else []
        return [binary, *self.head, *model_args, *self.tail]


CLI_COMMANDS: dict[str, CliCommand] = {
    "claude-cli": CliCommand("claude-cli", "claude_cli", "ARGUE_CLAUDE_CLI", ("-p",), ()),
    "gemini-cli": CliCommand(
        "gemini-cli", "gemini_cli", "ARGUE_GEMINI_CLI", (), ("-p", GEMINI_INSTRUCTION)
    ),
    "codex-cli": CliCommand(
        "codex-cli", "codex_cli", "ARGUE_CODEX_CLI", ("exec", "--skip-git-repo-check"), ("-",)
    ),
}


def render_prompt(system: str, messages: Sequence[Message]) -> str:
    """One text a CLI can take on stdin: the system text, then the conversation.

    A single user message is passed as it is; a longer conversation is rendered as a
    transcript ending with the message to answer, because a CLI takes one prompt, not turns.
    """
    parts = [system.strip()] if system.strip() else []
    if len(messages) == 1 and messages[0].role == "user":
        parts.append(messages[0].content)
    elif messages:
        lines = ["The conversation so far (you are the assistant):"]
        for message in messages:
            speaker = "User" if message.role == "user" else "Assistant (you)"
            lines.append(f"\n[{speaker}]\n{message.content}")
        lines.append("\nWrite the assistant's next reply. Output only the reply.")
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def error_kind(stderr: str) -> ErrorKind:
    """A failing CLI says why only in words; sign-in problems are not worth retrying."""
    return ErrorKind.AUTH if _AUTH_WORDS.search(stderr) else ErrorKind.SERVER


def last_lines(text: str, count: int = ERROR_LINES) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return "\n".join(lines[-count:])


class CliProvider:
    """One CLI binary as a provider."""

    def __init__(self, command: CliCommand, settings: Settings) -> None:
        self.name = command.provider
        self.command = command
        self.binary: str = getattr(settings, command.setting)

    def resolved_binary(self) -> str | None:
        return shutil.which(self.binary)

    def status(self) -> ProviderStatus:
        found = self.resolved_binary()
        if found is None:
            reason = f"`{self.binary}` not on PATH (set {self.command.env_name})"
            return ProviderStatus(self.name, False, reason, CLI_DEFAULT_MODEL)
        return ProviderStatus(self.name, True, f"`{self.binary}` at {found}", CLI_DEFAULT_MODEL)

    async def list_models(self) -> list[str]:
        # No CLI lists its models; "default" defers to the CLI's own configuration.
        return [CLI_DEFAULT_MODEL]

    async def stream(
        self,
        *,
        model: str,
        system: str,
        messages: Sequence[Message],
        max_tokens: int,
    ) -> AsyncIterator[TextDelta | Finished]:
        # max_tokens: none of the CLIs takes an output cap, so it cannot be honoured here.
        prompt = render_prompt(system, messages)
        process = await self._start(model)
        feeder = asyncio.create_task(_feed_stdin(process, prompt.encode("utf-8")))
        stderr_task = asyncio.create_task(_drain(process.stderr))
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        output: list[str] = []
        try:
            assert process.stdout is not None
            while chunk := await process.stdout.read(READ_SIZE):
                if text := decoder.decode(chunk):
                    output.append(text)
                    yield TextDelta(text)
            if text := decoder.decode(b"", final=True):
                output.append(text)
                yield TextDelta(text)
            returncode = await process.wait()
            stderr = await stderr_task
            if returncode != 0:
                raise self._failure(returncode, stderr)
            usage = Usage(
                input_tokens=estimate_tokens(prompt),
                output_tokens=estimate_tokens("".join(output)),
                estimated=True,
            )
            yield Finished(usage=usage)  # a CLI does not say why it stopped
        finally:
            await _stop(process, feeder, stderr_task)

    async def _start(self, model: str) -> asyncio.subprocess.Process:
        binary = self.resolved_binary()
        if binary is None:
            raise ProviderError(
                kind=ErrorKind.NOT_FOUND,
                provider=self.name,
                message=f"`{self.binary}` is not on PATH (set {self.command.env_name})",
            )
        try:
            return await asyncio.create_subprocess_exec(
                *self.command.argv(binary, model),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                # Its own process group, so a CLI's helpers die with it on cancellation.
                start_new_session=True,
            )
        except OSError as exc:
            raise ProviderError(
                kind=ErrorKind.NOT_FOUND,
                provider=self.name,
                message=f"cannot run `{self.binary}`: {exc}",
            ) from exc

    def _failure(self, returncode: int, stderr: str) -> ProviderError:
        detail = last_lines(stderr) or "(no message on stderr)"
        return ProviderError(
            kind=error_kind(stderr),
            provider=self.name,
            message=f"`{self.binary}` exited with status {returncode}: {detail}",
        )


async def _feed_stdin(process: asyncio.subprocess.Process, data: bytes) -> None:
    # Written from its own task: a child that prints before it has read everything must not
    # deadlock against us waiting on a full pipe.
    assert process.stdin is not None
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        process.stdin.write(data)
        await process.stdin.drain()
        process.stdin.close()
        await process.stdin.wait_closed()


async def _drain(stream: asyncio.StreamReader | None) -> str:
    """Read a stream to its end, keeping only the tail (a chatty CLI must not fill memory)."""
    kept = b""
    if stream is not None:
        while chunk := await stream.read(READ_SIZE):
            kept = (kept + chunk)[-STDERR_KEEP:]
    return kept.decode("utf-8", errors="replace")


async def _stop(
    process: asyncio.subprocess.Process, *tasks: asyncio.Task[object] | asyncio.Task[None]
) -> None:
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            process.kill()
    for task in tasks:
        task.cancel()
    # Reap the child and let the helper tasks finish, even if we are being cancelled.
    await asyncio.shield(_reap(process, tasks))


async def _reap(
    process: asyncio.subprocess.Process,
    tasks: tuple[asyncio.Task[object] | asyncio.Task[None], ...],
) -> None:
    await process.wait()
    await asyncio.gather(*tasks, return_exceptions=True)


def build_cli_provider(name: str, settings: Settings) -> CliProvider:
    try:
        command = CLI_COMMANDS[name]
    except KeyError:
        raise ValueError(f"unknown CLI provider {name!r}") from None
    return CliProvider(command, settings)
