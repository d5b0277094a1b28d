"""The panel (seed 001): six debaters, a summarizer per side, and a judge who sublates.

Turns, by key (``r<round>.<phase>.<role>``); a line is one batch, run in parallel:

    r1.claim.{pro,con}_{claude,gemini,codex}     six claims; each sees only the topic and
                                                 its stance (context files are not given:
                                                 the seed hands debaters the theme alone)
    r2.summary.{pro,con}_summarizer              each sees only its own side's three claims,
                                                 passed through verbatim
    r3.judgement.judge                           sees only the two summaries; verdict = grades,
                                                 scores and synthesis (see verdicts.py)
    r3.swap_judgement.judge                      only with ``spec.swap_judge``, in the same
                                                 batch: the same judge, the sides shown in the
                                                 other order (con first), its verdict read
                                                 back to pro/con; it does not replace the first
    q<n>.followup.{pro_claude,con_claude,judge}  follow-up question n, once asked: one debater
                                                 per side and the judge (followups.py)

``spec.rounds``, ``spec.seed`` and ``spec.context`` do not apply to the panel.
The panel's three phases are its rounds: a finished panel has ``rounds_run`` 3. It has no
notion of convergence (``converged`` None); its synthesis is the judge's 止揚 section, or the
whole judgement when that section cannot be found (always the first judgement's).

``spec.blind_judge``: the judge sees no names. Its summaries are written with the debaters as
"Debater 1..3" and the side unnamed (the summarizers are told so); its prompt names the sides
"Side 1"/"Side 2" by the order shown. Its verdict is read back to pro/con from that order, so
stored verdicts, scorecards and reports always speak of pro and con.

Its finals is the seed's final report, and its workspace the seed's folders of claims,
summaries and report: both written by ``app.formats.panel_report``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date as Date
from typing import TYPE_CHECKING, Any

from app.formats import Format, Heading, Judging, Layout, Phase, Workspace, prompts
from app.formats.followups import Answerer, Entry, plan_followups
from app.formats.language import Language, detect_language
from app.formats.verdicts import parse_judgement
from app.spec import CompletedTurn, DebateSpec, Message, Outcome, Seat, TurnPlan

if TYPE_CHECKING:
    from app.models import Debate, Turn

__all__ = [
    "CON_DEBATERS",
    "FORMAT",
    "JUDGE",
    "JUDGEMENT_KEY",
    "PRO_DEBATERS",
    "SUMMARIZERS",
    "SWAP_JUDGEMENT",
    "SWAP_JUDGEMENT_KEY",
    "Panel",
]

SIDES = ("pro", "con")
_MODELS = (("claude", "Claude", "anthropic"), ("gemini", "Gemini", "gemini"),
           ("codex", "Codex", "openai"))  # fmt: skip
PRO_DEBATERS = tuple(f"pro_{name}" for name, _, _ in _MODELS)
CON_DEBATERS = tuple(f"con_{name}" for name, _, _ in _MODELS)
DEBATERS = {"pro": PRO_DEBATERS, "con": CON_DEBATERS}
SUMMARIZERS = {"pro": "pro_summarizer", "con": "con_summarizer"}
JUDGE = "judge"
SWAP_JUDGEMENT = "swap_judgement"
# The side each judgement is shown first, by its phase.
_SHOWN_FIRST = {"judgement": "pro", SWAP_JUDGEMENT: "con"}

_DEFAULT_SEATS: tuple[Seat, ...] = (
    *(
        Seat(role=f"{side}_{name}", label=f"{side.capitalize()} · {label}", provider=provider)
        for side in SIDES
        for name, label, provider in _MODELS
    ),
    Seat(role=SUMMARIZERS["pro"], label="Pro summarizer", provider="anthropic"),
    Seat(role=SUMMARIZERS["con"], label="Con summarizer", provider="anthropic"),
    Seat(role=JUDGE, label="Judge", provider="anthropic"),
)
_DEFAULT_LABELS = {seat.role: seat.label for seat in _DEFAULT_SEATS}


def _key(round_number: int, phase: str, role: str) -> str:
    return f"r{round_number}.{phase}.{role}"


JUDGEMENT_KEY = _key(3, "judgement", JUDGE)
SWAP_JUDGEMENT_KEY = _key(3, SWAP_JUDGEMENT, JUDGE)


def _label(spec: DebateSpec, role: str) -> str:
    try:
        label = spec.seat(role).label
    except KeyError:
        label = ""
    return label or _DEFAULT_LABELS[role]


def _user(text: str) -> tuple[Message, ...]:
    return (Message(role="user", content=text),)


def _claim_plan(spec: DebateSpec, language: Language, side: str, role: str) -> TurnPlan:
    return TurnPlan(
        key=_key(1, "claim", role),
        role=role,
        phase="claim",
        round=1,
        system=prompts.debater_system(side=side, language=language),
        messages=_user(prompts.debater_request(topic=spec.topic, side=side, language=language)),
    )


def _summary_plan(
    spec: DebateSpec, language: Language, side: str, claims: dict[str, CompletedTurn]
) -> TurnPlan:
    role = SUMMARIZERS[side]
    blind = spec.blind_judge
    own = [
        (prompts.blind_debater(number) if blind else _label(spec, debater), claims[debater].text)
        for number, debater in enumerate(DEBATERS[side], start=1)
    ]
    return TurnPlan(
        key=_key(2, "summary", role),
        role=role,
        phase="summary",
        round=2,
        system=prompts.summarizer_system(side=side, language=language, blind=blind),
        messages=_user(
            prompts.summarizer_request(
                topic=spec.topic, side=side, claims=own, language=language, blind=blind
            )
        ),
    )


def _judge_plan(
    spec: DebateSpec, language: Language, summaries: dict[str, CompletedTurn], phase: str
) -> TurnPlan:
    return TurnPlan(
        key=_key(3, phase, JUDGE),
        role=JUDGE,
        phase=phase,
        round=3,
        system=prompts.judge_system(language, blind=spec.blind_judge),
        messages=_user(
            prompts.judge_request(
                topic=spec.topic,
                pro_summary=summaries["pro"].text,
                con_summary=summaries["con"].text,
                language=language,
                first=_SHOWN_FIRST[phase],
                blind=spec.blind_judge,
            )
        ),
    )


# Who answers a follow-up question: one voice per side (each side's first debater) and the
# judge, so an answer is never one side's alone.
FOLLOWUP_ROLES = (PRO_DEBATERS[0], CON_DEBATERS[0], JUDGE)


def _followup_plans(
    spec: DebateSpec,
    done: tuple[CompletedTurn, ...],
    language: Language,
    judgement: CompletedTurn,
) -> list[TurnPlan]:
    """The claims and summaries are the record; the judge's whole answer is the conclusion."""
    record = [
        Entry(f"{_label(spec, turn.role)} · {turn.phase}", turn.text)
        for turn in done
        if turn.phase in ("claim", "summary")
    ]
    parts = {
        PRO_DEBATERS[0]: prompts.followup_part_side("pro"),
        CON_DEBATERS[0]: prompts.followup_part_side("con"),
        JUDGE: prompts.followup_part_judge(),
    }
    return plan_followups(
        spec,
        done,
        answerers=tuple(Answerer(role, _label(spec, role), parts[role]) for role in FOLLOWUP_ROLES),
        record=record,
        conclusion=judgement.text,
        language=language,
    )


