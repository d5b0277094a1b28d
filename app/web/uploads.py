"""Reading a posted form (``multipart/form-data`` or urlencoded) from the request stream,
within limits counted as the bytes arrive.

Nothing is written to disk: a file is kept in memory up to its limit, a text field up to a
bound (``KEPT_FIELD_CHARS``) while its length is still counted. Reading stops as soon as a
file or the whole body passes its limit (or before the first byte, when the declared
``Content-Length`` already does), so a refused upload of hundreds of megabytes costs its first
few. Too many files or fields are counted but not kept, so the message can say how many were
sent. Every refusal is a sentence keyed by the field it belongs to (``"form"`` for the form as
a whole); the caller shows it beside that field with what was kept.
"""

from __future__ import annotations

import codecs
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote_to_bytes

from python_multipart import MultipartParser, QuerystringParser
from python_multipart.exceptions import FormParserError
from python_multipart.multipart import parse_options_header
from starlette.datastructures import Headers
from starlette.requests import ClientDisconnect

from app.debates import MAX_CONTEXT_FILE_BYTES, MAX_CONTEXT_FILES, MAX_TOPIC_CHARS

# Room for every context file at its largest, plus as much again for the text fields: a
# topic pasted at several hundred times its limit is still read to its end and counted, so
# the fields after it are kept too.
MAX_FORM_BYTES = 2 * MAX_CONTEXT_FILES * MAX_CONTEXT_FILE_BYTES
# The form has about thirty fields (both formats' seats); a hundred leaves room for more.
MAX_FORM_FIELDS = 100
# What comes back of an over-long text field: enough to see and fix it, not a megabyte.
KEPT_FIELD_CHARS = 10 * MAX_TOPIC_CHARS
# Field names are short; a longer one is cut (it matches no field anyway).
KEPT_NAME_BYTES = 256

MULTIPART = b"multipart/form-data"
URLENCODED = b"application/x-www-form-urlencoded"
FILE_FIELD = "context"


@dataclass(frozen=True)
class TextValue:
    """A text field as sent: its text cut to ``KEPT_FIELD_CHARS``, how many characters it
    had (as far as it was read), and whether it was read to its end."""

    text: str
    chars: int
    whole: bool = True


@dataclass(frozen=True)
class UploadedFile:
    field: str
    filename: str
    data: bytes


@dataclass(frozen=True)
class ReadLimits:
    """The limits reading enforces (defaults: the app's)."""

    body_bytes: int = MAX_FORM_BYTES
    file_bytes: int = MAX_CONTEXT_FILE_BYTES
    files: int = MAX_CONTEXT_FILES
    fields: int = MAX_FORM_FIELDS
    kept_chars: int = KEPT_FIELD_CHARS


READ_LIMITS = ReadLimits()


@dataclass(frozen=True)
class ReadForm:
    """What was read of a form: the first value of each text field, the files kept, the
    refusals by field name, whether the body was too large (413) or not a well-formed form
    (400), and whether it was read to its end (if not, the connection is closed after the
    answer instead of the server draining the rest)."""

    fields: Mapping[str, TextValue] = field(default_factory=dict)
    files: tuple[UploadedFile, ...] = ()
    errors: Mapping[str, str] = field(default_factory=dict)
    too_large: bool = False
    malformed: bool = False
    complete: bool = True

    def text(self, name: str) -> str:
        value = self.fields.get(name)
        return value.text if value else ""

    def files_of(self, name: str) -> tuple[UploadedFile, ...]:
        return tuple(upload for upload in self.files if upload.field == name)


def megabytes(size: int) -> str:
    return f"{size / 1_000_000:,.0f} MB"


def form_size_message(size: int | None, limits: ReadLimits) -> str:
    """The refusal of a form over the size limit, by its declared size when it has one."""
    files = f"up to {limits.files} context files of {limits.file_bytes // 1000} kB each"
    most = megabytes(limits.body_bytes)
    if size is None:
        return f"This form is larger than the {most} a form may send ({files})."
    return f"This form is {megabytes(size)}; a form may send at most {most} ({files})."


class _LimitPassed(Exception):
    """Raised from a parser callback to stop reading at once."""


class _Text:
    """A text value arriving in pieces: decoded as it comes, counted in full, kept up to a
    bound. Undecodable bytes count as one replacement character each."""

    def __init__(self, keep: int) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._keep = keep
        self._parts: list[str] = []
        self._kept = 0
        self.chars = 0

    def add(self, data: bytes, *, final: bool = False) -> None:
        text = self._decoder.decode(data, final)
        self.chars += len(text)
        room = self._keep - self._kept
        if room > 0 and text:
            piece = text[:room]
            self._parts.append(piece)
            self._kept += len(piece)

    def value(self, *, whole: bool) -> TextValue:
        if whole:
            self.add(b"", final=True)
        return TextValue("".join(self._parts), self.chars, whole)


