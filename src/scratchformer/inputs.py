"""predict's input rows: a text file, one column of a ``.csv``/``.tsv`` file, or stdin, read as ingest reads a corpus.

The rules are the pipeline's (:data:`scratchformer.data.sources.READERS`; a test reads the
same files both ways): a TSV is split at its tabs with quoting off, so a review that begins
with ``"`` is one row, not the start of a quoted field that swallows the rows after it; a CSV
is read with quoting on. Every record is one line, and lines end only at ``\\n`` (a
``\\r\\n`` end loses its ``\\r``): a lone ``\\r``, ``\\x0b`` or ``\\u2028`` stays inside its text,
where ``str.splitlines`` or universal newlines would cut the row in two and shift every row
number after it. A CSV quote that its line does not close is refused, as ingest refuses it.

Each line is decoded on its own, so a line that is not in ``--encoding`` becomes an error
row naming its line and the lines around it are still answered. Nothing is dropped: every
line of a text file is a row (a blank one gets an error row), every non-blank line of a
CSV/TSV after its header is a row, and :func:`count_rows` counts them from the bytes alone
so that predict can check that every row in came out.
"""

from __future__ import annotations

import codecs
import csv
import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

TABLES = {".csv": ",", ".tsv": "\t"}  # suffix -> its delimiter, unless --delimiter says otherwise
DETECTED = ",;\t|"  # the delimiters a .csv header is looked at for
QUOTED = {".csv": True, ".tsv": False}  # as data.sources.READERS: quoting off for TSV
# Bytes of a line that ingest skips as blank: whitespace, but not a TSV's tab (a tab makes a row).
BLANK = {".tsv": b" \r\n\f\v", ".csv": b" \t\r\n\f\v"}
SNIFFED_LINES = 20  # lines csv.Sniffer looks at when a header holds more than one candidate delimiter
PLACEHOLDERS = "\ufdd0\ufdd1\ufdd2"  # noncharacters that stand in for a lone \r while the csv module parses


@dataclass(frozen=True)
class Text:
    """One input row: its text, and why it cannot be predicted (None: it can, unless it is blank)."""

    text: str
    problem: str | None = None  # a short kind, the same for every row it hits ("not utf-8 text")
    detail: str | None = None  # where and how, for this row alone ("line 7: byte 0xff at position 3")


class Line(NamedTuple):
    number: int  # from 1
    text: str  # without its line end
    problem: Text | None  # set when the line does not decode


def check_encoding(encoding: str) -> str:
    """``encoding`` if lines can be split in it at the byte ``\\n`` (UTF-16 and UTF-32 cannot); else ValueError."""
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise ValueError(f"--encoding {encoding!r}: no such encoding (e.g. utf-8, gb18030, big5)") from None
    if "\n".encode(encoding) != b"\n":
        raise ValueError(f"--encoding {encoding}: predict reads line by line at the byte \\n; save the file as UTF-8")
    return encoding


def lines(stream: Iterable[bytes] | Iterable[str], encoding: str) -> Iterator[Line]:
    """Every line of ``stream`` (bytes, split at ``\\n`` alone; or text), decoded on its own, without its line end."""
    utf8 = codecs.lookup(encoding).name == "utf-8"
    for number, raw in enumerate(stream, start=1):
        if isinstance(raw, bytes):
            raw = raw[:-2] if raw.endswith(b"\r\n") else raw.removesuffix(b"\n")
            try:
                text, problem = raw.decode(encoding), None
            except UnicodeDecodeError as err:
                text = raw.decode(encoding, errors="replace")
                where = f"line {number}: byte 0x{raw[err.start]:02x} at position {err.start + 1}"
                problem = Text(text, f"not {encoding} text", f"{where}; give --encoding if the file is in another")
        else:  # a text stream already decoded: undecodable bytes arrive as lone surrogates
            text = raw[:-2] if raw.endswith("\r\n") else raw.removesuffix("\n")
            try:
                text.encode("utf-8")
                problem = None
            except UnicodeEncodeError as err:
                shown = text.encode("utf-8", errors="replace").decode("utf-8")
                problem = Text(shown, "undecodable bytes", f"line {number}: at position {err.start + 1}")
        if number == 1 and utf8:
            text = text.removeprefix("\ufeff")  # a byte order mark, as the utf-8-sig codec drops it
        yield Line(number, text, problem)


def stream_lines(stream: object, encoding: str) -> Iterator[Line]:
    """The lines of stdin: its bytes where it has them (``\\n`` alone ends a line there), else its text."""
    buffer = getattr(stream, "buffer", None)
    return lines(buffer if buffer is not None else stream, encoding)  # type: ignore[arg-type]


def line_texts(numbered: Iterable[Line], skip_blank: bool = False) -> Iterator[Text]:
    """A row per line (with ``skip_blank``, per non-blank line: stdin without --input)."""
    from scratchformer.analysis.predict import clean

    for line in numbered:
        if line.problem is not None:
            yield line.problem
        elif not skip_blank or clean(line.text):
            yield Text(line.text)


