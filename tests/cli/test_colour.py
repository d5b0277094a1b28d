"""``argue run`` on a terminal shows colour and a progress line (round, phase, tokens so far,
time taken); piped, or with ``NO_COLOR`` set, its output stays plain text. A real process is
run on a pseudo-terminal (``pty``) or a pipe, as a person or a script would run it."""

from __future__ import annotations

import io
import os
import pty
import re
import select
import subprocess
import sys

import pytest

from app.cli.style import Style, colour_wanted
from app.cli.terminal import TerminalView
from app.config import PROJECT_ROOT
from tests.cli.conftest import DUEL_SEATS, script_agreement
from tests.fakes.llm_server import FakeLLMServer

COMMAND = [sys.executable, "-m", "app.cli.main", "run", "Is SQLite enough?", "--rounds", "2"]
SGR = re.compile(r"\x1b\[[0-9;]*m")  # a colour or weight: Select Graphic Rendition
STATUS = re.compile(r"round \d · .* · \d+ tok · \d+:\d\d")


def _on_a_terminal(env: dict[str, str]) -> str:
    """Everything ``argue run`` wrote to its terminal."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [*COMMAND, *DUEL_SEATS],
        cwd=PROJECT_ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
    )
    os.close(follower)
    chunks: list[bytes] = []
    try:
        while True:
            ready, _, _ = select.select([leader], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: the process is gone
                break
            if not chunk:
                break
            chunks.append(chunk)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(leader)
    assert process.returncode == 0, b"".join(chunks).decode("utf-8", "replace")
    return b"".join(chunks).decode("utf-8", "replace")


def _environment(**extra: str) -> dict[str, str]:
    """This test's environment (the fake server's keys and addresses) on a colour terminal."""
    env = {**os.environ, "TERM": "xterm-256color", "PYTHONUNBUFFERED": "1"}
    env.pop("NO_COLOR", None)
    return {**env, **extra}


@pytest.mark.timeout(120)
def test_on_a_terminal_run_shows_colour_and_a_progress_line(fake: FakeLLMServer) -> None:
    script_agreement(fake)
    fake.set_default_token_delay(0.02)

    shown = _on_a_terminal(_environment())

    assert SGR.search(shown), shown
    assert "\x1b[1m" in shown  # headings in bold
    assert STATUS.search(shown), shown
    plain = SGR.sub("", shown)
    assert "── Claude · openai:gpt-test · opening · round 1 ──" in plain
    assert "Agreed position: SQLite is enough for one box." in plain


@pytest.mark.timeout(120)
def test_no_color_keeps_a_terminal_free_of_colour(fake: FakeLLMServer) -> None:
    script_agreement(fake)

    shown = _on_a_terminal(_environment(NO_COLOR="1"))

    assert "── Claude · openai:gpt-test · opening · round 1 ──" in shown
    assert not SGR.search(shown), shown
    assert not STATUS.search(shown)


@pytest.mark.timeout(120)
def test_piped_output_has_no_escape_codes(fake: FakeLLMServer) -> None:
    script_agreement(fake)

    done = subprocess.run(
        [*COMMAND, *DUEL_SEATS],
        cwd=PROJECT_ROOT,
        env=_environment(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert "── Claude · openai:gpt-test · opening · round 1 ──" in done.stdout
    assert "\x1b" not in done.stdout + done.stderr


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("stream", "environ", "wanted"),
    [
        (_Tty(), {"TERM": "xterm"}, True),
        (_Tty(), {}, True),
        (_Tty(), {"TERM": "xterm", "NO_COLOR": "1"}, False),
        (_Tty(), {"TERM": "xterm", "NO_COLOR": "0"}, False),  # any non-empty value
        (_Tty(), {"TERM": "xterm", "NO_COLOR": ""}, True),  # empty means unset
        (_Tty(), {"TERM": "dumb"}, False),
        (io.StringIO(), {"TERM": "xterm"}, False),
    ],
)
def test_colour_is_wanted_only_on_a_capable_terminal_without_no_color(
    stream: io.StringIO, environ: dict[str, str], wanted: bool
) -> None:
    assert colour_wanted(stream, environ) is wanted


def test_a_failed_turn_is_red_and_the_progress_line_counts_tokens_and_time() -> None:
    out = io.StringIO()
    now = [100.0]
    view = TerminalView(out, style=Style(colour=True), clock=lambda: now[0])
    info = {
        "key": "r2.rebuttal.claude",
        "label": "Claude",
        "role": "claude",
        "provider": "openai",
        "model": "gpt-test",
        "phase": "rebuttal",
        "round": 2,
    }

    view.handle("usage", {"input_tokens": 300, "output_tokens": 40})
    view.handle("turn_started", info)
    view.handle("delta", {"key": info["key"], "text": "one two three\n"})
    now[0] = 165.0
    view.tick()

    shown = out.getvalue()
    assert "\x1b[2K" in shown
    assert "round 2 · rebuttal · Claude · 344 tok · 1:05" in SGR.sub("", shown)

    view.handle(
        "turn_failed",
        {**info, "error_kind": "server", "error_status": 500, "error_message": "GPU on fire"},
    )
    assert "\x1b[31m  ✗ Claude failed (server 500): GPU on fire" in out.getvalue()


def test_a_plain_view_draws_no_progress_line_and_no_colour() -> None:
    out = io.StringIO()
    view = TerminalView(out, live=False)
    info = {"key": "k", "label": "Claude", "provider": "openai", "model": "m", "phase": "rebuttal"}

    view.handle("turn_started", {**info, "round": 2})
    view.handle("delta", {"key": "k", "text": "text\n"})
    view.tick()

    assert out.getvalue() == "\n── Claude · openai:m · rebuttal · round 2 ──\ntext\n"
