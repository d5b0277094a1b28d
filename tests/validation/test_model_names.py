"""Model names follow one rule wherever they are typed (the JSON API, the form, ``argue run
--seat``/``--model``): letters, digits and ``. _ : / @ + -``, never starting with ``-``. A
name that a command line could read as an option is refused, naming the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.cli.main import main
from tests.validation.test_api_input import locs, refused
from tests.validation.test_form_input import error_beside, form_fields

OPTION_LIKE = ("--yolo", "-m", "--dangerously-skip-permissions")
NOT_A_NAME = ("gpt 5", "gpt\t5", "gpt\n5", "m\x1b[31m", "m\x00", "a;rm", "$(id)", "mo`del`")
REAL_NAMES = (
    "claude-sonnet-4-5",
    "gemini-2.5-flash",
    "gpt-5",
    "llama3.1:8b",
    "meta-llama/Llama-3.1-8B-Instruct",
    "claude-3-5-sonnet@20240620",
    "ft:gpt-4o-mini:org:custom:abc123",
    "qwen2.5-coder:7b-instruct-q4_K_M",
)


@pytest.mark.parametrize("name", OPTION_LIKE)
def test_an_option_like_seat_model_is_refused_by_the_api_naming_the_field(
    client: TestClient, name: str
) -> None:
    body: dict[str, Any] = {
        "topic": "x",
        "seats": {"claude": {"provider": "openai", "model": name}},
    }
    (item,) = refused(client, json=body)
    assert tuple(item["loc"]) == ("body", "seats", "claude", "model")
    assert "cannot start with '-'" in item["msg"]


@pytest.mark.parametrize("name", [*OPTION_LIKE, *NOT_A_NAME])
def test_the_apis_gemini_model_override_follows_the_same_rule(
    client: TestClient, name: str
) -> None:
    assert ("body", "model") in locs(refused(client, json={"topic": "x", "model": name}))


@pytest.mark.parametrize("name", NOT_A_NAME)
def test_a_model_name_with_other_characters_is_refused_by_the_api(
    client: TestClient, name: str
) -> None:
    body = {"topic": "x", "seats": {"gemini": {"provider": "gemini", "model": name}}}
    assert ("body", "seats", "gemini", "model") in locs(refused(client, json=body))


@pytest.mark.parametrize("name", REAL_NAMES)
def test_real_model_names_are_accepted(client: TestClient, name: str) -> None:
    body = {"topic": "x", "seats": {"claude": {"provider": "openai", "model": name}}}
    response = client.post("/api/debates", json=body)
    assert response.status_code == 201, response.text
    seats = {seat["role"]: seat["model"] for seat in response.json()["seats"]}
    assert seats["claude"] == name


def test_the_form_refuses_an_option_like_model_beside_its_field(client: TestClient) -> None:
    response = client.post("/debates", data=form_fields(**{"model-duel-claude": "--yolo"}))
    assert response.status_code == 422
    assert "cannot start with &#39;-&#39;" in error_beside(response.text, "model-duel-claude")


@pytest.mark.parametrize(
    "args",
    [
        ("--seat", "claude=openai:--yolo"),
        ("--model=--yolo",),
    ],
)
def test_the_command_line_refuses_an_option_like_model(
    args: tuple[str, ...],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    # Were the name let through, the debate would fail at once instead of running a model.
    monkeypatch.setenv("ARGUE_LOCAL_MODEL_PATH", str(tmp_path / "no-such-model.gguf"))
    code = main(["run", "a topic", *args])
    err = capsys.readouterr().err
    assert code == 2
    assert "model" in err and "cannot start with '-'" in err
