"""Detecting the topic's language, which every system prompt names."""

from __future__ import annotations

import pytest

from app.debates import MAX_TOPIC_CHARS
from app.formats.language import _SCRIPTS, ENGLISH, JAPANESE, detect_language, write_in


@pytest.mark.parametrize(
    ("topic", "code"),
    [
        ("Should a small team adopt a monorepo?", "en"),
        ("ソフトウェア開発においてテストは本当に必要か", "ja"),
        ("TDDは本当に必要か", "ja"),
        ("テスト", "ja"),
        ("軟件開發中測試真的必要嗎", "zh"),
        ("软件开发中测试真的有必要吗", "zh"),
        ("소프트웨어 개발에서 테스트는 정말 필요한가", "ko"),
        ("Нужны ли тесты в разработке программ?", "ru"),
        ("Чи потрібні тести у розробці програм?", "uk"),
        ("Είναι απαραίτητα τα τεστ;", "el"),
        ("هل الاختبارات ضرورية في تطوير البرمجيات؟", "ar"),
        ("האם בדיקות נחוצות בפיתוח תוכנה?", "he"),
        ("การทดสอบจำเป็นหรือไม่", "th"),
        ("क्या परीक्षण आवश्यक है?", "hi"),
        ("Les tests sont-ils vraiment nécessaires dans le développement?", "fr"),
        ("Sind Tests in der Softwareentwicklung wirklich nicht verzichtbar?", "de"),
        ("¿Son las pruebas realmente necesarias en el desarrollo de software?", "es"),
        ("", "en"),
        ("1234 ?!", "en"),
        ("Is TDD worth it? テスト", "en"),
        ("Use la carte pricing or not?", "en"),
    ],
)
def test_detect_language(topic: str, code: str) -> None:
    assert detect_language(topic).code == code


def test_write_in_names_the_language() -> None:
    assert write_in(JAPANESE) == "Write in Japanese."
    assert write_in(ENGLISH) == "Write in English."


_SCRIPT_LANGUAGE = {
    "kana": "ja",
    "han": "zh",
    "hangul": "ko",
    "cyrillic": "ru",
    "greek": "el",
    "arabic": "ar",
    "hebrew": "he",
    "thai": "th",
    "devanagari": "hi",
}


@pytest.mark.parametrize(("script", "first", "last"), _SCRIPTS)
def test_every_script_is_recognised_from_its_first_code_point_to_its_last(
    script: str, first: int, last: int
) -> None:
    for point in (first, (first + last) // 2, last):
        assert detect_language(chr(point) * 3).code == _SCRIPT_LANGUAGE[script], hex(point)


@pytest.mark.parametrize(
    ("topic", "code"),
    [
        ("Should a small team adopt a monorepo? " * 52, "en"),
        ("Les tests sont-ils vraiment nécessaires dans le développement? " * 31, "fr"),
        ("ソフトウェア開発においてテストは本当に必要か" * 90, "ja"),
        ("Нужны ли тесты в разработке программ? " * 51, "ru"),
    ],
)
def test_a_topic_at_the_length_limit_is_detected_like_a_short_one(topic: str, code: str) -> None:
    assert len(topic) <= MAX_TOPIC_CHARS
    assert detect_language(topic).code == code
