"""Reading labelled verdicts: convergence checks and the panel judge's scores."""

from __future__ import annotations

import pytest

from app.formats.verdicts import CRITERIA, parse_convergence, parse_judgement

# ------------------------------------------------------------------ convergence


@pytest.mark.parametrize(
    ("text", "converged", "reason"),
    [
        ("CONVERGED: yes\nREASON: we agree on phasing", True, "we agree on phasing"),
        ("converged: NO\nreason: cost is unresolved", False, "cost is unresolved"),
        ("**CONVERGED:** **yes**\n**REASON:** nothing left", True, "nothing left"),
        ("Converged - Yes", True, ""),
        ("Converged — no, still disagree", False, "still disagree"),
        ("- CONVERGED: Yes.\n- REASON: same point twice", True, "same point twice"),
        ("CONVERGED: true", True, ""),
        ("Convergence: No\nReason: new angle on cost", False, "new angle on cost"),
        ("CONVERGED:\nyes\nREASON: both conceded", True, "both conceded"),
        ("CONVERGED：いいえ\n理由：まだ反論がある", False, "まだ反論がある"),
        ("収束: はい\n理由: 合意した", True, "合意した"),
        ("収束判定：はい。両者が合意した", True, "両者が合意した"),
        ("yes.", True, ""),
        ("No, Gemini still ignores the migration cost.", False,
         "Gemini still ignores the migration cost."),
        ("Not converged.", False, ""),
        ("Converged.", True, ""),
        ("CONVERGED: Yes — we now agree on the rollout.", True, "we now agree on the rollout."),
        ("Some thoughts first.\n\nCONVERGED: no\nREASON: r", False, "r"),
        ("## Convergence check\nCONVERGED: no\nREASON: r", False, "r"),
        ("`CONVERGED: yes`\nREASON: multi\nline reason", True, "multi\nline reason"),
    ],
)  # fmt: skip
def test_convergence_variants_are_read(text: str, converged: bool, reason: str) -> None:
    verdict = parse_convergence(text)
    assert verdict["converged"] is converged
    assert verdict["parsed"] is True
    assert verdict["reason"] == reason


@pytest.mark.parametrize(
    "text",
    [
        "",
        "I think we're getting close, but who knows.",
        "CONVERGED: yes|no\nREASON: <one or two sentences>",
        "CONVERGED: yes or no",
        "CONVERGED: perhaps",
        "Convergence is a hard question.",
    ],
)
def test_unreadable_convergence_is_unparsed_and_not_converged(text: str) -> None:
    verdict = parse_convergence(text)
    assert verdict["converged"] is None
    assert verdict["parsed"] is False


def test_unparsed_convergence_keeps_the_text_as_its_reason() -> None:
    assert parse_convergence("Hard to say.")["reason"] == "Hard to say."


# ------------------------------------------------------------------ judgement

LABELLED = """SCORES
Logical consistency | Pro: A — consistent across three axes | Con: B — scope unclear
Specificity of evidence | Pro: A — IBM study, Ariane 5 | Con: B — causality not shown
Rebuttal strength | Pro: B — only one pre-empted | Con: B — mission-critical thin
Originality | Pro: B — CI/CD angle | Con: A — inverts the received view
Overall | Pro: A 8.0/10 | Con: B 6.5/10

SYNTHESIS
The real question is how to allocate the cost of quality assurance."""

SEED_TABLE = """## 評価

| 評価軸 | 賛成派 | 反対派 |
|---|---|---|
| 論理的整合性 | A — 複数の独立した軸から一貫して同一結論を支持 | B — 適用範囲の限界が不明確 |
| 根拠の具体性 | A — IBM調査、アリアン5事故 | B — 因果関係の立証が不十分 |
| 反論への対応力 | B — Claudeのみ先制回答あり | B — ミッションクリティカル領域への反論が薄い |
| 独自性 | B — CI/CD統合やTDD設計改善 | A — 通説を反転させる切り口に独自性 |
| 総合 | A（8.0/10） | B（6.5/10） |

## 止揚的結論

この討論の本質的な対立は資源配分問題である。

問うべきは投資の配分である。"""

ONE_SIDE_LINES = """**Scores**
- Logical consistency (Pro): A - solid chain of reasoning
- Logical consistency (Con): B (weaker scope)
- Specificity of evidence (Pro): B, few numbers
- Specificity of evidence (Con): C - anecdotes only
- Rebuttal strength (Pro): A - answers every objection
- Rebuttal strength (Con): B - misses safety
- Originality (Pro): C - familiar
- Originality (Con): A - fresh framing
- Overall (Pro): A, 8/10
- Overall (Con): B, 6/10

**Synthesis:** Both are right in part: test what is costly to break."""


def criteria(verdict: dict[str, object]) -> list[tuple[object, ...]]:
    rows = verdict["criteria"]
    assert isinstance(rows, list)
    return [(r["name"], r["pro_grade"], r["pro_reason"], r["con_grade"], r["con_reason"])
            for r in rows]  # fmt: skip


def test_judgement_labelled_block_is_read() -> None:
    verdict = parse_judgement(LABELLED)
    assert verdict["parsed"] is True
    assert criteria(verdict) == [
        ("Logical consistency", "A", "consistent across three axes", "B", "scope unclear"),
        ("Specificity of evidence", "A", "IBM study, Ariane 5", "B", "causality not shown"),
        ("Rebuttal strength", "B", "only one pre-empted", "B", "mission-critical thin"),
        ("Originality", "B", "CI/CD angle", "A", "inverts the received view"),
    ]
    assert verdict["overall"] == {
        "pro_grade": "A", "pro_score": 8.0, "con_grade": "B", "con_score": 6.5,
    }  # fmt: skip
    assert verdict["synthesis"] == (
        "The real question is how to allocate the cost of quality assurance."
    )


