"""Where a corpus comes from: a hub dataset or a local folder, with its own splits or one file.

🤗 datasets reads both. A folder holds train / validation (or dev, valid) / test files
in tsv, csv, parquet or jsonl, or a single such file (two files for one split, such as
``train.tsv`` beside ``train.csv`` or ``dev.tsv`` beside ``validation.tsv``, are refused,
naming both: reading one and ignoring the other is a guess); a hub dataset has those splits
or just one. Either way the result maps ``train``/``validation``/``test`` (or ``all``
for a one-file corpus) to a Dataset and the file or hub split it came from.

A text file (tsv, csv, jsonl) holds one record per line, and every one must come
back as one row: before 🤗 datasets reads a file, its lines are decoded with
``data.encoding`` and counted; afterwards the rows read must match. A stray
carriage return (which the reader takes for a line end) or an unclosed quote (which
makes the reader swallow the lines up to the next quote) would otherwise split or
merge reviews without a word.
"""

from __future__ import annotations

import codecs
import logging
from dataclasses import dataclass
from pathlib import Path

import datasets
import pyarrow as pa
import pyarrow.compute as pc

from scratchformer.data.hub import check_hub_reachable, is_local
from scratchformer.data.labels import DataError

log = logging.getLogger(__name__)

SPLITS = ("train", "validation", "test")
SPLIT_ALIASES = {"train": ("train",), "validation": ("validation", "dev", "valid"), "test": ("test",)}
# How 🤗 datasets reads each file type. TSV quoting is off: reviews begin with or
# contain '"', and a quote-aware reader silently merges such rows. NA detection is
# off: a review reading "NA" or "null" is text, not a missing value.
READERS = {
    ".tsv": ("csv", {"delimiter": "\t", "quoting": 3, "na_filter": False}),
    ".csv": ("csv", {"na_filter": False}),
    ".parquet": ("parquet", {}),
    ".jsonl": ("json", {}),
}
HEADER = {".tsv": True, ".csv": True, ".jsonl": False}  # the text formats: counted line by line
# Tried in turn on a file that is not in data.encoding, to name the one to set. GB18030
# decodes GBK and GB2312 too (it extends them), the usual encodings of Chinese corpora.
GUESSES = ("utf-8", "gb18030", "big5")


def read_source(
    source: str, revision: str | None = None, encoding: str = "utf-8"
) -> dict[str, tuple[datasets.Dataset, str]]:
    """The splits of ``source`` (a folder, or a hub id at ``revision``), each with its origin."""
    if is_local(source):
        if revision:
            log.warning("data.revision=%s is ignored: %s is a local folder", revision, source)
        return _read_local(Path(source).expanduser(), encoding)
    return _read_hub(source, revision)


def _read_hub(repo_id: str, revision: str | None) -> dict[str, tuple[datasets.Dataset, str]]:
    check_hub_reachable(repo_id, "data.source")
    loaded = datasets.load_dataset(repo_id, revision=revision)
    found = {}
    for split in SPLITS:
        name = next((a for a in SPLIT_ALIASES[split] if a in loaded), None)
        if name is None:
            break
        found[split] = (loaded[name], f"{repo_id}[{name}]")
    else:
        return found
    if len(loaded) == 1:
        (name,) = loaded
        return {"all": (loaded[name], f"{repo_id}[{name}]")}
    raise DataError(f"{repo_id}: no {split} split (has {', '.join(loaded)})")


def _read_local(folder: Path, encoding: str) -> dict[str, tuple[datasets.Dataset, str]]:
    files = sorted(p for p in folder.iterdir() if p.suffix in READERS and p.is_file() and not p.name.startswith("."))
    found = {}
    for split in SPLITS:
        candidates = [folder / f"{a}{ext}" for a in SPLIT_ALIASES[split] for ext in READERS]
        present = [p for p in candidates if p.is_file()]
        if len(present) > 1:
            named = ", ".join(map(str, present[:-1])) + f" and {present[-1]}"
            raise DataError(
                f"{folder}: {'two' if len(present) == 2 else len(present)} files for the {split} split: {named}; "
                "keep one of them (move the others out of the folder)"
            )
        path = present[0] if present else None
        if path is None:
            if len(files) == 1:  # a one-file corpus, divided by data.split
                return {"all": (_read_file(files[0], encoding), str(files[0]))}
            wanted = ", ".join(f"{a}.{{tsv,csv,parquet,jsonl}}" for a in SPLIT_ALIASES[split])
            raise DataError(f"{folder}: no {split} split (looked for {wanted}), and not a one-file corpus")
        found[split] = (_read_file(path, encoding), str(path))
    return found


