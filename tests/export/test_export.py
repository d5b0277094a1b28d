"""The pure exports: finals, history transcript, panel report and workspace, plan names."""

from __future__ import annotations

import io
import random
import re
import zipfile
from datetime import date, datetime
from typing import Any

import pytest

from app import export
from tests.export import samples
from tests.export.goldens import assert_golden

DAY = date(2026, 3, 19)
REPORT_TIME = datetime(2026, 3, 19, 5, 41, 2)


# ---------------------------------------------------------------- duel finals


def test_finals_is_exactly_the_seed_block() -> None:
    text = export.finals_markdown(samples.duel_converged(), date=DAY)
    assert text == (
        "# Argue: Should we use Postgres or SQLite\n"
        "**Type**: general  **Rounds**: 3  **Converged**: yes\n"
        "**Date**: 2026-03-19\n"
        "\n"
        "## Synthesis\n"
        "\n"
        f"{samples.CONVERGED_SYNTHESIS}\n"
    )


def test_finals_of_converged_duel_matches_golden() -> None:
    assert_golden("finals_converged.md", export.finals_markdown(samples.duel_converged(), date=DAY))


def test_finals_of_unconverged_duel_says_no_and_ends_with_one_newline() -> None:
    text = export.finals_markdown(samples.duel_split(), date=datetime(2026, 3, 20, 23, 59))
    assert "**Type**: plan  **Rounds**: 3  **Converged**: no\n**Date**: 2026-03-20\n" in text
    assert text.endswith(
        "Best available synthesis: start on SQLite behind a thin repository layer.\n"
    )
    assert not text.endswith("\n\n")
    assert_golden("finals_not_converged.md", text)


def test_finals_of_unfinished_duel_still_has_the_block() -> None:
    text = export.finals_markdown(samples.debate(converged=None), date=DAY)
    assert "**Rounds**: 0  **Converged**: no\n" in text
    assert text.endswith("## Synthesis\n\n\n")


# ---------------------------------------------------------------- duel history


def test_history_transcript_matches_golden() -> None:
    text = export.transcript_markdown(samples.duel_converged(), samples.duel_turns())
    assert_golden("history_duel.md", text)


def _turn_headings(text: str) -> list[str]:
    return re.findall(r"^### (.*)$", text, flags=re.MULTILINE)


def test_transcript_holds_the_exchange_in_reading_order() -> None:
    text = export.transcript_markdown(samples.duel_converged(), samples.duel_turns())
    assert [heading.split(" · ")[2] for heading in _turn_headings(text)] == [
        "Claude (local:smollm2)",  # Claude's opening reads first though Gemini's finished first
        "Gemini (local:smollm2)",
        "Claude (local:smollm2)",
        "Gemini (local:smollm2)",
        "Claude (local:smollm2)",
        "Gemini (local:smollm2)",
    ]
    round_one = text.split("## Round 1\n\n", 1)[1].split("\n\n## Round 2", 1)[0]
    assert round_one == (
        "### Round 1 · opening · Claude (local:smollm2)\n\nSQLite: one file, zero operations.\n\n"
        "_Cost: $0.00 · 0 in / 0 out tokens_\n\n"
        "### Round 1 · opening · Gemini (local:smollm2)\n\nPostgres: it scales with the team.\n\n"
        "_Cost: $0.00 · 0 in / 0 out tokens_"
    )


def test_transcript_leaves_out_seed_convergence_checks_and_synthesis() -> None:
    text = export.transcript_markdown(samples.duel_converged(), samples.duel_turns())
    assert "Seed analysis" not in text
    assert "NOT CONVERGED" not in text
    assert "Agreed position" not in text


def test_transcript_names_seats_never_user_or_model() -> None:
    text = export.transcript_markdown(samples.duel_converged(), samples.duel_turns())
    seats = {heading.split(" · ")[2].split(" (")[0] for heading in _turn_headings(text)}
    assert seats == {"Claude", "Gemini"}
    assert not re.search(r"^\*\*(User|Model|Assistant)\*\*", text, flags=re.MULTILINE)


