"""Deleting a debate (``app.deletion``): its rows and the files it wrote go, other debates and
their files stay, nothing outside the data folder is touched, and an active debate is
refused."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from app import deletion, export, files, store
from app.config import Settings
from app.db import session_scope
from app.models import utcnow
from app.spec import DebateSpec, Outcome, Seat
from app.store import DebateActive

DUEL_SEATS = (Seat("claude", "Claude", "anthropic"), Seat("gemini", "Gemini", "gemini"))


def finished_debate(
    engine: Engine,
    data_dir: Path,
    *,
    topic: str,
    synthesis: str,
    format: str = "duel",
    topic_type: str = "general",
    history: bool = False,
    finished_ago: timedelta = timedelta(0),
) -> str:
    """A completed debate with one turn, its files written as the runner writes them."""
    spec = DebateSpec(
        topic=topic,
        format=format,  # type: ignore[arg-type]
        topic_type=topic_type,  # type: ignore[arg-type]
        seats=DUEL_SEATS,
        history=history,
    )
    now = utcnow() - finished_ago
    with session_scope(engine) as session:
        debate = store.create_debate(session, spec=spec)
        debate_id = debate.id
        store.record_turn(
            session,
            debate_id=debate_id,
            key="r1.opening.claude",
            role="claude",
            label="Claude",
            provider="anthropic",
            model="claude-test",
            phase="opening",
            round=1,
            status="completed",
            text=f"Opening of {topic}",
            verdict=None,
            error_kind=None,
            error_message=None,
            input_tokens=10,
            output_tokens=5,
            usage_estimated=False,
            attempts=1,
            started_at=now,
            finished_at=now,
        )
        finished = store.finish_debate(
            session,
            debate_id=debate_id,
            status="completed",
            outcome=Outcome(rounds_run=1, converged=True, synthesis=synthesis),
        )
        finished.finished_at = now
    with session_scope(engine) as session:
        debate = store.get_debate(session, debate_id=debate_id)
        assert debate is not None
        turns = store.turns_of(session, debate_id=debate_id)
        outputs = files.write_outputs(data_dir=data_dir, debate=debate, turns=turns, now=now)
        store.set_outputs(session, debate_id=debate_id, outputs=outputs.as_json())
    return debate_id


def outputs_of(engine: Engine, debate_id: str) -> dict[str, str]:
    with session_scope(engine) as session:
        debate = store.get_debate(session, debate_id=debate_id)
        assert debate is not None
        return {name: value for name, value in (debate.outputs or {}).items() if value}


def rows_of(engine: Engine, debate_id: str) -> tuple[bool, int]:
    with session_scope(engine) as session:
        exists = store.get_debate(session, debate_id=debate_id) is not None
        return exists, len(store.turns_of(session, debate_id=debate_id))


def test_deleting_removes_the_rows_and_every_file_the_debate_wrote(
    engine: Engine, settings: Settings
) -> None:
    data_dir = settings.data_dir
    kept = finished_debate(
        engine, data_dir, topic="Monorepo or polyrepo", synthesis="Kept.", format="panel"
    )
    gone = finished_debate(
        engine,
        data_dir,
        topic="Plan the v2 API",
        synthesis="Deleted plan.",
        topic_type="plan",
        history=True,
    )
    written = outputs_of(engine, gone)
    assert set(written) == {"finals", "history", "plan"}
    assert all(Path(path).is_file() for path in written.values())
    kept_files = sorted(path for path in data_dir.rglob("*") if kept in str(path))

    result = deletion.delete_debate(engine, debate_id=gone, data_dir=data_dir)

    assert rows_of(engine, gone) == (False, 0)
    assert not any(Path(path).exists() for path in written.values())
    assert set(result.removed) == {Path(path) for path in written.values()}
    assert rows_of(engine, kept) == (True, 1)
    assert all(Path(path).exists() for path in outputs_of(engine, kept).values())
    assert sorted(path for path in data_dir.rglob("*") if kept in str(path)) == kept_files


def test_deleting_a_panel_removes_its_workspace_folder(engine: Engine, settings: Settings) -> None:
    data_dir = settings.data_dir
    debate_id = finished_debate(
        engine, data_dir, topic="Remote work", synthesis="Both.", format="panel"
    )
    [workspace] = (data_dir / "workspaces").glob(f"debate_*_{debate_id}")
    assert (workspace / "3_report" / "final_report.md").is_file()

    result = deletion.delete_debate(engine, debate_id=debate_id, data_dir=data_dir)

    assert not workspace.exists()
    assert workspace in result.removed
    assert not (data_dir / "finals" / "remote-work.md").exists()


def test_a_finals_file_shared_by_topic_goes_back_to_the_debate_that_remains(
    engine: Engine, settings: Settings
) -> None:
    data_dir = settings.data_dir
    older = finished_debate(
        engine,
        data_dir,
        topic="Tabs or spaces",
        synthesis="The older debate's synthesis.",
        finished_ago=timedelta(hours=1),
    )
    newer = finished_debate(
        engine, data_dir, topic="Tabs or spaces", synthesis="The newer debate's synthesis."
    )
    finals = data_dir / "finals" / export.finals_filename("tabs-or-spaces")
    assert "newer debate" in finals.read_text(encoding="utf-8")

    deletion.delete_debate(engine, debate_id=newer, data_dir=data_dir)

    text = finals.read_text(encoding="utf-8")
    assert "The older debate's synthesis." in text
    assert "newer debate" not in text
    assert rows_of(engine, older) == (True, 1)


def test_files_outside_the_data_folder_are_never_removed(
    engine: Engine, settings: Settings, tmp_path: Path
) -> None:
    data_dir = settings.data_dir
    debate_id = finished_debate(engine, data_dir, topic="Outside paths", synthesis="S.")
    outside = tmp_path / "not-argue" / "precious.md"
    outside.parent.mkdir()
    outside.write_text("keep me", encoding="utf-8")
    escape = data_dir / "finals" / ".." / ".." / "not-argue" / "precious.md"
    with session_scope(engine) as session:
        store.set_outputs(
            session,
            debate_id=debate_id,
            outputs={"finals": str(outside), "history": str(escape), "plan": "/etc/hostname"},
        )

    result = deletion.delete_debate(engine, debate_id=debate_id, data_dir=data_dir)

    assert outside.read_text(encoding="utf-8") == "keep me"
    assert result.removed == ()
    assert rows_of(engine, debate_id) == (False, 0)


@pytest.mark.parametrize("status", ["queued", "running"])
def test_a_queued_or_running_debate_is_refused_and_kept(
    engine: Engine, settings: Settings, status: str
) -> None:
    debate_id = finished_debate(engine, settings.data_dir, topic="Still going", synthesis="S.")
    with session_scope(engine) as session:
        store.set_status(session, debate_id=debate_id, status=status)
    finals = Path(outputs_of(engine, debate_id)["finals"])

    with pytest.raises(DebateActive) as refused:
        deletion.delete_debate(engine, debate_id=debate_id, data_dir=settings.data_dir)

    assert refused.value.status == status
    assert "cancel it" in str(refused.value)
    assert rows_of(engine, debate_id) == (True, 1)
    assert finals.is_file()


def test_an_unknown_debate_is_a_lookup_error(engine: Engine, settings: Settings) -> None:
    with pytest.raises(LookupError):
        deletion.delete_debate(engine, debate_id="0123456789ab", data_dir=settings.data_dir)