def _read_file(path: Path, encoding: str) -> datasets.Dataset:
    builder, options = READERS[path.suffix]
    lines = None
    if path.suffix in HEADER:
        lines = _scan(path, encoding)
        options = {**options, "encoding": encoding}
    try:
        ds = datasets.load_dataset(builder, data_files=str(path), split="train", **options)
    except datasets.exceptions.DatasetGenerationError as err:
        cause = err.__cause__ or err
        raise DataError(f"{path}: cannot be read ({type(cause).__name__}: {_first_line(cause)})") from err
    if not len(ds):
        raise DataError(f"{path}: no rows; a split needs labelled rows")
    if lines is not None and len(ds) != lines.records:
        raise DataError(_where_rows_part(path, ds, lines))
    return ds


@dataclass(frozen=True)
class _Lines:
    """A text file's records, one per line (split at "\\n" alone, as the reader does not)."""

    records: int  # non-blank lines, the header not counted
    stray_cr: tuple[int, int] | None  # (line, row) of the first carriage return inside a line


def _scan(path: Path, encoding: str) -> _Lines:
    """Decode and count the lines of ``path``; stop at an undecodable line or a file without rows."""
    header, blank = HEADER[path.suffix], _blank(path)
    records, stray_cr, heading, number = 0, None, header, 0
    with path.open("rb") as f:
        for number, line in enumerate(f, start=1):
            try:
                line.decode(encoding)
            except UnicodeDecodeError as err:
                raise DataError(_not_encoded(path, number, line, err, encoding)) from None
            if not line.strip(blank):
                continue
            if heading:
                heading = False
                continue
            records += 1
            if stray_cr is None and b"\r" in line.removesuffix(b"\n").removesuffix(b"\r"):
                stray_cr = (number, records)
    if heading or (not header and not records):
        raise DataError(f"{path}: empty file; put its rows in it, or remove it")
    if not records:
        raise DataError(f"{path}: a header line and no rows; a split needs labelled rows")
    return _Lines(records, stray_cr)


def _not_encoded(path: Path, number: int, line: bytes, err: UnicodeDecodeError, encoding: str) -> str:
    """Line ``number`` does not decode: say so, and which encoding reads the whole file."""
    where = f"{path}: line {number} is not {encoding} (byte 0x{line[err.start]:02x} at position {err.start + 1})"
    data = path.read_bytes()
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return f"{where}; the file is UTF-16: save it as UTF-8"
    for guess in GUESSES:
        if codecs.lookup(guess).name == codecs.lookup(encoding).name:
            continue
        try:
            data.decode(guess)
        except UnicodeDecodeError:
            continue
        return f"{where}; it reads as {guess}: set data.encoding: {guess}"
    return f"{where}; set data.encoding to the encoding it was saved in, or save it as UTF-8"


def _where_rows_part(path: Path, ds: datasets.Dataset, lines: _Lines) -> str:
    """The first row where what was read and what the file holds part, its cause and its fix."""
    counts = f"{lines.records} lines of rows, {len(ds)} rows read"
    merged = _first_row_with_line_break(ds.data.table)
    if lines.stray_cr is not None and (merged is None or lines.stray_cr[1] <= merged):
        line, row = lines.stray_cr
        return (
            f"{path}: row {row} (line {line}) holds a carriage return (\\r) inside the line, which the reader "
            f"takes for a line end and splits the row in two ({counts}); remove it or replace it with a space"
        )
    if merged is not None:
        breaks = max(v.count("\n") for v in ds[merged - 1].values() if isinstance(v, str))
        line = _line_of_row(path, merged)
        return (
            f'{path}: row {merged} (line {line}) runs on over the next {breaks} lines: a quote (") in it opens a '
            f"quoted field that only the quote on line {line + breaks} closes ({counts}); check the quotes there: "
            'quote the whole text and double each quote inside it ("他说""很差"""), or save the file as TSV'
        )
    return f"{path}: {counts}; check its quotes and line ends"


def _first_row_with_line_break(table: pa.Table) -> int | None:
    """The first row (from 1) with a line break inside a value: there the reader merged lines."""
    first = None
    for column in table.columns:
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            i = pc.index(pc.fill_null(pc.match_substring_regex(column, "[\r\n]"), False), True).as_py()
            if i >= 0 and (first is None or i < first):
                first = i
    return None if first is None else first + 1


def _line_of_row(path: Path, row: int) -> int:
    """The line number of data row ``row`` (from 1), blank lines and the header skipped."""
    seen, blank = -1 if HEADER[path.suffix] else 0, _blank(path)
    with path.open("rb") as f:
        for number, line in enumerate(f, start=1):
            if line.strip(blank):
                seen += 1
                if seen == row:
                    return number
    return 0


def _blank(path: Path) -> bytes:
    """The bytes of a line the reader skips as blank: whitespace, but not its delimiter (a TSV's tab makes a row)."""
    return b" \t\r\n\f\v".replace(b"\t", b"") if path.suffix == ".tsv" else b" \t\r\n\f\v"


def _first_line(err: BaseException) -> str:
    return (str(err).strip().splitlines() or [""])[0]