class _Unquoter:
    """Percent-decoding of an urlencoded value that arrives in pieces: an escape cut by a
    piece's end waits for the next piece."""

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, data: bytes) -> bytes:
        data = self._pending + data
        cut = data.find(b"%", max(0, len(data) - 2))
        cut = len(data) if cut == -1 else cut
        self._pending = data[cut:]
        return unquote_to_bytes(data[:cut].replace(b"+", b" "))

    def finish(self) -> bytes:
        rest, self._pending = self._pending, b""
        return unquote_to_bytes(rest.replace(b"+", b" "))


class _Collector:
    """What both encodings share: fields and files as they complete, the counts, and the
    refusals. The parsers' callbacks feed it; it raises ``_LimitPassed`` to stop reading."""

    def __init__(self, limits: ReadLimits) -> None:
        self.limits = limits
        self.fields: dict[str, TextValue] = {}
        self.files: list[UploadedFile] = []
        self.errors: dict[str, str] = {}
        self.too_large = False
        self.field_count = 0
        self.file_count = 0
        self._name = ""
        self._text: _Text | None = None
        self._file: bytearray | None = None
        self._filename = ""
        self._keep = False

    # -- text fields
    def start_field(self, name: str) -> None:
        self.field_count += 1
        self._name = name
        self._keep = self.field_count <= self.limits.fields and name not in self.fields
        self._text = _Text(self.limits.kept_chars)

    def field_data(self, data: bytes) -> None:
        if self._keep and self._text is not None:
            self._text.add(data)

    def end_field(self) -> None:
        if self._keep and self._text is not None:
            self.fields[self._name] = self._text.value(whole=True)
        self._text = None

    # -- files
    def start_file(self, name: str, filename: str) -> None:
        # A file input left empty still sends a part, with no file name and no data.
        self._filename = filename
        self._name = name
        if filename:
            self.file_count += 1
        self._keep = bool(filename) and self.file_count <= self.limits.files
        self._file = bytearray()

    def file_data(self, data: bytes) -> None:
        if self._file is None or not self._keep:
            return
        self._file += data
        if len(self._file) > self.limits.file_bytes:
            self._file = None
            limit = self.limits.file_bytes // 1000
            self.errors[self._name] = f"{self._filename} is larger than {limit} kB."
            raise _LimitPassed

    def end_file(self) -> None:
        if self._file is not None and self._keep:
            self.files.append(UploadedFile(self._name, self._filename, bytes(self._file)))
        self._file = None

    # -- the whole body
    def body_too_large(self, declared: int | None = None) -> None:
        self.too_large = True
        if self._text is not None:  # stopped inside a text field: keep what came of it
            if self._keep:
                self.fields[self._name] = self._text.value(whole=False)
            self.errors.setdefault("form", form_size_message(declared, self.limits))
        else:
            self.errors.setdefault(FILE_FIELD, form_size_message(declared, self.limits))

    def counted(self, *, complete: bool) -> None:
        """The refusals for counts: too many files (beside the file field), too many fields
        (for the form as a whole)."""
        more = "" if complete else " or more"
        if self.file_count > self.limits.files:
            self.errors[FILE_FIELD] = (
                f"At most {self.limits.files} files; {self.file_count}{more} were chosen."
            )
        if self.field_count > self.limits.fields:
            self.errors["form"] = (
                f"The form sent {self.field_count:,}{more} fields; "
                f"at most {self.limits.fields} are read."
            )


