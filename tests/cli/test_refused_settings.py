"""A setting the environment gives wrong stops every command with one line that names the
variable to change, exit code 2, no traceback, and never the value: a database or Redis URL
whose password lacks the ``@host`` after it would otherwise reach the terminal (and any log
collecting it) inside the parser's complaint about the port."""

from __future__ import annotations

import pytest

from app.cli.main import main

PASSWORD = "s3cret-pass"


def _refusal(command: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(command)
    printed = capsys.readouterr()
    return code, printed.out, printed.err


@pytest.mark.parametrize("command", [["serve", "--port", "0"], ["worker"], ["list"]])
@pytest.mark.parametrize(
    ("variable", "written"),
    [
        ("ARGUE_DATABASE_URL", f"postgresql://argue:{PASSWORD}/argue"),
        ("ARGUE_REDIS_URL", f"redis://:{PASSWORD}/0"),
    ],
)
def test_a_url_whose_password_lacks_its_host_is_refused_in_one_line_that_hides_it(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: list[str],
    variable: str,
    written: str,
) -> None:
    monkeypatch.setenv(variable, written)

    code, out, err = _refusal(command, capsys)

    assert code == 2
    assert err.startswith(f"argue: {variable} cannot be read: its port is not a number")
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert PASSWORD not in out + err


@pytest.mark.parametrize("written", ["inf", "1e400", "nan", "-inf"])
def test_a_number_of_seconds_that_is_not_finite_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], written: str
) -> None:
    monkeypatch.setenv("ARGUE_REQUEST_TIMEOUT", written)
    monkeypatch.setenv("ARGUE_RETRY_MAX_DELAY", written)

    code, _, err = _refusal(["list"], capsys)

    assert code == 2
    assert err.splitlines() == [
        "argue: ARGUE_RETRY_MAX_DELAY: Input should be a finite number",
        "argue: ARGUE_REQUEST_TIMEOUT: Input should be a finite number",
    ]


def test_a_value_outside_a_settings_choices_names_the_variable_and_the_choices(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ARGUE_RUN_DEBATES", "Workers")

    code, _, err = _refusal(["worker"], capsys)

    assert code == 2
    assert err == "argue: ARGUE_RUN_DEBATES: Input should be 'in-process' or 'workers'\n"


def test_every_refused_variable_gets_its_own_line_and_no_value_is_quoted(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ARGUE_WORKER_CONCURRENCY", "0")
    monkeypatch.setenv("ARGUE_REDIS_URL", f"http://:{PASSWORD}@cache:6379")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-never-shown")
    monkeypatch.setenv("ARGUE_MAX_OUTPUT_TOKENS", "sk-ant-never-shown")

    code, out, err = _refusal(["list"], capsys)

    assert code == 2
    assert err.splitlines() == [
        "argue: ARGUE_MAX_OUTPUT_TOKENS: Input should be a valid integer, unable to parse "
        "string as an integer",
        "argue: ARGUE_WORKER_CONCURRENCY: Input should be greater than or equal to 1",
        "argue: ARGUE_REDIS_URL must start with redis://, rediss://, unix://",
    ]
    assert PASSWORD not in out + err and "sk-ant" not in out + err
