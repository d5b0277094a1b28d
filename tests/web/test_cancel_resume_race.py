"""Cancel and resume sent at the same moment, over HTTP to the served app, again and again:
the debate never ends up queued with no job (which no later resume could recover)."""

from __future__ import annotations

import asyncio

import httpx

from app.jobs import JobManager
from tests.fakes.llm_server import FakeLLMServer
from tests.web.conftest import LiveServer

TRIES = 30
SETTLE_SECONDS = 10.0


async def current_status(http: httpx.AsyncClient, debate_id: str) -> str:
    response = await http.get(f"/api/debates/{debate_id}")
    assert response.status_code == 200, response.text
    status: str = response.json()["status"]
    return status


async def test_cancel_and_resume_sent_together_never_strand_the_debate(
    live_server: LiveServer, fake_llm: FakeLLMServer
) -> None:
    fake_llm.set_default_token_delay(0.2)  # turns stream for seconds: always one in flight
    jobs: JobManager = live_server.app.state.jobs
    async with httpx.AsyncClient(base_url=live_server.url, timeout=SETTLE_SECONDS) as http:
        started = await http.post("/api/debates", json={"topic": "Tabs or spaces?", "rounds": 8})
        assert started.status_code == 201, started.text
        debate_id = started.json()["id"]
        stranded = 0
        for _ in range(TRIES):
            cancel, resume = await asyncio.gather(
                http.post(f"/api/debates/{debate_id}/cancel"),
                http.post(f"/api/debates/{debate_id}/resume"),
            )
            assert cancel.status_code == 200, cancel.text
            assert resume.status_code in (200, 409), resume.text
            status = await current_status(http, debate_id)
            if status in ("queued", "running"):
                stranded += not jobs.is_running(debate_id)
            else:
                assert status == "cancelled", status
                again = await http.post(f"/api/debates/{debate_id}/resume")
                assert again.status_code == 200, again.text  # stopped, and resumable
        assert stranded == 0, f"{stranded} of {TRIES} tries left the debate with no job"
        assert (await http.post(f"/api/debates/{debate_id}/cancel")).status_code == 200
