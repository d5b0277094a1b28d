"""Every word the formats say to a model: system texts, requests and their exact shapes.

The planners (``duel``, ``panel``) decide who speaks when and with which transcript; this
module only words it. Texts are pure functions of their arguments. Labels a parser reads back
(``CONVERGED``, ``REASON``, the judge's rows, ``SYNTHESIS``, the duel's synthesis lines) stay in
English whatever the language of the debate; everything else is written in the topic's language.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.formats.language import JAPANESE, Language, write_in
from app.formats.verdicts import CRITERIA
from app.spec import ContextFile

# ---------------------------------------------------------------------------- duel

#: The seed's Gemini system instruction, word for word; every Gemini turn carries it.
DEBATE_INSTRUCTION = (
    "You are in an adversarial technical debate with another AI model. Your job:\n"
    "- Form and defend genuine positions based on evidence and reasoning\n"
    "- Concede specific points when the counterargument is stronger — don't defend weak "
    "positions\n"
    "- Introduce new angles, not restate old ones\n"
    "- Be specific: name trade-offs, cite patterns, reference concrete scenarios\n"
    "- If you agree with the other side's point, say so explicitly and explain why it changed "
    "your view"
)

#: The seed's request closing Gemini's opening, word for word.
GEMINI_OPENING_ASK = "Form a clear position on this topic with specific supporting arguments."

AGREED_PREFIX = "Agreed position:"

_TOPIC_TYPES = {
    "plan": "This is a planning debate: argue about the best plan for what the topic describes.",
    "bug": (
        "This is a bug debate: the topic describes a symptom; argue about its most likely "
        "cause and the right fix."
    ),
    "tech": "This is a technical question: argue about the best technical answer.",
}

_SEED_TASKS = {
    "find_bug": (
        "Find the most likely bugs behind what the topic describes. For each: where it is, "
        "why it happens, how to confirm it, and the fix."
    ),
    "plan": (
        "Draft an implementation plan for what the topic describes: the goal, the steps in "
        "order, the parts involved, the risks, and the open questions."
    ),
    "audit": (
        "Audit what the topic and the context describe: correctness, security, performance "
        "and maintainability. List concrete findings by severity, each with its evidence."
    ),
}


def unreconciled_header(rounds_run: int) -> str:
    """The first line of a synthesis that did not converge, as FORMATS.md spells it."""
    return f"Positions not fully reconciled after {rounds_run} round(s). Key tension:"


def _fence(text: str) -> str:
    """A code fence longer than any run of backticks inside ``text``."""
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def context_block(context: Sequence[ContextFile]) -> str:
    """The context files as the debaters read them ("" when there are none)."""
    if not context:
        return ""
    parts = ["Context files:"]
    for item in context:
        shown = len(item.text.splitlines())
        note = f" (first {shown} of {item.total_lines} lines)" if item.truncated else ""
        fence = _fence(item.text)
        parts.append(f"### {item.path}{note}\n{fence}\n{item.text.rstrip()}\n{fence}")
    return "\n\n".join(parts)


def briefing(
    *,
    topic: str,
    topic_type: str,
    context: Sequence[ContextFile],
    seed_tool: str | None = None,
    seed_text: str | None = None,
    seed_author: str = "Gemini",
) -> str:
    """Topic, its type, the context files and the seed analysis: what both openings start from."""
    parts = [topic.strip()]
    if topic_type in _TOPIC_TYPES:
        parts.append(_TOPIC_TYPES[topic_type])
    block = context_block(context)
    if block:
        parts.append(block)
    if seed_tool and seed_text is not None:
        parts.append(
            f"Seed analysis ({seed_tool}, prepared by {seed_author} before the debate):\n\n"
            f"{said(seed_text)}"
        )
    return "\n\n".join(parts)


def said(text: str) -> str:
    """A turn's text as it goes into a message; APIs refuse empty messages."""
    return text.strip() or "(no reply)"


def gemini_system(language: Language) -> str:
    return f"{DEBATE_INSTRUCTION}\n\n{write_in(language)}"


def gemini_opening_request(briefing_text: str) -> str:
    return f"{briefing_text}\n\n{GEMINI_OPENING_ASK}"


def seed_system(language: Language) -> str:
    return (
        "You are a careful senior engineer preparing an analysis that two AI debaters will "
        "read before they argue. Be concrete and evidence-based, and say plainly what you are "
        f"unsure of.\n\n{write_in(language)}"
    )