def _judgement_of(turn: CompletedTurn) -> dict[str, Any]:
    verdict = turn.verdict
    if isinstance(verdict, dict) and "synthesis" in verdict:
        return verdict
    return parse_judgement(turn.text, first=_SHOWN_FIRST.get(turn.phase, "pro"))


# The report reads scorecards and judge warnings, which import this module's names: it is
# loaded when a report is first asked for.
def _final_report(debate: Debate, turns: Sequence[Turn], date: Date) -> str:
    from app.formats.panel_report import final_report_markdown

    return final_report_markdown(debate, turns, date=date)


def _workspace_files(debate: Debate, turns: Sequence[Turn], date: Date) -> Mapping[str, str]:
    from app.formats.panel_report import workspace_files

    return workspace_files(debate, turns, date=date)


class Panel(Format):
    """Six debaters (pro/con × Claude, Gemini, Codex), two summarizers, one judge."""

    name = "panel"
    title = "Panel"
    description = "six debaters, two summarizers, a judge"
    # A panel's phases are its own headings; every turn is a message of its transcript.
    layout = Layout(
        phases=(
            Phase("claim", "Phase 1 · Claims", message=True),
            Phase("summary", "Phase 2 · Summaries", message=True),
            Phase("judgement", "Phase 3 · Judgement", message=True),
            Phase(
                SWAP_JUDGEMENT,
                "Phase 3 · Judgement, sides swapped (con shown first)",
                message=True,
            ),
        )
    )
    topic_prompt = "What should the panel debate? "
    eval_summary = "a panel; its judge's synthesis gives the answer"
    # The seed's workspace: each debater's claim, each side's summary, the final report.
    workspace = Workspace(folders=("1_claims", "2_summaries", "3_report"), files=_workspace_files)
    rounds_meaning = None
    judging = (Judging(JUDGE, "the judge", (*PRO_DEBATERS, *CON_DEBATERS)),)

    def default_seats(self) -> tuple[Seat, ...]:
        return _DEFAULT_SEATS

    def plan(self, spec: DebateSpec, done: tuple[CompletedTurn, ...]) -> list[TurnPlan]:
        by_key = {turn.key: turn for turn in done}
        language = detect_language(spec.topic)

        claims: dict[str, CompletedTurn] = {}
        missing: list[TurnPlan] = []
        for side in SIDES:
            for role in DEBATERS[side]:
                turn = by_key.get(_key(1, "claim", role))
                if turn is None:
                    missing.append(_claim_plan(spec, language, side, role))
                else:
                    claims[role] = turn
        if missing:
            return missing

        summaries: dict[str, CompletedTurn] = {}
        for side in SIDES:
            turn = by_key.get(_key(2, "summary", SUMMARIZERS[side]))
            if turn is None:
                missing.append(_summary_plan(spec, language, side, claims))
            else:
                summaries[side] = turn
        if missing:
            return missing

        judgement = by_key.get(JUDGEMENT_KEY)
        phases = ("judgement", SWAP_JUDGEMENT) if spec.swap_judge else ("judgement",)
        judgements = [
            _judge_plan(spec, language, summaries, phase)
            for phase in phases
            if _key(3, phase, JUDGE) not in by_key
        ]
        if judgements or judgement is None:
            return judgements
        return _followup_plans(spec, done, language, judgement)

    def verdict(self, plan: TurnPlan, text: str) -> dict[str, Any] | None:
        first = _SHOWN_FIRST.get(plan.phase)
        if first is not None:
            return parse_judgement(text, first=first)
        return None

    def outcome(self, spec: DebateSpec, done: tuple[CompletedTurn, ...]) -> Outcome:
        phases = {"claim", "summary", "judgement", SWAP_JUDGEMENT}
        rounds_run = max((turn.round for turn in done if turn.phase in phases), default=0)
        synthesis = ""
        for turn in done:
            if turn.key == JUDGEMENT_KEY:
                judged = str(_judgement_of(turn).get("synthesis") or "").strip()
                synthesis = judged or turn.text.strip()
        return Outcome(rounds_run=rounds_run, converged=None, synthesis=synthesis)

    def round_limit(self, rounds: int) -> int | None:
        return None  # its three phases are its rounds, with no cap to show

    def notes(self, spec: DebateSpec) -> tuple[str, ...]:
        notes = []
        if spec.blind_judge:
            notes.append("blind judge")
        if spec.swap_judge:
            notes.append("judged twice, sides swapped")
        return tuple(notes)

    def outcome_heading(self, *, converged: bool | None, rounds_run: int) -> Heading:
        return Heading("The judge's synthesis")

    def report_heading(self, *, completed: bool, converged: bool | None, rounds_run: int) -> str:
        return "The judge's synthesis"

    def convergence_note(self, converged: bool | None) -> str | None:
        return None

    def cli_rounds(self, rounds_run: int | None, rounds: int) -> str:
        return "-"

    def finals_markdown(self, debate: Debate, turns: Sequence[Turn], *, date: Date) -> str:
        """The seed gives a panel no finals: its finals is the final report."""
        return _final_report(debate, turns, date)

    def hands_over_plan(self, topic_type: str) -> bool:
        return False  # a panel is judged, not agreed: its synthesis is no plan


FORMAT = Panel()
