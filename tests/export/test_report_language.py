"""A panel report's fixed words are Japanese only for a Japanese topic: the report asks the
same language detector the debaters' prompts do, so a Chinese topic (Han characters, no
kana) is not given a Japanese report."""

from __future__ import annotations

from datetime import datetime

import pytest

from app import export
from app.formats.language import detect_language
from tests.export import samples

NOW = datetime(2026, 3, 19, 6, 0, 0)
JAPANESE_HEADING = "# 討論レポート"
ENGLISH_HEADING = "# Debate report"


def report_for(topic: str) -> str:
    debate, turns = samples.panel_en()
    debate.topic = topic
    return export.final_report_markdown(debate, turns, date=NOW)


@pytest.mark.parametrize(
    "topic", ["软件开发中测试真的有必要吗", "我们应该使用微服务还是单体架构？"]
)
def test_a_chinese_topic_is_not_given_a_japanese_report(topic: str) -> None:
    assert detect_language(topic).code == "zh"
    report = report_for(topic)
    assert not report.startswith(JAPANESE_HEADING)
    assert report.startswith(ENGLISH_HEADING)


@pytest.mark.parametrize("topic", [samples.JA_TOPIC, "テスト", "マイクロサービスは必要か"])
def test_a_japanese_topic_is_given_a_japanese_report(topic: str) -> None:
    assert detect_language(topic).code == "ja"
    assert report_for(topic).startswith(JAPANESE_HEADING)


def test_an_english_topic_with_a_word_of_japanese_keeps_an_english_report() -> None:
    topic = "Is TDD worth it? テスト"
    assert detect_language(topic).code == "en"
    assert report_for(topic).startswith(ENGLISH_HEADING)