def seed_request(briefing_text: str, seed_tool: str) -> str:
    task = _SEED_TASKS.get(seed_tool, _SEED_TASKS["audit"])
    return f"{briefing_text}\n\nAnalysis requested: {seed_tool}. {task}"


def claude_system(*, me: str, other: str, language: Language) -> str:
    """The Claude seat's system text: a debater in its own right, never a summarizer."""
    return (
        f"You are {me}, one of the two sides in an adversarial technical debate with another AI "
        f"model, {other}. You are a genuine participant, not a moderator or a summarizer: form "
        "and defend your own positions from evidence and reasoning; concede specific points "
        f"when {other}'s argument is stronger — don't defend weak positions; bring new angles "
        "instead of restating old ones; be specific: name trade-offs, cite patterns, reference "
        "concrete scenarios; if you agree with a point, say so and explain why it changed your "
        f"view. In this conversation your own earlier turns are your messages, and {other}'s "
        f"turns arrive as the other party's messages.\n\n{write_in(language)}"
    )


def claude_opening_request(briefing_text: str, *, other: str) -> str:
    return (
        f"{briefing_text}\n\nRound 1, your opening. Reason about the topic yourself, "
        "considering the context and any seed analysis above, and form a clear, specific "
        f"position with supporting arguments. {other} is forming its own position "
        "independently; you will debate it next."
    )


def other_opening(label: str, text: str) -> str:
    return f"{label}'s opening position (formed independently of yours):\n\n{said(text)}"


def other_response(label: str, round_number: int, text: str) -> str:
    return f"{label}'s response (round {round_number}):\n\n{said(text)}"


def counterargument(label: str, round_number: int, text: str) -> str:
    return f"{label}'s counterargument (round {round_number}):\n\n{said(text)}"


def rebuttal_instruction(*, round_number: int, other: str) -> str:
    return (
        f"Round {round_number}. Counter {other}'s last position above. Find its weakest point, "
        "bring a new angle, or concede the specific points that are stronger than yours — real "
        f"reasoning, not a restatement. Speak directly to {other}."
    )


def convergence_instruction(*, round_number: int, other: str, language: Language) -> str:
    return (
        f"Round {round_number} is over. Check honestly, as a participant (not a judge)"
        f": Are you repeating your arguments? Is {other}? Do you genuinely disagree "
        f"with {other}'s last point, or are you reaching for objections? If you agree with "
        f"{other}'s position and have nothing substantive left to counter, the debate has "
        "converged.\n\n"
        "Answer in exactly this form, and nothing else:\n"
        "CONVERGED: yes or no\n"
        "REASON: <one or two sentences>\n\n"
        f"Keep the labels CONVERGED and REASON and the word yes or no in English; write the "
        f"reason in {language.name}."
    )


def synthesis_instruction(
    *, converged: bool, rounds_run: int, me: str, other: str, language: Language
) -> str:
    """The exact shape FORMATS.md gives the synthesis, for the case at hand."""
    keep = (
        f"Keep the labels exactly as shown, in English; write everything else in {language.name}."
    )
    if converged:
        return (
            "The debate has converged. Write the final synthesis as someone who argued it. "
            "Write exactly this shape, and nothing else:\n\n"
            f"{AGREED_PREFIX} <1–3 sentences: the convergent position, with the strongest "
            f"reasoning from both sides>\n\n{keep}"
        )
    return (
        f"The debate ends without full agreement after {rounds_run} round(s). Write the final "
        "synthesis as someone who argued it. Write exactly this shape, and nothing else:\n\n"
        f"{unreconciled_header(rounds_run)} <the core disagreement in one sentence>\n"
        f"Strongest argument ({me}): <your best point that {other} did not fully counter>\n"
        f"Strongest argument ({other}): <{other}'s best point that you could not fully "
        "counter>\n"
        "Best available synthesis: <the position that keeps what is right on both sides>\n\n"
        f"{keep}"
    )


# ---------------------------------------------------------------------------- panel


def claim_headings(language: Language) -> tuple[str, str, str]:
    """Thesis, grounds, pre-emptive rebuttal."""
    if language == JAPANESE:
        return ("要旨", "根拠", "先制回答")
    return ("Thesis", "Grounds", "Pre-emptive rebuttal")


def summary_headings(language: Language) -> tuple[str, str, str]:
    """Core claims, unique insights, strength assessment."""
    if language == JAPANESE:
        return ("共通主張（Core Claims）", "独自の洞察（Unique Insights）", "強度評価")
    return ("Core Claims", "Unique Insights", "Strength assessment")


def side_name(side: str, language: Language) -> str:
    if language == JAPANESE:
        return "賛成派（PRO）" if side == "pro" else "反対派（CON）"
    return "PRO" if side == "pro" else "CON"


