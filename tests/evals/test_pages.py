"""The eval pages: the list of runs, and a run's SVG chart (one bar and one interval line
per condition, placed by its figures), its items, their links to debates, and model text
kept inert."""

from __future__ import annotations

import asyncio
import re

from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from sqlmodel import Session

from app.config import Settings
from app.evals import store as eval_store
from app.evals.chart import BOTTOM, HEIGHT, TOP
from app.evals.harness import Harness
from app.evals.tasks import arithmetic
from app.spec import Seat
from app.web.app import create_app
from tests.evals.conftest import script_answers
from tests.fakes.llm_server import FakeLLMServer
from tests.web.conftest import http_providers

SOLVER = (Seat(role="solver", label="Solver", provider="openai"),)
DUEL = (
    Seat(role="claude", label="Claude", provider="openai"),
    Seat(role="gemini", label="Gemini", provider="openai"),
)


def run_eval(engine: Engine, harness: Harness, fake: FakeLLMServer) -> str:
    questions = arithmetic(4, seed=9)
    script_answers(fake, questions[:3], [True, True, False])
    fake.rule(contains=questions[3].text, reply="<script>alert(1)</script> no answer here")
    with Session(engine) as session:
        run = eval_store.create_run(
            session,
            task="arithmetic",
            seed=9,
            rounds=1,
            samples=3,
            conditions=["single", "majority", "duel"],
            seats={"single": SOLVER, "majority": SOLVER, "duel": DUEL},
            questions=questions,
        )
        session.commit()
        run_id = run.id
    asyncio.run(harness.run(run_id))
    return run_id


def test_a_run_page_draws_a_bar_and_an_interval_per_condition(
    eval_engine: Engine, harness: Harness, fake_llm: FakeLLMServer, settings: Settings
) -> None:
    run_id = run_eval(eval_engine, harness, fake_llm)
    app: FastAPI = create_app(settings, providers=http_providers(settings))
    with TestClient(app) as client:
        listing = client.get("/evals")
        page = client.get(f"/evals/{run_id}")
        missing = client.get("/evals/0000deadbeef")

    assert listing.status_code == 200
    assert f'href="/evals/{run_id}"' in listing.text
    assert "single 50.0% (4)" in listing.text
    assert page.status_code == 200
    svg = re.search(r"<svg class=\"eval-chart\".*?</svg>", page.text, re.DOTALL)
    assert svg is not None
    bars = re.findall(
        r'<rect class="bar" x="[\d.]+" y="([\d.]+)" width="[\d.]+" height="([\d.]+)"', svg.group()
    )
    intervals = re.findall(r'<line class="interval" .*? y1="([\d.]+)" y2="([\d.]+)"', svg.group())
    assert len(bars) == 3 and len(intervals) == 3
    plot = HEIGHT - TOP - BOTTOM
    # Every condition got 2 of 4 right: bars half the plot high, Wilson 2/4 = 15.0%–85.0%.
    assert {round(float(height) / plot, 3) for _, height in bars} == {0.5}
    low_y, high_y = (float(v) for v in intervals[0])
    assert round(1 - (low_y - TOP) / plot, 3) == 0.15
    assert round(1 - (high_y - TOP) / plot, 3) == 0.85
    assert "<script" not in page.text.split("<main", 1)[1]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert page.text.count('href="/debates/') == 4  # one duel per question
    assert page.text.count(">unparsable</em>") == 3  # the fourth question, every condition
    assert missing.status_code == 404
