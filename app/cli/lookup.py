"""Finding the debate a command names: its whole id, or a unique prefix of it.

Ids are long enough that typing them whole is a chore, so ``argue show 0a1b`` works when one
debate's id starts that way. A prefix that fits several is refused with the ids it fits (a
few of them), and one shorter than ``MIN_PREFIX`` is refused outright: it would rarely be
unique, and a guess that happened to be would name a debate nobody meant.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlmodel import Session

    from app.models import Debate

MIN_PREFIX = 4
SHOWN_MATCHES = 5
ID_HELP = (
    f"the debate's id, or a unique prefix of it ({MIN_PREFIX} characters or more; see argue list)"
)


class UnknownDebate(Exception):
    """Why an id did not name one debate, in words, and the exit code it deserves: 1 when
    nothing matched, 2 when the id was too short or matched several."""

    def __init__(self, message: str, *, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code

    def report(self, command: str) -> int:
        """Say why on stderr, as ``command``; the exit code to return."""
        print(f"{command}: {self}", file=sys.stderr)
        return self.exit_code


def resolve_debate_id(session: Session, text: str) -> str:
    """The id of the one debate ``text`` names (its id or a unique prefix of it)."""
    from app import store

    if store.get_debate(session, debate_id=text) is not None:
        return text
    if len(text) < MIN_PREFIX:
        raise UnknownDebate(
            f"{text!r} is too short: give the debate's id or at least {MIN_PREFIX} "
            "characters of it (see argue list)",
            exit_code=2,
        )
    matches = store.debate_ids_starting_with(session, prefix=text, limit=SHOWN_MATCHES + 1)
    if not matches:
        raise UnknownDebate(f"no debate {text!r} (see argue list)", exit_code=1)
    if len(matches) > 1:
        shown = ", ".join(matches[:SHOWN_MATCHES])
        more = " and more" if len(matches) > SHOWN_MATCHES else ""
        raise UnknownDebate(
            f"{text!r} matches more than one debate ({shown}{more}); give more characters",
            exit_code=2,
        )
    return matches[0]


def debate_named(session: Session, text: str) -> Debate:
    """The one debate ``text`` names (its id or a unique prefix of it)."""
    from app import store

    debate = store.get_debate(session, debate_id=resolve_debate_id(session, text))
    assert debate is not None  # resolved within this session
    return debate
