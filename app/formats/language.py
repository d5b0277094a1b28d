"""The language of a topic: every debater, summarizer and judge writes in it.

Detection is deliberately basic and pure: the script of the letters decides (kana means
Japanese, Hangul Korean, Han without kana Chinese, Cyrillic, Greek, Arabic …), and Latin text
is English unless a handful of common words clearly say French, German, Spanish, Portuguese
or Italian. A wrong guess costs little: the instruction is one line in a system prompt.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["ENGLISH", "JAPANESE", "Language", "detect_language", "write_in"]


@dataclass(frozen=True)
class Language:
    code: str
    name: str


ENGLISH = Language("en", "English")
JAPANESE = Language("ja", "Japanese")
CHINESE = Language("zh", "Chinese")
KOREAN = Language("ko", "Korean")
RUSSIAN = Language("ru", "Russian")
UKRAINIAN = Language("uk", "Ukrainian")
GREEK = Language("el", "Greek")
ARABIC = Language("ar", "Arabic")
PERSIAN = Language("fa", "Persian")
HEBREW = Language("he", "Hebrew")
THAI = Language("th", "Thai")
HINDI = Language("hi", "Hindi")
FRENCH = Language("fr", "French")
GERMAN = Language("de", "German")
SPANISH = Language("es", "Spanish")
PORTUGUESE = Language("pt", "Portuguese")
ITALIAN = Language("it", "Italian")

# (first, last) code points of each script we recognise. The ranges do not overlap: a point's
# range is the one with the greatest first code point not above it.
_SCRIPTS: tuple[tuple[str, int, int], ...] = (
    ("kana", 0x3040, 0x30FF),
    ("kana", 0x31F0, 0x31FF),
    ("kana", 0xFF66, 0xFF9F),
    ("han", 0x3400, 0x4DBF),
    ("han", 0x4E00, 0x9FFF),
    ("han", 0xF900, 0xFAFF),
    ("hangul", 0x1100, 0x11FF),
    ("hangul", 0x3130, 0x318F),
    ("hangul", 0xAC00, 0xD7AF),
    ("cyrillic", 0x0400, 0x04FF),
    ("greek", 0x0370, 0x03FF),
    ("arabic", 0x0600, 0x06FF),
    ("hebrew", 0x0590, 0x05FF),
    ("thai", 0x0E00, 0x0E7F),
    ("devanagari", 0x0900, 0x097F),
)

_SORTED_SCRIPTS = sorted(_SCRIPTS, key=lambda script: script[1])
_FIRSTS = [first for _, first, _ in _SORTED_SCRIPTS]

# A CJK character carries about a word; a Latin letter a fraction of one. Weighting keeps
# "Is TDD worth it? テスト" English and "テストは本当に必要か" Japanese.
_WEIGHT = {"kana": 3, "han": 3, "hangul": 3}

_UKRAINIAN_LETTERS = frozenset("іїєґІЇЄҐ")
_PERSIAN_LETTERS = frozenset("پچژگ")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Common short words that are not also common English words.
_LATIN_WORDS: dict[Language, frozenset[str]] = {
    FRENCH: _words("le la les des est une et dans pour pas que qui sur avec ce sont du"),
    GERMAN: _words("der die das und ist nicht ein eine mit für auf sind oder wir ich"),
    SPANISH: _words("el los las es una y en para por que con del se son más o"),
    PORTUGUESE: _words("os as é um uma não para com que do da em são mais ou"),
    ITALIAN: _words("il lo gli è un una non per con che del della sono più e"),
}
_ENGLISH_WORDS = _words("the a an is are and or of to in for with that this it be should we not on")
_WORD = re.compile(r"[^\W\d_]+")


def _script(char: str) -> str | None:
    point = ord(char)
    index = bisect_right(_FIRSTS, point) - 1
    if index >= 0:
        name, _, last = _SORTED_SCRIPTS[index]
        if point <= last:
            return name
    if char.isalpha():
        return "latin"
    return None


# Planners ask again for the same topic before every batch of turns, on the event loop.
@lru_cache(maxsize=512)
def detect_language(text: str) -> Language:
    """The language ``text`` is most likely written in; English when unsure."""
    if text.isascii():
        # Every ASCII letter is Latin: the words alone decide.
        return _latin_language(text)
    weights: Counter[str] = Counter()
    for char in text:
        script = _script(char)
        if script is not None:
            weights[script] += _WEIGHT.get(script, 1)
    if not weights:
        return ENGLISH
    cjk = weights["kana"] + weights["han"]
    top, top_weight = max(weights.items(), key=lambda item: item[1])
    if cjk >= top_weight and cjk > weights["latin"]:
        # Any kana at all means Japanese: Chinese never uses it.
        return JAPANESE if weights["kana"] else CHINESE
    if top == "hangul":
        return KOREAN
    if top == "cyrillic":
        return UKRAINIAN if any(c in _UKRAINIAN_LETTERS for c in text) else RUSSIAN
    if top == "arabic":
        return PERSIAN if any(c in _PERSIAN_LETTERS for c in text) else ARABIC
    others = {"greek": GREEK, "hebrew": HEBREW, "thai": THAI, "devanagari": HINDI}
    if top in others:
        return others[top]
    return _latin_language(text)


def _latin_language(text: str) -> Language:
    words = [w.lower() for w in _WORD.findall(text)]
    english = sum(w in _ENGLISH_WORDS for w in words)
    best, best_hits = ENGLISH, 0
    for language, vocabulary in _LATIN_WORDS.items():
        hits = sum(w in vocabulary for w in words)
        if hits > best_hits:
            best, best_hits = language, hits
    # Two distinctive words, and more of them than English ones, before we leave English.
    if best_hits >= 2 and best_hits > english:
        return best
    return ENGLISH


def write_in(language: Language) -> str:
    """The one line every system prompt carries."""
    return f"Write in {language.name}."
