"""The debate queue's own connections: each statement the queue library sends through its
pool commits by itself (no ``COMMIT`` round trip after it, on the worker's event loop), while
its LISTEN connection, opened with the pool's connection arguments, still hears notices."""

from __future__ import annotations

import asyncio
from pathlib import Path

import psycopg

from app.debate_queue import conninfo, make_app
from tests.cluster.conftest import workers_settings
from tests.fakes.llm_server import FakeLLMServer

CHANNEL = "argue_test_channel"


async def test_the_queues_pooled_connections_commit_each_statement_and_it_still_listens(
    fake_llm: FakeLLMServer, tmp_path: Path, database_url: str
) -> None:
    settings = workers_settings(fake_llm, tmp_path, database_url)
    queue_app = make_app(settings)
    heard: list[str | None] = []

    async def on_notification(*, channel: str, payload: str) -> None:
        heard.append(payload)

    async with queue_app.open_async():
        connector = queue_app.connector
        async with connector.pool.connection() as connection:  # type: ignore[attr-defined]
            assert connection.autocommit
        listener = asyncio.create_task(
            connector.listen_notify(on_notification=on_notification, channels=[CHANNEL])
        )
        try:
            async with await psycopg.AsyncConnection.connect(
                conninfo(settings), autocommit=True
            ) as notifier:
                for _ in range(100):  # until the listener has started listening
                    await notifier.execute(f"NOTIFY {CHANNEL}, 'hello'")
                    await asyncio.sleep(0.1)
                    if heard:
                        break
        finally:
            listener.cancel()
            await asyncio.gather(listener, return_exceptions=True)
    assert heard and heard[0] == "hello"


async def test_a_queue_connection_the_server_ended_is_replaced_before_it_is_handed_out(
    fake_llm: FakeLLMServer, tmp_path: Path, database_url: str
) -> None:
    settings = workers_settings(fake_llm, tmp_path, database_url)
    queue_app = make_app(settings, min_size=1, max_size=1)

    async with queue_app.open_async():
        pool = queue_app.connector.pool  # type: ignore[attr-defined]
        async with pool.connection() as connection:
            first = await backend_pid(connection)
        async with await psycopg.AsyncConnection.connect(
            conninfo(settings), autocommit=True
        ) as admin:
            await admin.execute("SELECT pg_terminate_backend(%s)", (first,))
        await asyncio.sleep(0.2)  # the server's notice reaches the idle connection's socket
        async with pool.connection() as connection:
            second = await backend_pid(connection)  # would raise on the dead connection

    assert second != first


async def backend_pid(connection: psycopg.AsyncConnection[object]) -> int:
    cursor = await connection.execute("SELECT pg_backend_pid()")
    row = await cursor.fetchone()
    assert row is not None
    pid: int = row[0]
    return pid
