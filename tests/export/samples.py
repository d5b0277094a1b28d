"""Debates and turns to export, built as plain rows (no database): a duel that converged,
one that did not, and a panel in English and in Japanese (the seed's own topic)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from app.models import Debate, Turn
from app.store import slugify

CREATED = datetime(2026, 3, 19, 5, 33, 30)
FINISHED = datetime(2026, 3, 19, 5, 41, 2)


def debate(**fields: Any) -> Debate:
    values: dict[str, Any] = {
        "id": "a1b2c3d4e5f6",
        "topic": "Should we use Postgres or SQLite",
        "format": "duel",
        "topic_type": "general",
        "rounds": 4,
        "history": False,
        "status": "completed",
        "created_at": CREATED,
        "finished_at": FINISHED,
    }
    values.update(fields)
    values.setdefault("slug", slugify(values["topic"]))
    return Debate(**values)


def turn(
    seq: int,
    role: str,
    label: str,
    phase: str,
    round: int,
    text: str = "",
    *,
    status: str = "completed",
    verdict: dict[str, Any] | None = None,
    error_message: str | None = None,
) -> Turn:
    return Turn(
        debate_id="a1b2c3d4e5f6",
        seq=seq,
        key=f"r{round}.{phase}.{role}",
        role=role,
        label=label,
        provider="local",
        model="smollm2",
        phase=phase,
        round=round,
        status=status,
        text=text,
        verdict=verdict,
        error_kind="server" if status == "failed" else None,
        error_message=error_message,
    )


CONVERGED_SYNTHESIS = (
    "Agreed position: SQLite is the right default for a single-node app with modest write "
    "concurrency; move to Postgres once concurrent writers or multi-node deployment arrive."
)
SPLIT_SYNTHESIS = """Positions not fully reconciled after 3 round(s). Key tension:
Strongest argument (Claude): WAL mode removes most reader/writer contention.
Strongest argument (Gemini): migrations later cost more than starting on Postgres.
Best available synthesis: start on SQLite behind a thin repository layer."""


def duel_converged() -> Debate:
    return debate(converged=True, rounds_run=3, synthesis=CONVERGED_SYNTHESIS, history=True)


def duel_split() -> Debate:
    return debate(
        topic="Ship the export feature",
        topic_type="plan",
        converged=False,
        rounds_run=3,
        synthesis=SPLIT_SYNTHESIS + "\n\n",
        history=True,
    )


def duel_turns() -> list[Turn]:
    """Completion order differs from reading order: Gemini's opening finished first."""
    return [
        turn(1, "gemini", "Gemini", "seed", 0, "Seed analysis: the app has one writer."),
        turn(2, "gemini", "Gemini", "opening", 1, "Postgres: it scales with the team.\n"),
        turn(3, "claude", "Claude", "opening", 1, "SQLite: one file, zero operations."),
        turn(4, "claude", "Claude", "rebuttal", 2, "Scale you do not have is a cost, not a gain."),
        turn(5, "gemini", "Gemini", "response", 2, "Fair, but migrations later cost more."),
        turn(6, "claude", "Claude", "convergence", 2, "NOT CONVERGED: still disagree.",
             verdict={"converged": False, "reason": "still disagree"}),
        turn(7, "claude", "Claude", "rebuttal", 3, "A repository layer makes the move cheap."),
        turn(8, "gemini", "Gemini", "response", 3, "",
             status="failed", error_message="server error 500"),
        turn(9, "claude", "Claude", "synthesis", 3, CONVERGED_SYNTHESIS),
    ]  # fmt: skip


# ---------------------------------------------------------------- panel, English

