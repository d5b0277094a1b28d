"""The runaway-repetition detector: a real SmolLM2 loop is caught early and cut after its
second repetition; prose, lists and tables that merely look alike are left alone."""

from __future__ import annotations

import re

from app.repetition import (
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