def split_fields(text: str, delimiter: str, quoted: bool) -> list[str]:
    """The fields of one line: split at ``delimiter`` (quoting off), or read by the csv module (quoting on).

    The csv module ends a record at a lone ``\\r`` or refuses it; a noncharacter stands in
    for it while the line is parsed, so it stays inside its field.
    """
    if not quoted:
        return text.split(delimiter)
    stand_in = next((c for c in PLACEHOLDERS if c not in text), None)
    if "\r" in text and stand_in is None:
        raise ValueError("a carriage return in a line that holds every placeholder character")
    line = text.replace("\r", stand_in) if "\r" in text else text
    fields = next(csv.reader([line + "\n"], delimiter=delimiter), [])
    return [f.replace(stand_in, "\r") for f in fields] if "\r" in text else fields


def detect_delimiter(header: str, more: list[str]) -> str:
    """A ``.csv`` file's delimiter: the one candidate its header holds, else csv.Sniffer's pick from its first lines."""
    found = [d for d in DETECTED if d in header]
    if len(found) <= 1:
        return found[0] if found else ","  # no candidate: a one-column file
    try:
        return csv.Sniffer().sniff("\n".join([header, *more]), delimiters="".join(found)).delimiter
    except csv.Error:
        shown = " ".join(repr(d) for d in found)
        raise ValueError(f"its header holds {shown}: give --delimiter to say which separates the columns") from None


def table_texts(
    numbered: Iterator[Line], path: Path, column: str | None, delimiter: str | None, encoding: str
) -> Iterator[Text]:
    """Column ``column`` of the CSV/TSV ``path``, a row per non-blank line after the header.

    The header is read at once, so a wrong or missing ``column`` is refused, naming the file's
    columns, before any text is predicted. A line with more or fewer fields than the header is
    an error row (an unquoted comma inside a text would otherwise cut it short); a CSV quote
    that its line does not close refuses the file, as ingest does.
    """
    suffix = path.suffix.lower()
    blank = BLANK[suffix].decode()
    numbered = (line for line in numbered if line.text.strip(blank) or line.problem is not None)
    header = next(numbered, None)
    if header is None:
        raise ValueError(f"{path}: empty file, no header and no rows")
    if header.problem is not None:
        raise ValueError(f"{path}: its header (line {header.number}) is not {encoding} text; give --encoding")
    if delimiter is None and suffix == ".csv":
        ahead = list(itertools.islice(numbered, SNIFFED_LINES))
        try:
            delimiter = detect_delimiter(header.text, [line.text for line in ahead if line.problem is None])
        except ValueError as err:
            raise ValueError(f"{path}: {err}") from None
        numbered = itertools.chain(ahead, numbered)
    delimiter = delimiter or TABLES[suffix]
    quoted = QUOTED[suffix]
    columns = split_fields(header.text, delimiter, quoted)
    if column not in columns:
        asked = "give --column" if column is None else f"it has no column {column!r}"
        raise ValueError(f"{path}: {asked}; its columns are {', '.join(map(repr, columns))}")
    index = columns.index(column)
    for row, line in enumerate(numbered, start=1):
        if line.problem is not None:
            yield line.problem
            continue
        fields = split_fields(line.text, delimiter, quoted)
        if any("\n" in f for f in fields):
            raise ValueError(
                f'{path}: row {row} (line {line.number}) opens a quote (") that the line does not close, and would '
                "swallow the lines after it; quote the whole text and double each quote inside it "
                '("他说""很差"""), or save the file as TSV'
            )
        if len(fields) != len(columns):
            detail = f"line {line.number} has {len(fields)}, the header has {len(columns)}"
            if len(fields) > len(columns):
                detail += f"; quote a text that holds {delimiter!r}"
            yield Text(line.text, "wrong number of fields", detail)
        else:
            yield Text(fields[index])


def count_rows(path: Path) -> int:
    """How many rows ``path`` holds, from its bytes alone: lines, or a CSV/TSV's non-blank lines after its header."""
    suffix = path.suffix.lower()
    with path.open("rb") as f:
        if suffix not in TABLES:
            return sum(1 for _ in f)
        return max(0, sum(1 for line in f if line.strip(BLANK[suffix])) - 1)


def file_texts(path: Path, column: str | None, delimiter: str | None, encoding: str) -> Iterator[Text]:
    """The rows of the file ``path``: its lines, or with ``column`` that column of a ``.csv``/``.tsv`` file."""
    is_table = path.suffix.lower() in TABLES
    if column is not None and not is_table:
        raise ValueError(f"--column reads a .csv or .tsv file; {path} is read one text per line")
    if delimiter is not None and not is_table:
        raise ValueError(f"--delimiter reads a .csv or .tsv file; {path} is read one text per line")
    with path.open("rb") as stream:
        numbered = lines(stream, encoding)
        yield from table_texts(numbered, path, column, delimiter, encoding) if is_table else line_texts(numbered)
