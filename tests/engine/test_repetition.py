"""The runaway-repetition detector: a real SmolLM2 loop is caught early and cut after its
second repetition; prose, lists and tables that merely look alike are left alone."""

from __future__ import annotations

import random
import re
import string
from collections.abc import Iterator

from app.repetition import (
    KEPT_REPEATS,
    MAX_PHRASE_CHARS,
    MIN_LOOP_CHARS,
    MIN_PHRASE_CHARS,
    PHRASE_REPEATS,
    RepetitionWatch,
    Runaway,
    find_line_loop,
    find_phrase_loop,
    find_runaway,
)

# SmolLM2-135M-Instruct's own reply (greedy, no repeat penalty) to "Should cities ban cars
# from their centres? Give your opening argument.", cut by its 400-token cap.
SMOLLM2_LOOP = (
    "The debate rages on, with cities and transportation planning vying for their attention. "
    "In my opinion, it's a delicate balancing act. On one hand, we have cities that have "
    "already made significant strides in reducing the number of cars on their roads. Cities "
    "like Barcelona, Barcelona, and Barcelona-Catalunya, which have made it possible to reduce "
    "the number of cars on their roads.\n\n"
    "On the other hand, I believe that cities should not only reduce the number of cars on "
    "their roads but also make it possible for people to travel without relying on cars. "
    "Cities have already made it possible to reduce the number of cars on their roads, but "
    "they still need to make it possible for people to travel without relying on cars.\n\n"
    "I believe that cities should make it possible for people to travel without relying on "
    "cars. This is a moral imperative that needs to be taken seriously. I believe that cities "
    "should make it possible for people to travel without relying on cars, and I believe that "
    "this is something that needs to be done.\n\n"
    "I believe that this is a moral imperative that needs to be taken seriously. I believe "
    "that this is something that needs to be taken seriously. I believe that this is "
    "something that needs to be taken seriously.\n\n"
    + (
        "I believe that this is something that needs to be taken seriously. I believe that "
        "this is something that needs to be taken seriously.\n\n"
    )
    * 6
    + "I believe that this is something"
)
LOOPED_SENTENCE = "I believe that this is something that needs to be taken seriously."

DEBATE_ANSWER = """\
## Opening: cities should close their centres to private cars

Closing a city centre to cars is not a ban on movement; it is a choice about who the street
is for. Three arguments carry the case.

1. **Health.** Traffic is the main source of nitrogen dioxide in most European centres.
2. **Safety.** Most pedestrian deaths happen on urban roads with mixed traffic.
3. **Business.** Shops on pedestrianised streets report more visits, not fewer.

- Deliveries keep a morning window.
- Residents keep their permits.
- Taxis and buses keep their lanes.
- Bicycles keep their lanes.
- Emergency services keep every lane.

| Year | City | Car trips | Change |
|------|------|-----------|--------|
| 2019 | Oslo | 100 | - |
| 2020 | Oslo | 91 | -9 |
| 2021 | Oslo | 88 | -3 |
| 2022 | Oslo | 85 | -3 |
| 2023 | Oslo | 84 | -1 |
| 2024 | Oslo | 84 | 0 |
| 2025 | Oslo | 83 | -1 |

| Option | Cost | Risk |
|---|---|---|
|   |   |   |
|   |   |   |
|   |   |   |
|   |   |   |
|   |   |   |
|   |   |   |
|   |   |   |

--------------------------------------------------------------------------------

On the other hand, critics say the poor pay the price. On the other hand, critics also say
that shops close. On the other hand, the evidence says otherwise: footfall rises, and the
poorest households are the least likely to own a car at all. The evidence says otherwise
about noise too, and the evidence says otherwise about property values.

In short: the street is the city's largest public space, and it should serve the public.
"""


def pieces(text: str) -> list[str]:
    """The text as a model streams it: a word (with its spaces) at a time."""
    return re.findall(r"\s*\S+\s*", text)


def watch(text: str) -> tuple[Runaway | None, int]:
    """What a watch fed ``text`` piece by piece reports, and how many characters it had
    been fed by then."""
    seen = RepetitionWatch()
    fed = 0
    for piece in pieces(text):
        fed += len(piece)
        if (found := seen.feed(piece)) is not None:
            return found, fed
    return None, fed


def test_a_real_smollm2_loop_is_caught_before_its_end_and_cut_after_two_repetitions() -> None:
    found, fed = watch(SMOLLM2_LOOP)

    assert found is not None
    assert fed < len(SMOLLM2_LOOP) - 200, "stopped while the loop was still going"
    kept = SMOLLM2_LOOP[: found.keep]
    assert kept.startswith("The debate rages on")
    assert kept.rstrip().endswith("taken seriously.")
    # The paragraph it loops on is kept twice, not six times.
    looped_paragraph = f"{LOOPED_SENTENCE} {LOOPED_SENTENCE}\n\n"
    assert kept.count(looped_paragraph) == 2
    assert LOOPED_SENTENCE in found.phrase


