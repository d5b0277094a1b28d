"""Writing a debate's files: finals, history with retention, plan handoff, panel workspace."""

from __future__ import annotations

import os
import random
from datetime import datetime, timedelta
from pathlib import Path

from app import export
from app.files import Outputs, prune_history, write_outputs
from tests.export import samples

NOW = datetime(2026, 3, 19, 6, 0, 0)
PAST = datetime(2020, 1, 1).timestamp()


def _set_mtime(path: Path, seconds: float) -> None:
    os.utime(path, (seconds, seconds))


def test_finals_is_always_written_and_overwritten(tmp_path: Path) -> None:
    debate = samples.debate(converged=True, rounds_run=2, synthesis="Agreed position: first.")
    first = write_outputs(data_dir=tmp_path, debate=debate, turns=[], now=NOW)
    assert first.finals == tmp_path / "finals" / "should-we-use-postgres-or-sqlite.md"
    debate.synthesis = "Agreed position: second."
    second = write_outputs(data_dir=tmp_path, debate=debate, turns=[], now=NOW)
    assert second.finals == first.finals
    assert first.finals.read_bytes() == export.finals_markdown(debate, date=NOW).encode()
    assert list((tmp_path / "finals").iterdir()) == [first.finals]  # no temporary left behind


def test_without_history_flag_no_history_is_written(tmp_path: Path) -> None:
    outputs = write_outputs(data_dir=tmp_path, debate=samples.debate(), turns=[], now=NOW)
    assert outputs == Outputs(finals=outputs.finals)
    assert not (tmp_path / "history").exists()
    assert not (tmp_path / "plans").exists()
    assert not (tmp_path / "workspaces").exists()


def test_history_file_holds_the_transcript(tmp_path: Path) -> None:
    debate = samples.duel_converged()
    outputs = write_outputs(data_dir=tmp_path, debate=debate, turns=samples.duel_turns(), now=NOW)
    assert outputs.history == (
        tmp_path / "history" / "should-we-use-postgres-or-sqlite-general-20260319T060000.md"
    )
    expected = export.transcript_markdown(debate, samples.duel_turns())
    assert outputs.history.read_text(encoding="utf-8") == expected


def test_seven_history_writes_keep_the_five_newest(tmp_path: Path) -> None:
    debate = samples.duel_converged()
    written = []
    for index in range(7):
        outputs = write_outputs(
            data_dir=tmp_path, debate=debate, turns=[], now=NOW + timedelta(minutes=index)
        )
        assert outputs.history is not None
        written.append(outputs.history)
        # Explicit, increasing mtimes, all older than the next real write.
        _set_mtime(outputs.history, PAST + index)
    remaining = sorted((tmp_path / "history").iterdir())
    assert remaining == written[2:]


def test_retention_goes_by_modification_time_not_name(tmp_path: Path) -> None:
    folder = tmp_path / "history"
    folder.mkdir()
    names = [f"abc-general-2026010{day}T000000.md" for day in range(1, 8)]
    for age, name in enumerate(names):
        (folder / name).write_text("x")
        # The earliest stamp in its name is the newest on disk.
        _set_mtime(folder / name, PAST - age)
    deleted = prune_history(folder, slug="abc", keep=5)
    assert sorted(path.name for path in deleted) == names[5:]
    assert sorted(path.name for path in folder.iterdir()) == names[:5]


def test_retention_never_touches_other_slugs_or_other_files(tmp_path: Path) -> None:
    folder = tmp_path / "history"
    folder.mkdir()
    others = [
        "abc-def-general-20200101T000000.md",  # slug "abc-def", shares the prefix "abc-"
        "abc-general-general-20200101T000000.md",  # slug "abc-general"
        "abcd-tech-20200101T000000.md",
        "abc-notes.md",
        "abc-general-20200101T000000.md.bak",
    ]
    for name in others:
        (folder / name).write_text("keep me")
        _set_mtime(folder / name, PAST - 1000)
    for day in range(1, 8):
        kind = ("general", "plan", "bug", "tech")[day % 4]
        path = folder / f"abc-{kind}-2026010{day}T000000.md"
        path.write_text("mine")
        _set_mtime(path, PAST + day)
    prune_history(folder, slug="abc", keep=5)
    left = {path.name for path in folder.iterdir()}
    assert set(others) <= left
    mine = left - set(others)
    # Every topic type of the slug counts toward its five.
    assert mine == {
        "abc-tech-20260103T000000.md",
        "abc-general-20260104T000000.md",
        "abc-plan-20260105T000000.md",
        "abc-bug-20260106T000000.md",
        "abc-tech-20260107T000000.md",
    }