def test_judgement_seed_style_japanese_table_is_read() -> None:
    verdict = parse_judgement(SEED_TABLE)
    assert verdict["parsed"] is True
    rows = criteria(verdict)
    assert rows[0] == (
        "Logical consistency", "A", "複数の独立した軸から一貫して同一結論を支持", "B",
        "適用範囲の限界が不明確",
    )  # fmt: skip
    assert [(r[1], r[3]) for r in rows] == [("A", "B"), ("A", "B"), ("B", "B"), ("B", "A")]
    assert verdict["overall"] == {
        "pro_grade": "A", "pro_score": 8.0, "con_grade": "B", "con_score": 6.5,
    }  # fmt: skip
    assert verdict["synthesis"] == (
        "この討論の本質的な対立は資源配分問題である。\n\n問うべきは投資の配分である。"
    )


def test_judgement_one_side_per_line_with_bullets_and_bold_is_read() -> None:
    verdict = parse_judgement(ONE_SIDE_LINES)
    assert verdict["parsed"] is True
    rows = criteria(verdict)
    assert rows[0] == ("Logical consistency", "A", "solid chain of reasoning", "B", "weaker scope")
    assert rows[1][1:3] == ("B", "few numbers")
    assert [(r[1], r[3]) for r in rows] == [("A", "B"), ("B", "C"), ("A", "B"), ("C", "A")]
    assert verdict["overall"] == {
        "pro_grade": "A", "pro_score": 8.0, "con_grade": "B", "con_score": 6.0,
    }  # fmt: skip
    assert verdict["synthesis"] == "Both are right in part: test what is costly to break."


def test_judgement_both_sides_on_one_unpiped_line_are_read() -> None:
    text = LABELLED.replace(
        "Originality | Pro: B — CI/CD angle | Con: A — inverts the received view",
        "Originality — Pro: B — CI/CD angle; Con: A — inverts the received view",
    )
    verdict = parse_judgement(text)
    assert verdict["parsed"] is True
    assert criteria(verdict)[3] == ("Originality", "B", "CI/CD angle", "A",
                                    "inverts the received view")  # fmt: skip


def test_judgement_full_width_grades_and_japanese_side_labels_are_read() -> None:
    text = (
        "論理的整合性 | 賛成派：Ａ — 一貫している | 反対派：Ｂ — 曖昧\n"
        "根拠の具体性 | 賛成派：Ａ — 具体的 | 反対派：Ｃ — 抽象的\n"
        "反論への対応力 | 賛成派：Ｂ — 一部のみ | 反対派：Ｂ — 一部のみ\n"
        "独自性 | 賛成派：Ｂ — 標準的 | 反対派：Ａ — 新鮮\n"
        "総合 | 賛成派：Ａ（８．０／１０） | 反対派：Ｂ（６．５／１０）\n"
        "止揚：両者の正当な点を統合する。"
    )
    verdict = parse_judgement(text)
    assert verdict["parsed"] is True
    assert criteria(verdict)[1] == ("Specificity of evidence", "A", "具体的", "C", "抽象的")
    assert verdict["overall"]["con_score"] == 6.5
    assert verdict["synthesis"] == "両者の正当な点を統合する。"


def test_judgement_overall_with_first_side_in_the_label_cell_is_read() -> None:
    text = LABELLED.replace(
        "Overall | Pro: A 8.0/10 | Con: B 6.5/10", "Overall — Pro: A (8/10) | Con: C (3/10)"
    )
    assert parse_judgement(text)["overall"] == {
        "pro_grade": "A", "pro_score": 8.0, "con_grade": "C", "con_score": 3.0,
    }  # fmt: skip


def test_judgement_without_synthesis_heading_is_unparsed_but_keeps_grades() -> None:
    text = LABELLED.split("SYNTHESIS")[0]
    verdict = parse_judgement(text)
    assert verdict["parsed"] is False
    assert verdict["synthesis"] == ""
    assert criteria(verdict)[0][1] == "A"


def test_judgement_missing_a_criterion_is_unparsed() -> None:
    text = "\n".join(line for line in LABELLED.splitlines() if not line.startswith("Originality"))
    verdict = parse_judgement(text)
    assert verdict["parsed"] is False
    assert criteria(verdict)[3] == ("Originality", None, "", None, "")
    assert criteria(verdict)[2][1] == "B"


def test_judgement_missing_a_score_is_unparsed() -> None:
    verdict = parse_judgement(LABELLED.replace("Con: B 6.5/10", "Con: B"))
    assert verdict["parsed"] is False
    assert verdict["overall"]["con_grade"] == "B"
    assert verdict["overall"]["con_score"] is None


def test_judgement_prose_is_unparsed_with_every_criterion_empty() -> None:
    verdict = parse_judgement("Both sides argued well; I cannot pick.\nAverage effort overall.")
    assert verdict["parsed"] is False
    assert [row[0] for row in criteria(verdict)] == list(CRITERIA)
    assert all(row[1] is None and row[3] is None for row in criteria(verdict))
    assert verdict["overall"] == {
        "pro_grade": None, "pro_score": None, "con_grade": None, "con_score": None,
    }  # fmt: skip


def test_judgement_first_grade_wins_and_synthesis_text_is_not_scored() -> None:
    text = LABELLED + "\nLogical consistency | Pro: C — later | Con: C — later"
    verdict = parse_judgement(text)
    assert criteria(verdict)[0][1] == "A"
    assert verdict["synthesis"].endswith("Logical consistency | Pro: C — later | Con: C — later")