EN_TOPIC = "Is code review worth the time"
EN_CLAIMS = {
    "pro_claude": "## Thesis\n\nReview catches defects before they ship.\n\n"
    "## Grounds\n\n- Defects cost more the later they are found.\n\n"
    "## Pre-emptive rebuttal\n\nSmall reviews are fast.",
    "pro_gemini": "**Thesis:** Review spreads knowledge across the team.\n\n"
    "**Grounds:** bus factor, onboarding.",
    "pro_codex": "Review keeps the codebase consistent.\n\nGrounds: style, architecture.",
    "con_claude": "# Con\n\nThesis (要旨): Review often delays without finding much.\n\n"
    "Grounds: most comments are nits.",
    "con_gemini": "- **Thesis**: Pairing beats after-the-fact review.",
}
EN_SUMMARIES = {
    "pro_summarizer": "## Core Claims\n\n- Defects are found early.\n\n"
    "## Unique Insights\n\n- Knowledge sharing (Gemini).\n\n"
    "## Strength\n\nStrong and consistent.",
    "con_summarizer": "## Core Claims\n\n- Review is slow.\n\n## Strength\n\nNarrow but sharp.",
}
EN_VERDICT: dict[str, Any] = {
    "criteria": [
        {"name": "logical consistency", "pro_grade": "A", "pro_reason": "Coherent",
         "con_grade": "B", "con_reason": "Scope unclear"},
        {"name": "Specificity_of_evidence", "pro_grade": "B", "pro_reason": "Few numbers",
         "con_grade": "B", "con_reason": "Anecdotes | no data"},
        {"name": "rebuttal strength", "pro_grade": "A", "pro_reason": "",
         "con_grade": "C", "con_reason": "Ignores\nthe defect data"},
        {"name": "originality", "pro_grade": "B", "pro_reason": "Familiar",
         "con_grade": "A", "con_reason": "Pairing angle"},
    ],
    "overall": {"pro_grade": "A", "pro_score": 8, "con_grade": "B", "con_score": 6.5},
    "synthesis": "Review is worth it when it is small and fast; pairing is a form of review.",
    "parsed": True,
}  # fmt: skip


def panel_en() -> tuple[Debate, list[Turn]]:
    labels = {"pro": "Pro", "con": "Con"}
    seats = {"claude": "Claude", "gemini": "Gemini", "codex": "Codex"}
    turns: list[Turn] = []
    # Claims finish in any order; the report and the workspace must not care.
    for seq, role in enumerate(
        ["con_gemini", "pro_codex", "con_claude", "pro_claude", "pro_gemini"], start=1
    ):
        side, seat = role.split("_")
        turns.append(turn(seq, role, f"{labels[side]} · {seats[seat]}", "claim", 1,
                          EN_CLAIMS[role]))  # fmt: skip
    turns.append(turn(6, "con_codex", "Con · Codex", "claim", 1, status="failed",
                      error_message="rate limited"))  # fmt: skip
    turns.append(turn(7, "pro_summarizer", "Pro summarizer", "summary", 2,
                      EN_SUMMARIES["pro_summarizer"]))  # fmt: skip
    turns.append(turn(8, "con_summarizer", "Con summarizer", "summary", 2,
                      EN_SUMMARIES["con_summarizer"]))  # fmt: skip
    turns.append(turn(9, "judge", "Judge", "judgement", 3, "(the judge's raw answer)",
                      verdict=EN_VERDICT))  # fmt: skip
    return (
        debate(topic=EN_TOPIC, format="panel", rounds_run=3, synthesis=EN_VERDICT["synthesis"]),
        turns,
    )


# ---------------------------------------------------------------- panel, Japanese (seed 001)

