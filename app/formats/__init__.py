"""Debate formats: everything about a format behind one interface, and the one registry.

A format plans (a pure planner: it never calls a model, a database or the network), and says
how it is shown and handed over: the title and description the form and ``argue run --help``
give it, the page's groups of turns (their headings and order), its headings and notes, its
finals Markdown and any workspace or plan files, and its command-line hints. The web, CLI,
export and eval code ask the format; none of them branches on a format's name.

Each format module exposes ``FORMAT``, an instance of a ``Format`` subclass. ``REGISTERED``
below lists the modules: adding a format is its module, its prompts, its templates if it needs
new ones, and one line there. A format that leaves out a required part fails when its class
is defined or instantiated (``Format.__init_subclass__`` and the abstract methods), and the
registry refuses a module without a ``FORMAT`` (``tests/formats/test_format_interface.py``).

The registry loads its modules on first use, so a module anywhere may import the planners'
names without loading every format first.
"""

from __future__ import annotations

import importlib
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date as Date
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic_core import PydanticCustomError, core_schema

from app.spec import CompletedTurn, DebateSpec, Outcome, Seat, TurnPlan

if TYPE_CHECKING:
    from app.models import Debate, Turn

__all__ = [
    "REGISTERED",
    "Format",
    "FormatError",
    "FormatName",
    "Heading",
    "Judging",
    "Layout",
    "Phase",
    "Workspace",
    "default_rounds_text",
    "format_names",
    "formats",
    "get_format",
    "registered",
    "rounds_formats",
]

# The registered formats, in the order the form and ``--help`` offer them: one line each.
REGISTERED: list[str] = [
    "app.formats.duel",
    "app.formats.panel",
    "app.formats.society",
]


class FormatError(TypeError):
    """A format that leaves out a required part, or a registry entry that is no format."""


@dataclass(frozen=True)
class Phase:
    """One phase of a format as the page and the transcript show it.

    ``title`` heads its group of turns; ``message``: its turns are the transcript's messages
    (a private check or a synthesis already in the finals is not); ``round_heading``: its
    groups sit under a "Round N" heading; ``numbered``: its group titles name their round
    (a phase that repeats round after round); ``closing``: it closes the debate whatever
    round number it carries.
    """

    name: str
    title: str
    message: bool = False
    round_heading: bool = False
    numbered: bool = False
    closing: bool = False


@dataclass(frozen=True)
class Layout:
    """A format's page: its phases in reading order. A phase it does not list (a follow-up
    answer, or one it never plans) goes after them, titled by its name."""

    phases: tuple[Phase, ...]

    def phase(self, name: str) -> Phase | None:
        for phase in self.phases:
            if phase.name == name:
                return phase
        return None

    def rank(self, name: str) -> int:
        for index, phase in enumerate(self.phases):
            if phase.name == name:
                return index
        return len(self.phases)

    def group_title(self, round: int, name: str) -> str:
        phase = self.phase(name)
        if phase is None:
            return name.title()
        return f"Round {round} · {phase.title}" if phase.numbered else phase.title

    def shows_round_heading(self, round: int, name: str) -> bool:
        phase = self.phase(name)
        return phase is not None and phase.round_heading and round >= 1

    def closes(self, name: str) -> bool:
        phase = self.phase(name)
        return phase is not None and phase.closing

    @property
    def message_phases(self) -> tuple[str, ...]:
        return tuple(phase.name for phase in self.phases if phase.message)


@dataclass(frozen=True)
class Heading:
    """The heading over a finished debate's synthesis; ``settled``: the outcome is a result
    to show as such (a duel that did not converge is not)."""

    text: str
    settled: bool = True


@dataclass(frozen=True)
class Judging:
    """A seat that judges (``judge``), what it does (``part``), and the seats it judges: the
    debate warns when it shares a provider with one of them (``app.formats.judging``)."""

    judge: str
    part: str
    judged: tuple[str, ...]


