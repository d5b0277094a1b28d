"""Fixtures for the validation tests: the web app on the fake LLM server (as in tests/web),
and finished debates whose topic, turns, errors and synthesis are hostile text, saved straight
to the store so a page can be checked without running a model."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from app import store
from app.config import Settings
from app.db import session_scope
from app.models import utcnow
from app.spec import DebateSpec, Outcome, Seat
from app.web.app import create_app
from tests.web.conftest import LiveServer, http_providers, serve, stop

GIANT_TOKEN = "A" * 5000
SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"
JS_LINK = "[x](javascript:alert(1))"
IFRAME = '<iframe src="javascript:alert(1)"></iframe>'
STYLE = "<style>body{display:none}</style>"
HTML_BLOCK = '<div onclick="alert(1)">\n<b>raw block</b>\n</div>'
SVG = "<svg onload=alert(1)>"
AUTOLINK = "<javascript:alert(1)>"
PAYLOADS = (SCRIPT, IMG, JS_LINK, IFRAME, STYLE, HTML_BLOCK, SVG, AUTOLINK, GIANT_TOKEN)
HOSTILE_TEXT = "\n\n".join(PAYLOADS)


@pytest.fixture
def app(settings: Settings) -> FastAPI:
    return create_app(settings, providers=http_providers(settings))


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app) as client:
        yield client


@dataclass(frozen=True)
class TurnText:
    key: str
    role: str
    phase: str
    text: str
    status: str = "completed"
    error_message: str | None = None


def hostile_turns(text: str = HOSTILE_TEXT) -> tuple[TurnText, ...]:
    return (
        TurnText("r1.opening.claude", "claude", "opening", text),
        TurnText("r1.opening.gemini", "gemini", "opening", text),
        TurnText(
            "r1.rebuttal.claude",
            "claude",
            "rebuttal",
            "",
            status="failed",
            error_message=f"upstream said {SCRIPT} {IMG} {GIANT_TOKEN}",
        ),
    )


def save_debate(
    engine: Engine,
    *,
    topic: str,
    turns: Sequence[TurnText] = (),
    status: str = "completed",
    synthesis: str | None = None,
    reason: str | None = None,
    token_budget: int | None = None,
) -> str:
    """A duel saved with ``turns`` and ended with ``status``; no job runs."""
    spec = DebateSpec(
        topic=topic,
        format="duel",
        rounds=1,
        seats=(Seat("claude", "Claude", "anthropic"), Seat("gemini", "Gemini", "gemini")),
    )
    with session_scope(engine) as session:
        debate = store.create_debate(session, spec=spec, token_budget=token_budget)
        debate_id = debate.id
        for turn in turns:
            now = utcnow()
            store.record_turn(
                session,
                debate_id=debate_id,
                key=turn.key,
                role=turn.role,
                label=turn.role.title(),
                provider="anthropic",
                model="claude-test",
                phase=turn.phase,
                round=1,
                status=turn.status,
                text=turn.text,
                verdict=None,
                error_kind="bad_request" if turn.status == "failed" else None,
                error_message=turn.error_message,
                input_tokens=120,
                output_tokens=80,
                usage_estimated=False,
                attempts=1,
                started_at=now,
                finished_at=now,
            )
        outcome = Outcome(rounds_run=1, converged=False, synthesis=synthesis or "")
        store.finish_debate(
            session,
            debate_id=debate_id,
            status=status,
            outcome=outcome if status == "completed" else None,
            reason=reason,
        )
    return debate_id


# -- checking a page for live markup ---------------------------------------------------------

# Tags that run code, load content or restyle the page; none may come from text.
ACTIVE_TAGS = frozenset(
    {"script", "iframe", "style", "img", "svg", "object", "embed", "frame", "link", "base", "form"}
)
URL_ATTRIBUTES = frozenset({"href", "src", "action", "formaction", "xlink:href", "data"})


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {name: value or "" for name, value in attrs}))


def page_tags(html: str) -> list[tuple[str, dict[str, str]]]:
    parser = _Tags()
    parser.feed(html)
    parser.close()
    return parser.tags


def live_markup(html: str, *, allowed: Iterable[tuple[str, dict[str, str]]] = ()) -> list[str]:
    """Everything in ``html`` that a browser would run or load: active tags (other than the
    ``allowed`` ones, the page's own), event-handler attributes and script URLs."""
    own = [(tag, attrs) for tag, attrs in allowed]
    problems: list[str] = []
    for tag, attrs in page_tags(html):
        if tag in ACTIVE_TAGS and (tag, attrs) not in own:
            problems.append(f"<{tag} {attrs}>")
        for name, value in attrs.items():
            if name.startswith("on"):
                problems.append(f"{name}= on <{tag}>")
            scheme = "".join(value.split()).lower()
            if name in URL_ATTRIBUTES and scheme.startswith(("javascript:", "vbscript:", "data:")):
                problems.append(f'{name}="{value}" on <{tag}>')
    return problems


def own_tags(html: str) -> list[tuple[str, dict[str, str]]]:
    """The page's own active tags, as the layout writes them: its scripts, its stylesheet and
    its forms (the app's own actions, checked separately by what they point at)."""
    own = []
    for tag, attrs in page_tags(html):
        source = attrs.get("src", "") or attrs.get("href", "") or attrs.get("action", "")
        asset = tag in ("script", "link") and source.startswith(("/static/", "https://cdn."))
        if asset or (tag == "form" and source.startswith("/debates")):
            own.append((tag, attrs))
    return own


def inline_scripts(html: str) -> list[str]:
    """Bodies of <script> elements that have no ``src``: none may hold text from a model."""
    return re.findall(r"<script(?![^>]*\bsrc=)[^>]*>(.*?)</script>", html, flags=re.S | re.I)


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def visible_text(html: str) -> str:
    """The text a reader sees (entities decoded), each tag a space, whitespace collapsed."""
    parser = _Text()
    parser.feed(html)
    parser.close()
    return " ".join(" ".join(parser.parts).split())


@pytest.fixture
def live_server(app: FastAPI) -> Iterator[LiveServer]:
    live = serve(app)
    try:
        yield live
    finally:
        stop(live)