JA_TOPIC = "ソフトウェア開発においてテストは本当に必要か"
JA_CLAIMS = {
    "pro_claude": "## 要旨\n\nテストは品質保証と変更容易性の両面で不可欠。"
    "省略は短期的コスト削減に見えて長期的に技術的負債を蓄積する。\n\n"
    "## 根拠\n\n- 欠陥コストは発見が遅れるほど増大する。\n\n"
    "## 先制回答\n\n小規模でもコアロジックにはテストを書く習慣が合理的判断。",
    "pro_gemini": "**要旨**: テストは単なる確認作業ではなく、品質・開発効率・ビジネス持続可能性を"
    "支える不可欠な基盤。\n\n**根拠**:\n- CI/CD統合",
    "pro_codex": "要旨：テストは品質確保・保守性向上・コスト削減・仕様共有・属人化防止のために"
    "必要な開発活動。\n\n根拠：IBM調査",
    "con_claude": "### 要旨（Thesis）\nテストは品質向上の一手段に過ぎず、すべての開発文脈において"
    "必須とはいえない。\n\n### 根拠\n- 型システム\n\n### 先制回答\n品質保証はテスト以外の手段の"
    "組み合わせで達成可能。",
    "con_gemini": "要旨: 「テストは必ずしも常に必要・最適解であるとは限らない」\n\n根拠: Netflix",
    "con_codex": "テストはあらゆるソフトウェア開発で必須とするのは現実的ではない。\n\n"
    "根拠: 試作段階",
}
JA_SUMMARIES = {
    "pro_summarizer": "共通主張（Core Claims）:\n- 欠陥の早期発見\n\n"
    "独自の洞察（Unique Insights）:\n- CI/CD統合（Gemini）\n\n"
    "強度評価: 複数の独立した軸から一貫して同一結論を支持。ただし反論耐性の厚みにばらつきあり。",
    "con_summarizer": "共通主張（Core Claims）:\n- テストは手段の一つ\n\n"
    "独自の洞察（Unique Insights）:\n- 通説の反転（Gemini）\n\n"
    "強度評価: 「無条件の必須論への反証」という抑制的立場は堅固だが、"
    "ミッションクリティカル領域への言及が薄く適用範囲の限界が不明確。",
}
JA_SYNTHESIS = (
    "この討論の本質的な対立は「テストが必要か否か」ではなく、「品質保証のコストをどの時点・"
    "どの手段に配分するのが最適か」という資源配分問題である。\n\n"
    "問うべきは「テストは必要か」ではなく、「このプロジェクト・このフェーズにおいて、"
    "品質保証への投資をどの手段にどれだけ配分するのが合理的か」である。"
)
JA_VERDICT: dict[str, Any] = {
    "criteria": [
        {"name": "logical consistency",
         "pro_grade": "A", "pro_reason": "複数の独立した軸から一貫して同一結論を支持",
         "con_grade": "B", "con_reason": "抑制的立場は健全だが適用範囲の限界が不明確"},
        {"name": "specificity of evidence",
         "pro_grade": "A", "pro_reason": "IBM調査、アリアン5事故、ECサイト・金融系の具体例",
         "con_grade": "B", "con_reason": "Netflix・Amazon等の事例はあるが因果関係の立証が不十分"},
        {"name": "rebuttal strength",
         "pro_grade": "B", "pro_reason": "Claudeのみ先制回答あり、他2名は反論への対応を欠く",
         "con_grade": "B", "con_reason": "ミッションクリティカル領域への反論が薄い"},
        {"name": "originality",
         "pro_grade": "B", "pro_reason": "CI/CD統合やTDD設計改善等の新規性あり",
         "con_grade": "A", "con_reason": "通説を反転させる切り口に独自性"},
    ],
    "overall": {"pro_grade": "A", "pro_score": 8.0, "con_grade": "B", "con_score": 6.5},
    "synthesis": JA_SYNTHESIS,
    "parsed": True,
}  # fmt: skip


def panel_ja() -> tuple[Debate, list[Turn]]:
    turns: list[Turn] = []
    for seq, (role, text) in enumerate(JA_CLAIMS.items(), start=1):
        side, seat = role.split("_")
        label = f"{'Pro' if side == 'pro' else 'Con'} · {seat.title()}"
        turns.append(turn(seq, role, label, "claim", 1, text))
    turns.append(turn(7, "con_summarizer", "Con summarizer", "summary", 2,
                      JA_SUMMARIES["con_summarizer"]))  # fmt: skip
    turns.append(turn(8, "pro_summarizer", "Pro summarizer", "summary", 2,
                      JA_SUMMARIES["pro_summarizer"]))  # fmt: skip
    turns.append(turn(9, "judge", "Judge", "judgement", 3, "{...}", verdict=JA_VERDICT))
    return (
        debate(id="0f1e2d3c4b5a", topic=JA_TOPIC, format="panel", rounds_run=3,
               synthesis=JA_SYNTHESIS),
        turns,
    )  # fmt: skip
