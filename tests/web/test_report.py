"""The shareable report (``/debates/{id}/report.html``) and the panel's verdict at a glance:
a panel runs for real on the SDK adapters against the fake LLM server, its judge scripted,
and the judge's grades and scores must come out exactly on the debate page, in the HTML
report and in the Markdown finals; an answer that cannot be read says so in all three."""

from __future__ import annotations

import base64
import hashlib
import re
from html.parser import HTMLParser

import pytest
from fastapi.testclient import TestClient

from tests.fakes.llm_server import FakeLLMServer
from tests.web import sse
from tests.web.conftest import start_duel, wait_for_debate

JUDGE_ASK = "You are the judge of a panel debate"
JUDGEMENT = """SCORES
Logical consistency | Pro: A — Coherent from start to end | Con: B — Scope unclear
Specificity of evidence | Pro: B — Few numbers | Con: B — Anecdotes only
Rebuttal strength | Pro: A — Answers the cost argument | Con: C — Ignores the defect data
Originality | Pro: B — Familiar ground | Con: A — The pairing angle
Overall | Pro: A 8.5/10 | Con: B 6/10

SYNTHESIS
Review pays when changes are small and reviews are fast.
"""
UNREADABLE = "Both sides argued well and I would not want to choose between them."


class Cells(HTMLParser):
    """The text of each cell of the table with class ``scorecard``, row by row."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self._in_table = False
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table" and ("class", "scorecard") in attrs:
            self._in_table = True
        elif self._in_table and tag == "tr":
            self.rows.append([])
        elif self._in_table and tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._in_table = False
        elif self._cell is not None and tag in ("td", "th"):
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def scorecard_rows(html: str) -> list[list[str]]:
    parser = Cells()
    parser.feed(html)
    return parser.rows


def run_panel(client: TestClient, fake_llm: FakeLLMServer, judgement: str) -> str:
    fake_llm.rule(contains=JUDGE_ASK, reply=judgement)
    response = client.post("/api/debates", json={"topic": "Code review", "format": "panel"})
    assert response.status_code == 201, response.text
    debate_id: str = response.json()["id"]
    assert wait_for_debate(client, debate_id) == "completed"
    return debate_id


EXPECTED_ROWS = [
    ["Criterion", "Pro", "Con"],
    ["Logical consistency", "A Coherent from start to end", "B Scope unclear"],
    ["Specificity of evidence", "B Few numbers", "B Anecdotes only"],
    ["Rebuttal strength", "A Answers the cost argument", "C Ignores the defect data"],
    ["Originality", "B Familiar ground", "A The pairing angle"],
    ["Overall", "A 8.5/10", "B 6.0/10"],
]


def test_the_judges_scores_show_as_a_table_with_the_side_ahead_everywhere(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    debate_id = run_panel(client, fake_llm, JUDGEMENT)

    page = client.get(f"/debates/{debate_id}").text
    report = client.get(f"/debates/{debate_id}/report.html").text
    # The page stream's closing swap, which a viewer watching the debate end receives.
    closing = sse.parse(client.get(f"/debates/{debate_id}/stream").text)[-1]
    assert closing.event == "end"
    for html in (page, report, closing.data):
        assert scorecard_rows(html) == EXPECTED_ROWS
        assert "Pro is ahead: 8.5/10 to 6.0/10." in html
        assert "could not be read" not in html

    finals = client.get(f"/debates/{debate_id}/finals.md").text
    assert "| Overall | A (8.5/10) | B (6.0/10) |" in finals
    assert "**Ahead on points**: Pro (8.5/10 to 6.0/10)" in finals


def test_an_unreadable_judgement_says_it_could_not_be_read_everywhere(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    debate_id = run_panel(client, fake_llm, UNREADABLE)

    page = client.get(f"/debates/{debate_id}").text
    report = client.get(f"/debates/{debate_id}/report.html").text
    for html in (page, report):
        assert "The judge's scores could not be read" in html
        assert scorecard_rows(html) == []
        assert UNREADABLE in html  # the judge's own answer is still there to read

    finals = client.get(f"/debates/{debate_id}/finals.md").text
    assert "The judge's scores could not be read" in finals
    assert "Ahead on points" not in finals


def test_a_judgement_read_in_part_marks_each_missing_grade(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    partial = JUDGEMENT.replace(
        "Originality | Pro: B — Familiar ground | Con: A — The pairing angle\n", ""
    ).replace("Overall | Pro: A 8.5/10 | Con: B 6/10", "Overall | Pro: A 7/10 | Con: B")
    debate_id = run_panel(client, fake_llm, partial)

    rows = scorecard_rows(client.get(f"/debates/{debate_id}").text)

    assert rows[4] == ["Originality", "could not be read", "could not be read"]
    assert rows[5] == ["Overall", "A 7.0/10", "B score could not be read"]
    assert rows[1] == EXPECTED_ROWS[1]


def policy_directives(header: str) -> dict[str, list[str]]:
    directives = {}
    for part in header.split(";"):
        name, *sources = part.split()
        directives[name] = sources
    return directives


def test_the_report_is_one_self_contained_printable_file_under_a_strict_policy(
    client: TestClient, fake_llm: FakeLLMServer
) -> None:
    debate_id = start_duel(client, topic="Tabs or spaces", rounds=2)
    assert wait_for_debate(client, debate_id) == "completed"
    debate = client.get(f"/api/debates/{debate_id}").json()

    response = client.get(f"/debates/{debate_id}/report.html")

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    html = response.text
    [style] = re.findall(r"<style>(.*?)</style>", html, flags=re.S)
    digest = base64.b64encode(hashlib.sha256(style.encode()).digest()).decode()
    policy = policy_directives(response.headers["content-security-policy"])
    assert policy["default-src"] == ["'none'"]
    assert policy["style-src"] == [f"'sha256-{digest}'"]
    assert "script-src" not in policy and policy["frame-ancestors"] == ["'none'"]
    assert f"style-src 'sha256-{digest}'" in html.replace("&#39;", "'")  # the <meta> too
    assert "@media print" in style
    assert not re.search(r"<script|<link|<img|\ssrc=|@import|url\(", html, flags=re.I)
    assert not re.search(r"""href=["']?(?!#)""", html)
    # What it contains: the facts, every turn by round and phase, the synthesis, tokens.
    assert "<h1>Tabs or spaces</h1>" in html
    assert "up to 2 rounds" in html
    for seat in debate["seats"]:
        assert f'<span class="seat">{seat["label"]}</span>' in html
    assert debate["created_at"][:10] in html
    assert f"{debate['usage']['total_tokens']:,}" in html
    assert len(re.findall(r'<article class="turn', html)) == len(debate["turns"])
    for turn in debate["turns"]:
        assert f'data-key="{turn["key"]}"' in html
    assert "Round 1" in html and "Round 2" in html
    assert debate["synthesis"].split()[0] in html

    saved = client.get(f"/debates/{debate_id}/report.html", params={"download": "true"})
    assert (
        saved.headers["content-disposition"] == 'attachment; filename="tabs-or-spaces-report.html"'
    )
    assert saved.text == html
    page = client.get(f"/debates/{debate_id}").text
    assert f'href="/debates/{debate_id}/report.html"' in page


def test_the_report_of_an_unknown_debate_is_404(client: TestClient) -> None:
    response = client.get("/debates/0123456789ab/report.html")
    assert response.status_code == 404


@pytest.mark.parametrize("path", ["/", "/debates"])
def test_other_pages_keep_the_apps_own_policy(client: TestClient, path: str) -> None:
    policy = policy_directives(client.get(path).headers["content-security-policy"])
    assert policy["style-src"] == ["'self'"]