def criterion_label(name: str, language: Language) -> str:
    """A judge criterion (or "Overall") as a report in ``language`` names it."""
    if language == JAPANESE:
        return {
            "Logical consistency": "論理的整合性",
            "Specificity of evidence": "根拠の具体性",
            "Rebuttal strength": "反論への対応力",
            "Originality": "独自性",
            "Overall": "総合",
        }.get(name, name)
    return name


def _stance(side: str) -> str:
    if side == "pro":
        return "PRO: argue for the proposition in the topic (the answer is yes)."
    return "CON: argue against the proposition in the topic (the answer is no)."


def debater_system(*, side: str, language: Language) -> str:
    return (
        "You are one of six debaters in a panel debate: three argue for the proposition (PRO) "
        f"and three against it (CON). You argue the {side.upper()} side. Argue only your side, "
        "as strongly and honestly as you can, with specific evidence, examples and reasoning. "
        f"Your claim will be summarized with your side's other two claims and judged.\n\n"
        f"{write_in(language)}"
    )


def debater_request(*, topic: str, side: str, language: Language) -> str:
    thesis, grounds, rebuttal = claim_headings(language)
    return (
        f"Topic: {topic.strip()}\n"
        f"Your stance: {_stance(side)}\n\n"
        "Write your claim in Markdown with exactly these three sections:\n\n"
        f"## {thesis}\n<your thesis in one or two sentences>\n\n"
        f"## {grounds}\n<three to five specific grounds, each with its evidence or example>\n\n"
        f"## {rebuttal}\n<the strongest objection the other side will raise, and your answer "
        "to it>"
    )


#: What a blind judge is shown instead of the sides' names, by the order it was shown them
#: (digits, not letters, which would read as the grades A, B and C); ``verdicts`` reads
#: them back.
BLIND_SIDES = ("Side 1", "Side 2")


def blind_debater(number: int) -> str:
    """A debater as a blind judge's summaries name it: by number, never by model or side."""
    return f"Debater {number}"


def summarizer_system(*, side: str, language: Language, blind: bool = False) -> str:
    if blind:
        # The summary is all the judge reads: for a blind judge it names no side, model or
        # provider (the debaters' own words, quoted, are left as they wrote them).
        return (
            "You summarize one side of a panel debate. You receive that side's three claims "
            "exactly as their debaters wrote them. Summarize faithfully: add no arguments of "
            "your own and do not argue with them. The judge who reads your summary must not "
            'know who argued what: call the side only "this side" and the debaters only '
            f"{', '.join(blind_debater(n) for n in (1, 2, 3))}; never say whether this side is "
            "for or against, and never name a model, a provider or a company.\n\n"
            f"{write_in(language)}"
        )
    return (
        f"You summarize the {side.upper()} side of a panel debate. You receive that side's "
        "three claims exactly as their debaters wrote them. Summarize faithfully: add no "
        "arguments of your own and do not argue with them.\n\n"
        f"{write_in(language)}"
    )


def summarizer_request(
    *,
    topic: str,
    side: str,
    claims: Sequence[tuple[str, str]],
    language: Language,
    blind: bool = False,
) -> str:
    """``claims`` are (debater label, claim text), passed through verbatim. ``blind``: the
    side is not named (the labels are then the blind ones, ``blind_debater``)."""
    core, unique, strength = summary_headings(language)
    quoted = "\n\n".join(
        f"=== Claim {number}: {label} ===\n{said(text)}"
        for number, (label, text) in enumerate(claims, start=1)
    )
    side_line = "" if blind else f"Side: {side_name(side, language)}\n"
    return (
        f"Topic: {topic.strip()}\n"
        f"{side_line}\n"
        f"The {len(claims)} claims of this side:\n\n{quoted}\n\n"
        "Write the summary in Markdown with exactly these three sections:\n\n"
        f"## {core}\n<the claims shared by all three debaters>\n\n"
        f"## {unique}\n<points made by only one debater, naming which>\n\n"
        f"## {strength}\n<how strong this side's case is: what is robust and what is thin>"
    )


