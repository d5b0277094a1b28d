"""Argue's own long-running processes (``argue worker``, the provider worker) run on uvloop
where it is installed, and on asyncio's loop where it is not."""

from __future__ import annotations

import asyncio
import sys

import pytest
import uvloop

from app import event_loop


async def running_loop_type() -> type[asyncio.AbstractEventLoop]:
    return type(asyncio.get_running_loop())


def test_run_uses_uvloop_where_it_is_installed() -> None:
    assert issubclass(event_loop.run(running_loop_type()), uvloop.Loop)


def test_run_falls_back_to_asyncio_without_uvloop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop now raises ImportError
    loop_type = event_loop.run(running_loop_type())
    assert not issubclass(loop_type, uvloop.Loop)
    assert issubclass(loop_type, asyncio.BaseEventLoop)


def test_argue_worker_serves_on_the_fast_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """``argue worker`` hands its whole life to ``event_loop.run``."""
    from app import workers
    from app.cli import main as cli

    seen: list[type[asyncio.AbstractEventLoop]] = []

    async def serve(settings: object, *, concurrency: int, name: str) -> None:
        seen.append(await running_loop_type())

    monkeypatch.setattr(workers, "serve", serve)
    monkeypatch.setattr("app.debate_queue.require_postgresql", lambda settings: None)
    monkeypatch.setenv("ARGUE_RUN_DEBATES", "workers")
    assert cli.main(["worker", "--name", "w-test"]) == 0
    assert len(seen) == 1 and issubclass(seen[0], uvloop.Loop)
