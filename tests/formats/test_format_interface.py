"""Everything about a format is behind one interface: every registered format provides every
part; a format built here, registered through the one registration point and nowhere else,
runs end to end (API, runner, debate page, Markdown exports, ``argue show``, the form); and a
format that leaves out a part fails when it is defined, instantiated or registered."""

from __future__ import annotations

import inspect
import sys
import types
from collections.abc import Iterator, Mapping, Sequence
from datetime import date as Date
from typing import TYPE_CHECKING, Any

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.formats import (
    REGISTERED,
    Format,
    FormatError,
    Heading,
    Judging,
    Layout,
    Phase,
    Workspace,
    format_names,
    get_format,
    registered,
)
from app.spec import CompletedTurn, DebateSpec, Message, Outcome, Seat, TurnPlan
from app.web.app import create_app
from tests.fakes.llm_server import FakeLLMServer
from tests.web.conftest import http_providers, wait_for_debate

if TYPE_CHECKING:
    from app.models import Debate, Turn

# -- a toy format, built here: two seats that each answer once ------------------------------

TOY_MODULE = "tests.formats.toy_format"
OPENING_ASK = "Open on the question"
REPLY_ASK = "Reply to the opening"


class Toy(Format):
    """The first seat opens, the second replies; the reply is the synthesis."""

    name = "toy"
    title = "Toy"
    description = "two seats: one opens, one replies"
    layout = Layout(
        phases=(
            Phase("open", "Toy opening", message=True, round_heading=True),
            Phase("reply", "Toy reply", message=True, round_heading=True),
        )
    )
    topic_prompt = "What should the toy discuss? "
    eval_summary = "the toy's reply gives the answer"
    workspace = Workspace(folders=("notes",), files=lambda debate, turns, date: _toy_files(turns))
    rounds_meaning = None
    judging = (Judging("second", "the replier", ("first",)),)

    def default_seats(self) -> tuple[Seat, ...]:
        return (
            Seat(role="first", label="First voice", provider="openai"),
            Seat(role="second", label="Second voice", provider="anthropic"),
        )

    def plan(self, spec: DebateSpec, done: tuple[CompletedTurn, ...]) -> list[TurnPlan]:
        by_key = {turn.key: turn for turn in done}
        opening = by_key.get("r1.open.first")
        if opening is None:
            return [_plan("r1.open.first", "first", "open", 1, f"{OPENING_ASK}: {spec.topic}")]
        if "r2.reply.second" not in by_key:
            ask = f"{REPLY_ASK}: {opening.text}"
            return [_plan("r2.reply.second", "second", "reply", 2, ask)]
        return []

    def verdict(self, plan: TurnPlan, text: str) -> dict[str, Any] | None:
        return None

    def outcome(self, spec: DebateSpec, done: tuple[CompletedTurn, ...]) -> Outcome:
        replies = [turn.text for turn in done if turn.phase == "reply"]
        rounds_run = max((turn.round for turn in done), default=0)
        return Outcome(rounds_run=rounds_run, converged=None, synthesis="".join(replies))

    def round_limit(self, rounds: int) -> int | None:
        return 2

    def notes(self, spec: DebateSpec) -> tuple[str, ...]:
        return ("a toy",)

    def outcome_heading(self, *, converged: bool | None, rounds_run: int) -> Heading:
        return Heading("The toy's last word")

    def report_heading(self, *, completed: bool, converged: bool | None, rounds_run: int) -> str:
        return "The toy's last word"

    def convergence_note(self, converged: bool | None) -> str | None:
        return None

    def cli_rounds(self, rounds_run: int | None, rounds: int) -> str:
        return f"{rounds_run or 0} of 2"

    def finals_markdown(self, debate: Debate, turns: Sequence[Turn], *, date: Date) -> str:
        return f"# Toy finals: {debate.topic}\n\n{debate.synthesis or ''}\n"

    def hands_over_plan(self, topic_type: str) -> bool:
        return False


def _plan(key: str, role: str, phase: str, round: int, ask: str) -> TurnPlan:
    return TurnPlan(
        key=key,
        role=role,
        phase=phase,
        round=round,
        system="You are a toy.",
        messages=(Message(role="user", content=ask),),
    )


def _toy_files(turns: Sequence[Turn]) -> Mapping[str, str]:
    return {f"notes/{turn.role}.md": turn.text for turn in turns if turn.status == "completed"}


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    """The web app, its providers talking to the fake LLM server (as in ``tests/web``)."""
    with TestClient(create_app(settings, providers=http_providers(settings))) as client:
        yield client


@pytest.fixture
def toy() -> Iterator[Format]:
    """The toy's module, registered for the test through the one registration point."""
    module = types.ModuleType(TOY_MODULE)
    module.FORMAT = Toy()  # type: ignore[attr-defined]
    sys.modules[TOY_MODULE] = module
    try:
        with registered(TOY_MODULE) as fmt:
            yield fmt
    finally:
        del sys.modules[TOY_MODULE]


# -- (a) every registered format provides every part ----------------------------------------


@pytest.mark.parametrize("name", format_names())
def test_every_registered_format_provides_every_part(name: str) -> None:
    fmt = get_format(name)
    assert not inspect.isabstract(type(fmt))
    assert fmt.name == name and fmt.title and fmt.description
    assert fmt.topic_prompt.strip() and fmt.eval_summary.strip()
    assert fmt.default_seats(), "a format has seats"
    assert fmt.layout.phases, "a format has phases to show"
    assert fmt.layout.message_phases, "a transcript has messages"
    heading = fmt.outcome_heading(converged=True, rounds_run=1)
    assert heading.text.strip()
    assert fmt.report_heading(completed=True, converged=True, rounds_run=1).strip()
    assert fmt.cli_rounds(1, 4).strip()
    # Every phase the planner starts with is one the page has a heading for.
    spec = DebateSpec(topic="Is this a question?", format=name, seats=fmt.default_seats())
    for plan in fmt.plan(spec, ()):
        assert fmt.layout.phase(plan.phase) is not None, plan.phase