def test_transcript_lists_a_failed_turn_as_failed_without_content() -> None:
    text = export.transcript_markdown(samples.duel_converged(), samples.duel_turns())
    assert text.endswith(
        "### Round 3 · response · Gemini (local:smollm2)\n\n"
        "_(this turn failed: server error 500)_\n"
    )


def test_panel_transcript_has_every_turn_with_its_label() -> None:
    debate, turns = samples.panel_en()
    text = export.transcript_markdown(debate, turns)
    names = [heading.split(" · ", 2)[2].split(" (")[0] for heading in _turn_headings(text)]
    assert names[:6] == [
        "Pro · Claude",
        "Pro · Gemini",
        "Pro · Codex",
        "Con · Claude",
        "Con · Gemini",
        "Con · Codex",
    ]
    assert names[-3:] == ["Pro summarizer", "Con summarizer", "Judge"]
    assert (
        "### Round 1 · claim · Con · Codex (local:smollm2)\n\n_(this turn failed: rate limited)_"
        in text
    )


# ---------------------------------------------------------------- names


def test_history_filename_has_slug_type_and_compact_stamp() -> None:
    when = datetime(2026, 3, 19, 5, 33, 30)
    assert export.history_filename("pg-vs-sqlite", "tech", when) == (
        "pg-vs-sqlite-tech-20260319T053330.md"
    )


def test_finals_filename_is_the_slug() -> None:
    assert export.finals_filename("pg-vs-sqlite") == "pg-vs-sqlite.md"


def test_japanese_topic_falls_back_to_debate_id_for_file_names() -> None:
    debate, _ = samples.panel_ja()
    assert debate.slug == ""
    assert export.file_slug(debate) == "debate-0f1e2d3c4b5a"


def test_ascii_topic_keeps_its_slug() -> None:
    assert export.file_slug(samples.duel_converged()) == "should-we-use-postgres-or-sqlite"


def test_workspace_is_named_by_when_the_debate_began_and_its_id() -> None:
    debate = samples.duel_converged()
    assert export.workspace_name(debate) == f"debate_20260319_053330_{debate.id}"


# ---------------------------------------------------------------- panel report


def test_english_final_report_matches_golden() -> None:
    debate, turns = samples.panel_en()
    assert_golden(
        "final_report_en.md", export.final_report_markdown(debate, turns, date=REPORT_TIME)
    )


def test_japanese_final_report_matches_golden() -> None:
    debate, turns = samples.panel_ja()
    assert_golden(
        "final_report_ja.md", export.final_report_markdown(debate, turns, date=REPORT_TIME)
    )


def test_japanese_report_table_is_the_seed_table() -> None:
    debate, turns = samples.panel_ja()
    text = export.final_report_markdown(debate, turns, date=REPORT_TIME)
    assert (
        "| 評価軸 | 賛成派 | 反対派 |\n"
        "|---|---|---|\n"
        "| 論理的整合性 | A — 複数の独立した軸から一貫して同一結論を支持"
        " | B — 抑制的立場は健全だが適用範囲の限界が不明確 |\n"
    ) in text
    assert "| 根拠の具体性 | A — " in text
    assert "| 反論への対応力 | B — " in text
    assert "| 独自性 | B — CI/CD統合やTDD設計改善等の新規性あり | A — " in text
    assert "| 総合 | A（8.0/10） | B（6.5/10） |\n" in text


def test_english_report_overall_row_and_escaped_cells() -> None:
    debate, turns = samples.panel_en()
    text = export.final_report_markdown(debate, turns, date=REPORT_TIME)
    assert "| Overall | A (8.0/10) | B (6.5/10) |\n" in text
    assert "| Specificity of evidence | B — Few numbers | B — Anecdotes \\| no data |" in text
    assert "| Rebuttal strength | A | C — Ignores the defect data |" in text


