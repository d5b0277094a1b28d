"""What the start-a-debate form tells people before they submit it: what each topic type and
seed analysis does (and that the two "plan"s differ), the model that will answer in each seat,
the models they may pick from, and the topic's limit without a hard cut; and the icon every
page names."""

from __future__ import annotations

import re
from html import unescape

from fastapi.testclient import TestClient

from app import pricing
from app.debates import MAX_TOPIC_CHARS
from tests.web.test_routes import form_fields


def options_of(page: str, select_id: str) -> dict[str, str]:
    """An HTML select's options as {value: text}."""
    select = re.search(rf'<select id="{select_id}"[^>]*>(.*?)</select>', page, re.S)
    assert select is not None, f"no select #{select_id}"
    found = re.findall(r'<option value="([^"]*)"[^>]*>(.*?)</option>', select.group(1), re.S)
    return {value: unescape(re.sub(r"<[^>]+>", "", text)).strip() for value, text in found}


def test_the_icon_is_named_by_every_page_and_answered_at_favicon_ico(
    client: TestClient,
) -> None:
    for path in ("/", "/debates"):
        assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in (
            client.get(path).text
        )
    icon = client.get("/favicon.ico")
    assert icon.status_code == 200
    assert icon.headers["content-type"].startswith("image/svg+xml")
    assert icon.content.lstrip().startswith(b"<svg")
    assert client.get("/static/favicon.svg").content == icon.content


def test_topic_types_and_seed_analyses_are_explained_and_never_read_alike(
    client: TestClient,
) -> None:
    page = client.get("/").text
    topic_types = options_of(page, "topic_type")
    seeds = options_of(page, "seed")
    assert set(topic_types) == {"general", "plan", "bug", "tech"}
    assert set(seeds) == {"", "find_bug", "plan", "audit"}
    # Both offer "plan": what people read for each must differ, and say what it does.
    assert topic_types["plan"] != seeds["plan"]
    assert not set(topic_types.values()) & set(seeds.values())
    assert "plan" in topic_types["plan"].lower() and "draft" in seeds["plan"].lower()
    for field in ("topic_type", "seed"):
        described = re.search(rf'<select id="{field}"[^>]*aria-describedby="([^"]+)"', page)
        assert described is not None, f"#{field} is not described"
        hint = re.search(rf'id="{described.group(1)}"[^>]*>(.*?)</', page, re.S)
        assert hint is not None and len(hint.group(1).strip()) > 40


def test_each_seat_names_the_model_that_will_answer_beside_its_role(client: TestClient) -> None:
    page = client.get("/").text
    settings = client.app.state.settings  # type: ignore[attr-defined]
    claude = options_of(page, "seat-duel-claude")
    gemini = options_of(page, "seat-duel-gemini")
    assert claude["anthropic"].startswith(f"anthropic · {settings.anthropic_model}")
    assert claude["openai"].startswith(f"openai · {settings.openai_model}")
    assert gemini["gemini"].startswith(f"gemini · {settings.gemini_model}")
    label = re.search(r'<label for="seat-duel-claude">(.*?)</label>', page, re.S)
    assert label is not None and "answered by" in label.group(1)


def test_model_fields_offer_each_ready_providers_model_and_still_take_any_name(
    client: TestClient,
) -> None:
    page = client.get("/").text
    settings = client.app.state.settings  # type: ignore[attr-defined]
    datalist = re.search(r'<datalist id="known-models">(.*?)</datalist>', page, re.S)
    assert datalist is not None
    offered = re.findall(r'<option value="([^"]+)"', datalist.group(1))
    for model in (settings.anthropic_model, settings.gemini_model, settings.openai_model):
        assert model in offered
    inputs = re.findall(r'<input id="model-[^"]+"[^>]*>', page)
    assert inputs and all('list="known-models"' in tag for tag in inputs)
    assert all('type="text"' in tag for tag in inputs)  # free text, not a closed choice


def test_model_fields_offer_the_ready_providers_listed_models_beside_their_defaults(
    client: TestClient,
) -> None:
    page = client.get("/").text
    datalist = re.search(r'<datalist id="known-models">(.*?)</datalist>', page, re.S)
    assert datalist is not None
    offered = dict(re.findall(r'<option value="([^"]+)" label="([^"]+)"', datalist.group(1)))
    listed = pricing.bundled_table().prices
    for provider, prefix in (("anthropic", "claude-"), ("gemini", "gemini-"), ("openai", "gpt-")):
        family = {name for name in listed if name.startswith(prefix)}
        assert len(family) > 1
        assert family <= set(offered)
        assert {offered[name] for name in family} == {provider}


def test_the_topic_has_no_hard_cut_and_states_its_count_and_limit(client: TestClient) -> None:
    page = client.get("/").text
    textarea = re.search(r'<textarea id="topic"[^>]*>', page)
    assert textarea is not None
    assert "maxlength" not in textarea.group(0)  # the browser would cut a paste silently
    counter = re.search(r'<p [^>]*id="topic-count"[^>]*>', page)
    assert counter is not None
    assert f'data-limit="{MAX_TOPIC_CHARS}"' in counter.group(0)
    assert 'aria-live="polite"' in counter.group(0)


def test_a_topic_over_the_limit_comes_back_with_the_servers_count(client: TestClient) -> None:
    response = client.post("/debates", data=form_fields(topic="x" * 10_000))
    assert response.status_code == 422
    assert "The topic is at most 2,000 characters; this one has 10,000." in response.text


def test_line_breaks_in_a_typed_topic_count_once_as_they_do_while_typing(
    client: TestClient,
) -> None:
    # A browser sends each line break of a textarea as CR LF; the counter counts one.
    topic = "line\r\n" * 390  # 1,950 characters as typed, 2,340 as sent
    response = client.post("/debates", data=form_fields(topic=topic), follow_redirects=False)
    assert response.status_code == 303, response.text
    debate = client.get(f"/api{response.headers['location']}").json()
    assert debate["topic"] == ("line\n" * 390).strip()