def test_a_markdown_answer_with_lists_tables_and_echoed_phrases_is_not_a_loop() -> None:
    assert watch(DEBATE_ANSWER) == (None, len(DEBATE_ANSWER))
    for end in range(len(DEBATE_ANSWER)):
        assert find_runaway(DEBATE_ANSWER[:end]) is None, DEBATE_ANSWER[:end][-80:]


def test_a_short_phrase_repeated_for_hundreds_of_characters_is_a_loop() -> None:
    text = "My answer: " + "the risk is real, " * 40
    found = find_phrase_loop(text)

    assert found is not None
    assert text[: found.keep].rstrip() == "My answer: the risk is real, the risk is real,"


def test_a_phrase_repeated_a_few_times_is_not_yet_a_loop() -> None:
    assert find_phrase_loop("Intro. " + "We must act now. " * 3) is None
    # Four times back to back, but a short phrase over too few characters.
    assert find_phrase_loop("Intro. " + "We must act now. " * 8) is None


def test_a_numbered_list_of_one_repeated_line_is_a_loop_kept_through_its_second_item() -> None:
    items = "".join(f"{n}. Cars make the air dirty for everyone.\n" for n in range(1, 9))
    text = "Reasons:\n\n" + items

    found = find_line_loop(text)

    assert found is not None
    assert found.phrase == "Cars make the air dirty for everyone."
    assert text[: found.keep] == (
        "Reasons:\n\n1. Cars make the air dirty for everyone.\n"
        "2. Cars make the air dirty for everyone."
    )


def test_repeated_lines_without_words_or_too_few_of_them_are_not_a_loop() -> None:
    assert find_line_loop("| --- | --- | --- |\n" * 10) is None
    assert find_line_loop("A long enough line of words.\n" * 5) is None
    # The repeated line is still being written: the last complete lines differ.
    assert find_line_loop("Different.\n" + "Same line of words.\n" * 5 + "Same line") is None


def test_a_paragraph_longer_than_any_phrase_repeated_as_lines_is_a_loop() -> None:
    paragraph = "Cities should act. " * 1 + "x" * 250
    text = (paragraph + "\n\n") * 7

    found = find_runaway(text)

    assert found is not None
    assert text[: found.keep] == paragraph + "\n\n" + paragraph


def test_keep_counts_from_the_start_of_a_long_reply_beyond_what_the_watch_holds() -> None:
    opening = DEBATE_ANSWER * 3  # longer than the tail a watch keeps
    found, _ = watch(opening + "We need clean streets now. " * 60)

    assert found is not None
    assert (opening + "We need clean streets now. " * 2).startswith(
        (opening + "We need clean streets now. " * 60)[: found.keep]
    )
    assert found.keep >= len(opening) + len("We need clean streets now. ")


def test_one_character_over_and_over_is_a_long_word_not_a_loop() -> None:
    assert find_runaway("Here is a long word: " + "y" * 3000) is None
    assert find_runaway("A rule line follows.\n" + "=" * 1000) is None


def reference_find_phrase_loop(text: str) -> Runaway | None:
    """``find_phrase_loop`` as it was first written: every period from the shortest up, one
    character compared before the whole span. Kept as the definition the fast search must
    match."""
    end = len(text)
    for period in range(MIN_PHRASE_CHARS, MAX_PHRASE_CHARS + 1):
        span = max(MIN_LOOP_CHARS, PHRASE_REPEATS * period)
        if span > end:
            return None
        if text[end - 1] != text[end - 1 - period]:
            continue
        if text[end - span + period :] == text[end - span : end - period]:
            if len(set(text[end - period : end])) < 2:
                return None
            start = end - span
            while start > 0 and text[start - 1] == text[start - 1 + period]:
                start -= 1
            return Runaway(phrase=text[start : start + period], keep=start + KEPT_REPEATS * period)
    return None


def random_text(rng: random.Random, alphabet: str, length: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(length))


def stamps(first: float, step: float, chars: int) -> str:
    """The last ``chars`` characters of a stream of equal-length time stamps."""
    parts: list[str] = []
    n = first
    while sum(map(len, parts)) < chars + 20:
        parts.append(f"t{n:.6f}s ")
        n += step
    return "".join(parts)[-chars:]


