"""Context files: cut to their first 300 lines; what cannot be read is skipped, never an error."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from app.context import MAX_CONTEXT_LINES, cut_context, read_context_files


def numbered(count: int, newline: str = "\n") -> str:
    return "".join(f"line {n}{newline}" for n in range(1, count + 1))


def test_cut_context_keeps_the_first_300_lines_of_a_longer_text() -> None:
    cut = cut_context("big.py", numbered(301))
    assert MAX_CONTEXT_LINES == 300
    assert cut.text == numbered(300)
    assert cut.total_lines == 301
    assert cut.truncated is True
    assert cut.path == "big.py"


def test_cut_context_keeps_a_300_line_text_whole() -> None:
    cut = cut_context("exact.py", numbered(300))
    assert cut.text == numbered(300)
    assert (cut.total_lines, cut.truncated) == (300, False)


def test_cut_context_counts_a_last_line_without_newline() -> None:
    cut = cut_context("short.txt", "a\nb\nc")
    assert (cut.text, cut.total_lines, cut.truncated) == ("a\nb\nc", 3, False)


def test_cut_context_of_empty_text() -> None:
    cut = cut_context("empty.txt", "")
    assert (cut.text, cut.total_lines, cut.truncated) == ("", 0, False)


def test_cut_context_keeps_crlf_line_endings_and_counts_them_as_lines() -> None:
    cut = cut_context("win.txt", numbered(400, "\r\n"))
    assert cut.text == numbered(300, "\r\n")
    assert cut.total_lines == 400


def test_read_context_files_reads_and_cuts_each_file(tmp_path: Path) -> None:
    small = tmp_path / "small.py"
    small.write_text("print('hi')\n", encoding="utf-8")
    big = tmp_path / "big.log"
    big.write_text(numbered(1000), encoding="utf-8")
    files, skipped = read_context_files([str(small), str(big)])
    assert skipped == ()
    assert [f.path for f in files] == [str(small), str(big)]
    assert files[0].text == "print('hi')\n"
    assert files[0].truncated is False
    assert files[1].text == numbered(300)
    assert (files[1].total_lines, files[1].truncated) == (1000, True)


def test_read_context_files_agrees_with_cut_context(tmp_path: Path) -> None:
    text = numbered(350, "\r\n") + "tail without newline"
    path = tmp_path / "mixed.txt"
    path.write_bytes(text.encode("utf-8"))
    [read], _ = read_context_files([str(path)])
    assert read == cut_context(str(path), text)


def test_read_context_files_lists_unreadable_paths_as_skipped(tmp_path: Path) -> None:
    good = tmp_path / "good.md"
    good.write_text("# ok\n", encoding="utf-8")
    binary = tmp_path / "image.png"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    missing = tmp_path / "missing.py"
    folder = tmp_path / "folder"
    folder.mkdir()
    files, skipped = read_context_files([str(missing), str(good), str(folder), str(binary)])
    assert [f.path for f in files] == [str(good)]
    assert skipped == (str(missing), str(folder), str(binary))


NOBODY = 65534


@contextmanager
def without_root() -> Iterator[None]:
    """Root reads any file, so as root the read runs with the effective user ``nobody``
    (which also drops the capabilities that bypass permissions) and gets root back after."""
    if os.geteuid() != 0:
        yield
        return
    os.seteuid(NOBODY)
    try:
        yield
    finally:
        os.seteuid(0)


def test_read_context_files_skips_a_file_without_read_permission() -> None:
    # A folder of its own that everyone may enter: only the file's own mode may refuse.
    folder = Path(tempfile.mkdtemp())
    folder.chmod(0o755)
    secret = folder / "secret.txt"
    secret.write_text("no\n", encoding="utf-8")
    try:
        secret.chmod(0o644)
        with without_root():
            readable, _ = read_context_files([str(secret)])
        assert [file.text for file in readable] == ["no\n"]
        secret.chmod(0)
        with without_root():
            assert read_context_files([str(secret)]) == ((), (str(secret),))
    finally:
        shutil.rmtree(folder)


def test_read_context_files_ignores_blank_entries_and_strips_spaces(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("a\n", encoding="utf-8")
    files, skipped = read_context_files(["", f"  {path} ", "   "])
    assert [f.path for f in files] == [str(path)]
    assert skipped == ()


def test_read_context_files_replaces_invalid_utf8_instead_of_skipping(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes("café\n".encode("latin-1"))
    [read], skipped = read_context_files([str(path)])
    assert skipped == ()
    assert read.text == "caf\ufffd\n"


def test_read_context_files_expands_the_home_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "notes.txt").write_text("hello\n", encoding="utf-8")
    [read], _ = read_context_files(["~/notes.txt"])
    assert read.path == "~/notes.txt"
    assert read.text == "hello\n"