WorkspaceFiles = Callable[["Debate", Sequence["Turn"], Date], Mapping[str, str]]


@dataclass(frozen=True)
class Workspace:
    """A folder of files a finished debate leaves (``workspaces/<name>/``, the workspace.zip
    download): its empty folders first, then ``files(debate, turns, date)``, relative path
    to content."""

    folders: tuple[str, ...]
    files: WorkspaceFiles


# The class attributes every format sets; ``Format.__init_subclass__`` checks each.
_REQUIRED_VALUES: dict[str, type | tuple[type, ...]] = {
    "name": str,
    "title": str,
    "description": str,
    "layout": Layout,
    "topic_prompt": str,
    "eval_summary": str,
    "workspace": (Workspace, type(None)),
    "rounds_meaning": (str, type(None)),
    "judging": tuple,
}


_NAME = re.compile(r"[a-z][a-z0-9_]{0,15}")
_NAME_RULE = "1-16 lower-case letters, digits and _, starting with a letter"


class Format(ABC):
    """One debate format: its planner, its page, its files and its command-line hints."""

    name: ClassVar[str]  # what requests, the database and URLs call it: "duel"
    title: ClassVar[str]  # what people read: "Duel"
    description: ClassVar[str]  # one line, for the form's choice and ``--help``
    layout: ClassVar[Layout]
    topic_prompt: ClassVar[str]  # ``argue run`` asks this when no topic was given
    eval_summary: ClassVar[str]  # the eval condition's line: how its answer is read
    workspace: ClassVar[Workspace | None]  # None: it leaves no workspace
    # What the request's ``rounds`` counts for it, for the form's label: "" plain rounds,
    # None: it takes no rounds.
    rounds_meaning: ClassVar[str | None]
    # The rounds a request that names none gets.
    default_rounds: ClassVar[int] = 4
    # Who judges whom; () when nobody judges anybody.
    judging: ClassVar[tuple[Judging, ...]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        missing = [name for name in _REQUIRED_VALUES if not hasattr(cls, name)]
        if missing:
            raise FormatError(f"format {cls.__name__} does not provide {', '.join(missing)}")
        for name, kind in _REQUIRED_VALUES.items():
            if not isinstance(getattr(cls, name), kind):
                raise FormatError(f"format {cls.__name__}: {name} is not a {kind}")
        if not _NAME.fullmatch(cls.name):
            # Saved in a 16-character column, and written unquoted in URLs and CSS.
            raise FormatError(f"format {cls.__name__}: its name {cls.name!r} is not {_NAME_RULE}")
        if not cls.title or not cls.description:
            raise FormatError(f"format {cls.__name__} needs a title and a description")

    # -- planning ------------------------------------------------------------------------

    @abstractmethod
    def default_seats(self) -> tuple[Seat, ...]:
        """Every role of the format with its default provider (model None = default)."""

    @abstractmethod
    def plan(self, spec: DebateSpec, done: tuple[CompletedTurn, ...]) -> list[TurnPlan]:
        """The next turns to run together; [] when the debate is over. Once the debate
        itself is done, the answers to its follow-up questions (``spec.followups``,
        planned with ``app.formats.followups``)."""

    @abstractmethod
    def verdict(self, plan: TurnPlan, text: str) -> dict[str, Any] | None:
        """The structured reading of a finished turn's text, for phases that have one."""

    @abstractmethod
    def outcome(self, spec: DebateSpec, done: tuple[CompletedTurn, ...]) -> Outcome:
        """Rounds run, convergence and the synthesis text of a finished debate."""

    # -- the page and the lists ----------------------------------------------------------

    @abstractmethod
    def round_limit(self, rounds: int) -> int | None:
        """The most rounds a debate asked for ``rounds`` runs, when readers are told it
        ("up to 4 rounds", "3 / 4"); None when the format shows no limit."""

    @abstractmethod
    def notes(self, spec: DebateSpec) -> tuple[str, ...]:
        """Short notes on the options this debate runs with, for the page's header line."""

    @abstractmethod
    def outcome_heading(self, *, converged: bool | None, rounds_run: int) -> Heading:
        """The debate page's heading over a completed debate's synthesis."""

    @abstractmethod
    def report_heading(self, *, completed: bool, converged: bool | None, rounds_run: int) -> str:
        """The HTML report's heading over the synthesis."""

    @abstractmethod
    def convergence_note(self, converged: bool | None) -> str | None:
        """What the report says of a completed debate's convergence; None: nothing."""

    @abstractmethod
    def cli_rounds(self, rounds_run: int | None, rounds: int) -> str:
        """The rounds column of ``argue list``."""

    # -- files and downloads -------------------------------------------------------------

    @abstractmethod
    def finals_markdown(self, debate: Debate, turns: Sequence[Turn], *, date: Date) -> str:
        """The finals file (``finals/<slug>.md``, the finals download), before the
        follow-up questions ``app.export`` adds."""

    @abstractmethod
    def hands_over_plan(self, topic_type: str) -> bool:
        """Whether a finished debate's synthesis is a plan, written to ``plans/<name>.md``
        and offered as the plan download."""


# -- the registry ------------------------------------------------------------------------

_loaded: dict[str, Format] | None = None


def _load(module_name: str) -> Format:
    module = importlib.import_module(module_name)
    fmt = getattr(module, "FORMAT", None)
    if not isinstance(fmt, Format):
        raise FormatError(f"{module_name} registers no format: it has no FORMAT (a Format)")
    return fmt


def formats() -> tuple[Format, ...]:
    """Every registered format, in registration order."""
    global _loaded
    if _loaded is None:
        loaded: dict[str, Format] = {}
        for module_name in REGISTERED:
            fmt = _load(module_name)
            if fmt.name in loaded:
                raise FormatError(f"two formats are named {fmt.name!r}")
            loaded[fmt.name] = fmt
        _loaded = loaded
    return tuple(_loaded.values())


def format_names() -> tuple[str, ...]:
    return tuple(fmt.name for fmt in formats())


def rounds_formats() -> tuple[Format, ...]:
    """The registered formats that take rounds (``rounds_meaning`` is not None)."""
    return tuple(fmt for fmt in formats() if fmt.rounds_meaning is not None)


def default_rounds_text(separator: str) -> str:
    """What a request naming no rounds gets, per format that takes them: "duel 4, society 2"."""
    return separator.join(f"{fmt.name} {fmt.default_rounds}" for fmt in rounds_formats())


def get_format(name: str) -> Format:
    for fmt in formats():
        if fmt.name == name:
            return fmt
    raise KeyError(f"unknown format {name!r}")


@contextmanager
def registered(module_name: str) -> Iterator[Format]:
    """``module_name`` registered for the duration (tests: a format built in the test)."""
    global _loaded
    REGISTERED.append(module_name)
    _loaded = None
    try:
        yield get_format(_load(module_name).name)
    finally:
        REGISTERED.remove(module_name)
        _loaded = None


# -- a format name in a request ----------------------------------------------------------


def _registered_name(value: str) -> str:
    # Refused as a choice of fixed words refuses it (pydantic's own errors for a Literal).
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise PydanticCustomError(
                "string_unicode",
                "Input should be a valid string, unable to parse raw data as a unicode string",
            ) from None
    names = format_names()
    if value not in names:
        quoted = [f"'{name}'" for name in names]
        expected = ", ".join(quoted[:-1]) + f" or {quoted[-1]}" if len(quoted) > 1 else quoted[0]
        raise PydanticCustomError(
            "literal_error", "Input should be {expected}", {"expected": expected}
        )
    return value


class _Registered:
    """Validation and JSON schema of a format name: one of the formats registered when it is
    read (the schema lists them when it is made)."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(_registered_name, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, Any]:
        json_schema = handler(schema)
        json_schema["enum"] = list(format_names())
        return json_schema


FormatName = Annotated[str, _Registered()]