def test_report_shows_topic_date_and_workspace() -> None:
    debate, turns = samples.panel_ja()
    text = export.final_report_markdown(debate, turns, date=REPORT_TIME)
    assert "**テーマ**: 「ソフトウェア開発においてテストは本当に必要か」\n\n" in text
    workspace = f"debate_20260319_053330_{debate.id}/"
    assert f"**実行日時**: 2026-03-19 05:41 / **ワークスペース**: {workspace}" in text


def test_report_with_a_plain_date_shows_no_time() -> None:
    debate, turns = samples.panel_en()
    assert "**Date**: 2026-03-19 / " in export.final_report_markdown(debate, turns, date=DAY)


def test_report_lists_every_claim_thesis_in_seat_order() -> None:
    debate, turns = samples.panel_ja()
    text = export.final_report_markdown(debate, turns, date=REPORT_TIME)
    headings = re.findall(r"^### (.+)$", text, flags=re.MULTILINE)
    assert headings[:6] == [
        "賛成派 · Claude",
        "賛成派 · Gemini",
        "賛成派 · Codex",
        "反対派 · Claude",
        "反対派 · Gemini",
        "反対派 · Codex",
    ]
    assert (
        "**要旨**: テストは品質確保・保守性向上・コスト削減・仕様共有・属人化防止のために" in text
    )


def test_report_marks_a_failed_debater() -> None:
    debate, turns = samples.panel_en()
    text = export.final_report_markdown(debate, turns, date=REPORT_TIME)
    assert "### Con · Codex\n\n_(this turn failed: rate limited)_\n" in text


def test_report_nests_summary_headings_under_its_own() -> None:
    debate, turns = samples.panel_en()
    text = export.final_report_markdown(debate, turns, date=REPORT_TIME)
    assert "### Pro summary\n\n#### Core Claims\n" in text
    assert "\n## Core Claims" not in text


def test_unreadable_judgement_shows_the_judges_text_instead_of_a_table() -> None:
    debate, turns = samples.panel_en()
    turns[-1].verdict = {"parsed": False, "synthesis": ""}
    text = export.final_report_markdown(debate, turns, date=REPORT_TIME)
    assert "| Criterion |" not in text
    assert "its answer follows.\n\n(the judge's raw answer)\n" in text
    # No synthesis in the verdict: the debate's synthesis is used.
    assert text.endswith(f"## 4. Synthesis\n\n{samples.EN_VERDICT['synthesis']}\n")


def test_panel_finals_is_the_final_report() -> None:
    debate, turns = samples.panel_en()
    assert export.finals_markdown(debate, turns, date=REPORT_TIME) == (
        export.final_report_markdown(debate, turns, date=REPORT_TIME)
    )


@pytest.mark.parametrize(
    ("claim", "thesis"),
    [
        ("## Thesis\n\nA first.\nStill A.\n\n## Grounds\n- b", "A first. Still A."),
        ("**Thesis:** Bold colon inside.", "Bold colon inside."),
        ("**Thesis**: Bold colon outside.", "Bold colon outside."),
        ("- **Thesis**: In a list.", "In a list."),
        ("Thesis (要旨): With a gloss.", "With a gloss."),
        ("### 要旨（Thesis）\n本文。\n\n### 根拠", "本文。"),
        ("要旨：全角コロン。", "全角コロン。"),
        ("**要旨**: 太字。", "太字。"),
        ("# Title\n\nNo marker, first paragraph.\n\nSecond.", "No marker, first paragraph."),
        ("Thesis statement is not a marker.\n\nMore.", "Thesis statement is not a marker."),
        ("## Thesis\n\n**Whole line bold.**", "Whole line bold."),
        ("", ""),
    ],
)
def test_thesis_is_found_tolerantly(claim: str, thesis: str) -> None:
    assert export.extract_thesis(claim) == thesis