def test_plan_topic_writes_the_synthesis_to_a_whimsical_plan(tmp_path: Path) -> None:
    debate = samples.duel_split()
    outputs = write_outputs(
        data_dir=tmp_path, debate=debate, turns=samples.duel_turns(), now=NOW, rng=random.Random(3)
    )
    assert outputs.plan is not None
    assert outputs.plan.parent == tmp_path / "plans"
    assert len(outputs.plan.stem.split("-")) == 3
    written = outputs.plan.read_text(encoding="utf-8")
    assert written == export.plan_markdown(debate, samples.duel_turns(), date=NOW)
    assert written.endswith(f"## Plan\n\n{samples.SPLIT_SYNTHESIS}\n")


def test_plan_file_says_what_it_is_about_and_where_it_came_from(tmp_path: Path) -> None:
    debate = samples.duel_split()
    outputs = write_outputs(data_dir=tmp_path, debate=debate, turns=[], now=NOW)
    assert outputs.plan is not None
    written = outputs.plan.read_text(encoding="utf-8")
    assert written.startswith("# Argue plan: Ship the export feature\n")
    assert "- **Date**: 2026-03-19\n" in written
    assert f"- **From debate**: {debate.id} (duel · plan · " in written


def test_plan_name_does_not_collide_with_an_existing_plan(tmp_path: Path) -> None:
    plans = tmp_path / "plans"
    plans.mkdir()
    taken = export.whimsical_name(set(), random.Random(3))
    (plans / f"{taken}.md").write_text("someone else's plan")
    outputs = write_outputs(
        data_dir=tmp_path, debate=samples.duel_split(), turns=[], now=NOW, rng=random.Random(3)
    )
    assert outputs.plan is not None
    assert outputs.plan.stem != taken
    assert (plans / f"{taken}.md").read_text() == "someone else's plan"


def test_exporting_a_plan_again_rewrites_the_same_plan(tmp_path: Path) -> None:
    debate = samples.duel_split()
    first = write_outputs(data_dir=tmp_path, debate=debate, turns=[], now=NOW)
    debate.outputs = first.as_json()
    second = write_outputs(data_dir=tmp_path, debate=debate, turns=[], now=NOW)
    assert second.plan == first.plan
    assert len(list((tmp_path / "plans").iterdir())) == 1


def test_panel_writes_its_workspace_and_report_as_finals(tmp_path: Path) -> None:
    debate, turns = samples.panel_en()
    outputs = write_outputs(data_dir=tmp_path, debate=debate, turns=turns, now=NOW)
    assert outputs.workspace == tmp_path / "workspaces" / f"debate_20260319_053330_{debate.id}"
    expected = export.workspace_files(debate, turns, date=NOW)
    written = {
        path.relative_to(outputs.workspace).as_posix(): path.read_text(encoding="utf-8")
        for path in outputs.workspace.rglob("*.md")
    }
    assert written == expected
    assert sorted(p.name for p in outputs.workspace.iterdir()) == [
        "1_claims",
        "2_summaries",
        "3_report",
    ]
    assert outputs.finals.read_text(encoding="utf-8") == expected["3_report/final_report.md"]


def test_japanese_topic_files_are_named_by_debate_id(tmp_path: Path) -> None:
    debate, turns = samples.panel_ja()
    debate.history = True
    outputs = write_outputs(data_dir=tmp_path, debate=debate, turns=turns, now=NOW)
    assert outputs.finals.name == "debate-0f1e2d3c4b5a.md"
    assert outputs.history is not None
    assert outputs.history.name == "debate-0f1e2d3c4b5a-general-20260319T060000.md"
    assert "テスト" in outputs.finals.read_text(encoding="utf-8")


def test_outputs_as_json_names_every_path(tmp_path: Path) -> None:
    outputs = Outputs(finals=tmp_path / "f.md", plan=tmp_path / "p.md")
    assert outputs.as_json() == {
        "finals": str(tmp_path / "f.md"),
        "history": None,
        "plan": str(tmp_path / "p.md"),
        "workspace": None,
    }