def generated_texts(rng: random.Random) -> Iterator[str]:
    """Texts with and without loops of every kind the search must get exactly right."""
    prose = (
        "Closing a city centre to cars is not a ban on movement; it is a choice about who "
        "the street is for. Shops on pedestrianised streets report more visits, not fewer. "
    )
    # Random texts from small alphabets, where short periods recur by chance.
    for _ in range(600):
        alphabet = rng.choice(["ab", "abc", "ab ", "abcd", "a b", string.ascii_lowercase[:6]])
        yield random_text(rng, alphabet, rng.randrange(300, 1400))
    # Real loops of every period, bare, after other text, and followed by noise or by a
    # phrase cut short; repeated around the number of times the loop needs to count.
    for period in range(MIN_PHRASE_CHARS, MAX_PHRASE_CHARS + 1):
        span = max(MIN_LOOP_CHARS, PHRASE_REPEATS * period)
        for _ in range(6):
            alphabet = rng.choice(["ab", "abc ", string.ascii_lowercase + " ", "xy.,"])
            phrase = random_text(rng, alphabet, period)
            looped = rng.choice([span - 1, span, span + 1, span + rng.randrange(0, 400)])
            body = (phrase * (looped // period + 2))[:looped]
            prefix = rng.choice(["", prose, random_text(rng, alphabet, rng.randrange(1, 300))])
            suffix = rng.choice(["", "", phrase[: rng.randrange(1, period)], "x", " tail"])
            yield prefix + body + suffix
    # Loops with a period too short or too long to be a phrase on its own.
    for period in [*range(1, MIN_PHRASE_CHARS), *range(MAX_PHRASE_CHARS + 1, 211)]:
        for _ in range(6):
            phrase = random_text(rng, "abc ", period)
            yield prose + phrase * (rng.randrange(MIN_LOOP_CHARS, 2000) // period)
    # Phrases that repeat themselves inside, so shorter periods nearly match.
    for _ in range(200):
        part = random_text(rng, "abc ", rng.randrange(MIN_PHRASE_CHARS, 40))
        phrase = part * rng.randrange(1, 5) + random_text(rng, "abc ", rng.randrange(0, 9))
        yield prose[: rng.randrange(0, len(prose))] + phrase * rng.randrange(2, 40)
    # Equal-length tokens, as a stream of time stamps writes them, and a stamp stuck.
    for _ in range(200):
        chars = rng.choice([rng.randrange(400, 900), rng.randrange(900, 4097)])
        step = rng.choice([0.02, 0.001, 1.0, 0.000001, 0.0])
        yield stamps(rng.uniform(0, 9999), step, chars)
    # One character over and over, alone or ending a phrase loop or prose.
    for _ in range(200):
        char = rng.choice("y= -.")
        run = char * rng.randrange(300, 1500)
        yield rng.choice(["", prose, "ab" * rng.randrange(1, 400)]) + run
    # Short texts and lengths either side of where a loop of a given period can first count.
    for length in range(MIN_LOOP_CHARS - 5, MIN_LOOP_CHARS + 5):
        yield "a" * length
        yield "ab" * length
        yield ("We must act now. " * 60)[:length]
    for period in range(MIN_LOOP_CHARS // PHRASE_REPEATS - 2, MAX_PHRASE_CHARS + 3):
        phrase = random_text(rng, "abc ", period)
        for length in range(PHRASE_REPEATS * period - 2, PHRASE_REPEATS * period + 3):
            yield (phrase * (PHRASE_REPEATS + 2))[-length:]
            yield random_text(rng, "ab", 5) + (phrase * (PHRASE_REPEATS + 2))[-length:]
    for _ in range(200):
        yield random_text(rng, "ab ", rng.randrange(0, MIN_LOOP_CHARS))


def test_phrase_loop_search_finds_exactly_what_the_period_scan_found() -> None:
    rng = random.Random(20261201)
    found = not_found = 0
    for text in generated_texts(rng):
        expected = reference_find_phrase_loop(text)
        assert find_phrase_loop(text) == expected, (len(text), text[-120:])
        if expected is None:
            not_found += 1
        else:
            found += 1
    # The cases hold plenty of both answers, so agreeing is not agreeing on nothing.
    assert found > 1000 and not_found > 1000, (found, not_found)


def test_phrase_loop_search_agrees_with_the_period_scan_on_every_prefix_of_a_stream() -> None:
    rng = random.Random(7)
    stream = (
        DEBATE_ANSWER[:300]
        + "the risk is real, " * 30
        + random_text(rng, "ab", 200)
        + "a" * 300
        + stamps(1234.5, 0.02, 900)
        + SMOLLM2_LOOP
    )
    for end in range(len(stream) + 1):
        text = stream[:end]
        assert find_phrase_loop(text) == reference_find_phrase_loop(text), end
