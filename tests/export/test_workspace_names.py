"""A panel's workspace folder is its own: two panels begun in the same second get two folders
(``workspaces/debate_<stamp>_<id>``), each with its own files, and exporting a debate again
names the same folder."""

from __future__ import annotations

import io
import re
import zipfile
from datetime import datetime
from pathlib import Path

from app import export
from app.files import write_outputs
from app.models import Debate, Turn
from tests.export import samples

NOW = datetime(2026, 3, 19, 6, 0, 0)
WORKSPACE_NAME = re.compile(r"debate_\d{8}_\d{6}_[0-9a-f]+")


def two_panels_begun_in_the_same_second() -> list[tuple[Debate, list[Turn]]]:
    english, english_turns = samples.panel_en()
    japanese, japanese_turns = samples.panel_ja()
    assert english.created_at == japanese.created_at and english.id != japanese.id
    return [(english, english_turns), (japanese, japanese_turns)]


def test_two_panels_begun_in_the_same_second_get_their_own_workspaces(tmp_path: Path) -> None:
    written = [
        (debate, turns, write_outputs(data_dir=tmp_path, debate=debate, turns=turns, now=NOW))
        for debate, turns in two_panels_begun_in_the_same_second()
    ]

    folders = [outputs.workspace for _, _, outputs in written]
    assert folders[0] != folders[1]
    assert sorted(path.name for path in (tmp_path / "workspaces").iterdir()) == sorted(
        folder.name for folder in folders if folder is not None
    )
    for debate, turns, outputs in written:
        assert outputs.workspace is not None
        assert WORKSPACE_NAME.fullmatch(outputs.workspace.name)
        expected = export.workspace_files(debate, turns, date=NOW)
        on_disk = {
            path.relative_to(outputs.workspace).as_posix(): path.read_text(encoding="utf-8")
            for path in outputs.workspace.rglob("*.md")
        }
        assert on_disk == expected


def test_the_workspace_name_keeps_the_stamp_and_adds_the_debates_id() -> None:
    debate, _ = samples.panel_ja()
    assert export.workspace_name(debate) == "debate_20260319_053330_0f1e2d3c4b5a"


def test_exporting_again_rewrites_the_same_workspace(tmp_path: Path) -> None:
    debate, turns = samples.panel_en()
    first = write_outputs(data_dir=tmp_path, debate=debate, turns=turns, now=NOW)
    second = write_outputs(data_dir=tmp_path, debate=debate, turns=turns, now=NOW)
    assert first.workspace == second.workspace
    assert len(list((tmp_path / "workspaces").iterdir())) == 1


def test_the_report_the_zip_and_the_folder_name_the_same_workspace() -> None:
    debate, turns = samples.panel_en()
    name = export.workspace_name(debate)
    report = export.final_report_markdown(debate, turns, date=NOW)
    assert f"{name}/" in report
    archive = zipfile.ZipFile(io.BytesIO(export.workspace_zip(debate, turns, date=NOW)))
    assert {entry.split("/")[0] for entry in archive.namelist()} == {name}