# -- (b) a format registered in one place runs end to end --------------------------------


def test_a_format_registered_only_through_the_registry_runs_everywhere(
    toy: Format, client: TestClient, fake_llm: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_llm.rule(contains=OPENING_ASK, reply="Opening: toys are serious.")
    fake_llm.rule(contains=REPLY_ASK, reply="Reply: only on weekends.")

    form = client.get("/").text
    assert 'name="format" value="toy"' in form
    assert "<strong>Toy</strong> — two seats: one opens, one replies" in form
    assert '<fieldset class="seats-set" data-format="toy">' in form
    assert 'name="seat-toy-first"' in form and 'name="seat-toy-second"' in form
    stylesheet = client.get("/static/formats.css").text
    assert '[value="toy"]:checked) .seats-set:not([data-format="toy"])' in stylesheet

    response = client.post("/api/debates", json={"topic": "Are toys serious?", "format": "toy"})
    assert response.status_code == 201, response.text
    debate_id = response.json()["id"]
    assert wait_for_debate(client, debate_id) == "completed"

    page = client.get(f"/debates/{debate_id}").text
    headings = [
        '<h2 class="round" id="round-1" data-upsert="keep">Round 1</h2>',
        '<h3 class="group-title">Toy opening</h3>',
        '<h2 class="round" id="round-2" data-upsert="keep">Round 2</h2>',
        '<h3 class="group-title">Toy reply</h3>',
    ]
    places = [page.find(heading) for heading in headings]
    assert -1 not in places and places == sorted(places), places
    assert "toy · general · up to 2 rounds · a toy" in page
    assert "The toy&#39;s last word" in page or "The toy's last word" in page
    assert "Opening: toys are serious." in page and "Reply: only on weekends." in page
    assert f"/debates/{debate_id}/workspace.zip" in page
    assert f"/debates/{debate_id}/plan.md" not in page

    finals = client.get(f"/debates/{debate_id}/finals.md").text
    assert finals.startswith("# Toy finals: Are toys serious?\n\nReply: only on weekends.")
    transcript = client.get(f"/debates/{debate_id}/transcript.md").text
    assert "- **Rounds**: 2 of 2" in transcript
    assert transcript.index("### Round 1 · open · First voice") < transcript.index(
        "### Round 2 · reply · Second voice"
    )
    assert "Opening: toys are serious." in transcript
    workspace = client.get(f"/debates/{debate_id}/workspace.zip")
    assert workspace.status_code == 200
    report = client.get(f"/debates/{debate_id}/report.html").text
    assert "The toy&#39;s last word" in report or "The toy's last word" in report

    from app.cli.main import main

    capsys.readouterr()
    assert main(["show", debate_id]) == 0
    shown = capsys.readouterr().out
    assert "Format:   toy" in shown
    assert "Opening: toys are serious." in shown and "Reply: only on weekends." in shown
    assert main(["list"]) == 0
    assert "2 of 2" in capsys.readouterr().out


def test_a_format_is_registered_only_while_its_registration_lasts() -> None:
    module = types.ModuleType(TOY_MODULE)
    module.FORMAT = Toy()  # type: ignore[attr-defined]
    sys.modules[TOY_MODULE] = module
    try:
        with registered(TOY_MODULE):
            assert format_names() == ("duel", "panel", "society", "toy")
    finally:
        del sys.modules[TOY_MODULE]
    assert format_names() == ("duel", "panel", "society")
    assert TOY_MODULE not in REGISTERED


def test_an_unregistered_format_is_refused_by_the_api_as_before(client: TestClient) -> None:
    response = client.post("/api/debates", json={"topic": "x", "format": "toy"})
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["loc"] == ["body", "format"]
    assert error["msg"] == "Input should be 'duel', 'panel' or 'society'"


# -- (c) a format that leaves out a part fails loudly -----------------------------------------


def test_a_format_without_a_required_value_fails_when_defined() -> None:
    with pytest.raises(FormatError, match="does not provide layout"):

        class NoLayout(Format):
            name = "nolayout"
            title = "No layout"
            description = "forgot its page"
            topic_prompt = "? "
            eval_summary = "-"
            workspace = None
            rounds_meaning = None
            judging = ()


def test_a_format_with_a_bad_name_fails_when_defined() -> None:
    with pytest.raises(FormatError, match="is not 1-16 lower-case"):

        class Shouty(Toy):
            name = "A Very Long Format Name"


def test_a_format_without_a_required_method_fails_when_instantiated() -> None:
    # The toy's parts, all but its finals.
    parts = {key: value for key, value in vars(Toy).items() if not key.startswith("__")}
    del parts["finals_markdown"]
    no_finals = type("NoFinals", (Format,), parts)
    with pytest.raises(TypeError, match="finals_markdown"):
        no_finals()


def test_a_registered_module_without_a_format_fails_at_registration() -> None:
    module = types.ModuleType("tests.formats.not_a_format")
    sys.modules[module.__name__] = module
    try:
        with pytest.raises(FormatError, match="registers no format"), registered(module.__name__):
            pass
    finally:
        del sys.modules[module.__name__]
    assert module.__name__ not in REGISTERED and format_names() == ("duel", "panel", "society")