# ---------------------------------------------------------------- panel workspace


def test_claim_and_summary_files_match_goldens() -> None:
    _, turns = samples.panel_ja()
    by_role = {turn.role: turn for turn in turns}
    assert_golden("claim_pro_claude_ja.md", export.claim_markdown(by_role["pro_claude"]))
    assert_golden("summary_con_ja.md", export.summary_markdown(by_role["con_summarizer"]))


def test_workspace_has_the_seed_layout() -> None:
    debate, turns = samples.panel_en()
    files = export.workspace_files(debate, turns, date=REPORT_TIME)
    assert list(files) == [
        "1_claims/pro_claude.md",
        "1_claims/pro_gemini.md",
        "1_claims/pro_codex.md",
        "1_claims/con_claude.md",
        "1_claims/con_gemini.md",  # con_codex failed: it left no file
        "2_summaries/pro_summary.md",
        "2_summaries/con_summary.md",
        "3_report/final_report.md",
    ]
    assert files["1_claims/pro_gemini.md"] == samples.EN_CLAIMS["pro_gemini"] + "\n"
    assert files["3_report/final_report.md"] == (
        export.final_report_markdown(debate, turns, date=REPORT_TIME)
    )


def _zip_listing(data: bytes) -> str:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return "".join(
            f"{info.filename}  {datetime(*info.date_time):%Y-%m-%d %H:%M:%S}"
            f"  {info.external_attr >> 16:o}  {info.file_size}\n"
            for info in archive.infolist()
        )


def test_workspace_zip_listing_matches_golden() -> None:
    debate, turns = samples.panel_ja()
    assert_golden(
        "workspace_ja_listing.txt",
        _zip_listing(export.workspace_zip(debate, turns, date=REPORT_TIME)),
    )


def test_workspace_zip_holds_the_workspace_files_under_one_folder() -> None:
    debate, turns = samples.panel_ja()
    top = f"debate_20260319_053330_{debate.id}"
    data = export.workspace_zip(debate, turns, date=REPORT_TIME)
    expected = export.workspace_files(debate, turns, date=REPORT_TIME)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert archive.testzip() is None
        contents = {
            info.filename.removeprefix(f"{top}/"): archive.read(info).decode()
            for info in archive.infolist()
            if not info.is_dir()
        }
        folders = [info.filename for info in archive.infolist() if info.is_dir()]
    assert contents == expected
    assert folders == [f"{top}/", f"{top}/1_claims/", f"{top}/2_summaries/", f"{top}/3_report/"]


def test_workspace_zip_is_byte_for_byte_reproducible() -> None:
    first = export.workspace_zip(*samples.panel_ja(), date=REPORT_TIME)
    second = export.workspace_zip(*samples.panel_ja(), date=REPORT_TIME)
    assert first == second


# ---------------------------------------------------------------- plan names


class _StuckRandom(random.Random):
    """Always draws the first word: forces the collision path."""

    def choice(self, seq: Any) -> Any:
        return seq[0]


def test_whimsical_name_is_adjective_gerund_noun() -> None:
    name = export.whimsical_name(set(), random.Random(7))
    adjective, gerund, noun = name.split("-")
    assert adjective.isalpha() and noun.isalpha()
    assert gerund.endswith("ing")


def test_whimsical_name_avoids_existing_names() -> None:
    rng = random.Random(1)
    taken: set[str] = set()
    for _ in range(300):
        name = export.whimsical_name(taken, rng)
        assert name not in taken
        taken.add(name)


def test_whimsical_name_falls_back_to_a_numeric_suffix() -> None:
    stuck = export.whimsical_name(set(), _StuckRandom())
    existing = {stuck, f"{stuck}-2"}
    assert export.whimsical_name(existing, _StuckRandom()) == f"{stuck}-3"