class _MultipartReader:
    """``multipart/form-data`` (what browsers send for this form) into a collector."""

    def __init__(self, boundary: bytes, collector: _Collector) -> None:
        self.collector = collector
        self._header_name = b""
        self._header_value = b""
        self._disposition = b""
        self._is_file = False
        self.parser = MultipartParser(
            boundary,
            {
                "on_part_begin": self._begin,
                "on_header_field": self._header_field,
                "on_header_value": self._header_value_data,
                "on_header_end": self._header_end,
                "on_headers_finished": self._headers_finished,
                "on_part_data": self._data,
                "on_part_end": self._end,
            },
        )

    def _begin(self) -> None:
        self._disposition = b""

    def _header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_name += data[start:end]

    def _header_value_data(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]

    def _header_end(self) -> None:
        if self._header_name.strip().lower() == b"content-disposition":
            self._disposition = self._header_value
        self._header_name = self._header_value = b""

    def _headers_finished(self) -> None:
        _, options = parse_options_header(self._disposition)
        if b"name" not in options:
            raise FormParserError('a part has no "name" in its Content-Disposition')
        name = _decode(options[b"name"][:KEPT_NAME_BYTES])
        self._is_file = b"filename" in options
        if self._is_file:
            self.collector.start_file(name, _decode(options[b"filename"]).strip())
        else:
            self.collector.start_field(name)

    def _data(self, data: bytes, start: int, end: int) -> None:
        if self._is_file:
            self.collector.file_data(data[start:end])
        else:
            self.collector.field_data(data[start:end])

    def _end(self) -> None:
        if self._is_file:
            self.collector.end_file()
        else:
            self.collector.end_field()


class _UrlencodedReader:
    """``application/x-www-form-urlencoded`` (scripts, curl) into a collector."""

    def __init__(self, collector: _Collector) -> None:
        self.collector = collector
        self._name = b""
        self._unquoter = _Unquoter()
        self._started = False
        self.parser = QuerystringParser(
            {
                "on_field_start": self._start,
                "on_field_name": self._name_data,
                "on_field_data": self._data,
                "on_field_end": self._end,
            }
        )

    def _start(self) -> None:
        self._name = b""
        self._started = False
        self._unquoter = _Unquoter()

    def _name_data(self, data: bytes, start: int, end: int) -> None:
        self._name = (self._name + data[start:end])[: 3 * KEPT_NAME_BYTES]

    def _begin_value(self) -> None:
        if not self._started:
            self._started = True
            name = unquote_to_bytes(self._name.replace(b"+", b" "))
            self.collector.start_field(_decode(name[:KEPT_NAME_BYTES]))

    def _data(self, data: bytes, start: int, end: int) -> None:
        self._begin_value()
        self.collector.field_data(self._unquoter.feed(data[start:end]))

    def _end(self) -> None:
        self._begin_value()
        self.collector.field_data(self._unquoter.finish())
        self.collector.end_field()


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def declared_length(headers: Headers) -> int | None:
    try:
        return int(headers.get("content-length", ""))
    except ValueError:
        return None


async def read_form(
    headers: Headers, body: AsyncIterator[bytes], limits: ReadLimits = READ_LIMITS
) -> ReadForm:
    """The form in ``body`` (the request stream), read no further than ``limits`` allow."""
    content_type, options = parse_options_header(headers.get("content-type"))
    if content_type not in (MULTIPART, URLENCODED):
        # Not a form: read nothing of it, and hang up after the answer.
        return ReadForm(complete=False)
    collector = _Collector(limits)
    declared = declared_length(headers)
    if declared is not None and declared > limits.body_bytes:
        collector.body_too_large(declared)
        return _result(collector, complete=False)
    try:
        reader: _MultipartReader | _UrlencodedReader
        if content_type == MULTIPART:
            boundary = options.get(b"boundary", b"")
            if not boundary:
                raise FormParserError("a multipart form with no boundary")
            reader = _MultipartReader(boundary, collector)
        else:
            reader = _UrlencodedReader(collector)
        complete = await _feed(reader.parser, body, collector, limits.body_bytes)
    except FormParserError:
        return _result(collector, complete=False, malformed=True)
    except ClientDisconnect:
        complete = False
    return _result(collector, complete=complete)


async def _feed(
    parser: MultipartParser | QuerystringParser,
    body: AsyncIterator[bytes],
    collector: _Collector,
    limit: int,
) -> bool:
    """Write ``body`` into ``parser`` until it ends (True) or a limit is passed (False)."""
    received = 0
    try:
        async for chunk in body:
            room = limit - received
            received += len(chunk)
            if received > limit:
                parser.write(chunk[:room])  # what fits is kept: the field it cuts, its start
                collector.body_too_large()
                return False
            parser.write(chunk)
        parser.finalize()
    except _LimitPassed:
        return False
    return True


def _result(collector: _Collector, *, complete: bool, malformed: bool = False) -> ReadForm:
    collector.counted(complete=complete)
    if malformed:
        collector.errors.setdefault("form", "The form could not be read: it is not well-formed.")
    return ReadForm(
        fields=dict(collector.fields),
        files=tuple(collector.files),
        errors=dict(collector.errors),
        too_large=collector.too_large,
        malformed=malformed,
        complete=complete,
    )