def judge_system(language: Language, *, blind: bool = False) -> str:
    if blind:
        first, second = BLIND_SIDES
        return (
            "You are the judge of a panel debate. You receive two summaries, one of each side, "
            f"named only {first} and {second} by the order you are shown them: you are not told "
            "which side argues for the topic or who the debaters are. Judge the arguments alone. "
            "Score both sides fairly, then write a dialectical synthesis (止揚, Aufhebung): a "
            "higher-level conclusion that keeps what is right on both sides. This is not a "
            "winner-takes-all verdict.\n\n"
            f"{write_in(language)}"
        )
    return (
        "You are the judge of a panel debate. You receive two summaries, one of the PRO side "
        "and one of the CON side. Score both sides fairly, then write a dialectical synthesis "
        "(止揚, Aufhebung): a higher-level conclusion that keeps what is right on both sides. "
        "This is not a winner-takes-all verdict.\n\n"
        f"{write_in(language)}"
    )


def judge_request(
    *,
    topic: str,
    pro_summary: str,
    con_summary: str,
    language: Language,
    first: str = "pro",
    blind: bool = False,
) -> str:
    """The two summaries, the side ``first`` shown first; ``blind``: the sides named by that
    order (``BLIND_SIDES``) instead of pro and con."""
    order = ("pro", "con") if first == "pro" else ("con", "pro")
    summaries = {"pro": pro_summary, "con": con_summary}
    if blind:
        marks = dict(zip(order, BLIND_SIDES, strict=True))
        headings = marks
    else:
        marks = {"pro": "Pro", "con": "Con"}
        headings = {side: side_name(side, language) for side in order}
    one, two = (marks[side] for side in order)
    rows = "\n".join(
        f"{name} | {one}: <A, B or C> — <one-line reason> | {two}: <A, B or C> — <one-line reason>"
        for name in CRITERIA
    )
    shown = "\n\n".join(f"## {headings[side]} summary\n\n{said(summaries[side])}" for side in order)
    return (
        f"Topic: {topic.strip()}\n\n"
        f"{shown}\n\n"
        "Grade each side A, B or C on each criterion, with a one-line reason; then give each "
        "side an overall grade and a score out of 10; then write the synthesis. Write exactly "
        "this shape:\n\n"
        "SCORES\n"
        f"{rows}\n"
        f"Overall | {one}: <A, B or C> <score>/10 | {two}: <A, B or C> <score>/10\n\n"
        "SYNTHESIS\n"
        "<the dialectical synthesis: name the real tension between the sides, what each gets "
        "right, and the higher-level conclusion that keeps both>\n\n"
        f"Keep the labels (SCORES, the criterion names, {one}, {two}, Overall, SYNTHESIS) "
        f"exactly as shown, in English; write the reasons and the synthesis in {language.name}."
    )


# ---------------------------------------------------------------------------- follow-ups


def followup_part_debater(*, other: str) -> str:
    """What a duel seat was in the debate it answers about."""
    return f"You argued one side of this debate against {other}."


def followup_part_side(side: str) -> str:
    """What a panel debater was: one voice of its side."""
    return (
        f"You argued the {side.upper()} side of this panel debate, with two other debaters of "
        "your side; a summarizer per side and a judge followed."
    )


def followup_part_judge() -> str:
    return (
        "You judged this panel debate: you scored both sides and wrote its dialectical "
        "synthesis. Answer as the judge: fairly, weighing what each side got right."
    )


def followup_system(*, me: str, part: str, language: Language) -> str:
    return (
        f"You are {me}. {part} The debate has ended; a person now asks a follow-up question "
        "about it. Answer that question directly, from what was argued and concluded and from "
        "your own reasoning. Stay the participant you were: keep the positions that still hold, "
        "and say plainly where the question changes your view. Be specific and concise; do not "
        f"restate the whole debate.\n\n{write_in(language)}"
    )


def followup_request(
    *,
    topic: str,
    record: Sequence[tuple[str, str]],
    left_out: int,
    conclusion: str,
    earlier: Sequence[tuple[str, str]],
    number: int,
    question: str,
) -> str:
    """The debate as the answering seat reads it, then the question. ``record`` and
    ``earlier`` (earlier follow-ups with their answers) are (heading, text) pairs, already
    cut to fit; ``left_out`` says how many of the oldest turns did not fit."""
    parts = [f"Topic: {topic.strip()}", "## The debate"]
    if left_out:
        parts.append(f"({left_out} earlier turn(s) are left out for length.)")
    parts += [f"### {heading}\n\n{said(text)}" for heading, text in record]
    if conclusion.strip():
        parts += ["## Its conclusion", conclusion.strip()]
    if earlier:
        parts.append("## Earlier follow-up questions and their answers")
        parts += [f"### {heading}\n\n{said(text)}" for heading, text in earlier]
    parts += [
        f"## Follow-up question {number}",
        question.strip(),
        "Answer this follow-up question now.",
    ]
    return "\n\n".join(parts)
