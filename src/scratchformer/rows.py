"""Many texts through ``scratchformer predict``: texts in, one answer row per text out, written as they are done.

In: a text file or stdin, one text per line, or one column of a ``.csv``/``.tsv`` file, read
as ingest reads a corpus (:mod:`scratchformer.inputs`). Out: ``text`` (what a person reads),
``csv``, ``jsonl`` (one JSON object a line) or ``json`` (one array, written piece by piece).
A row that cannot be predicted does not stop the run: a blank text, a line not in the
encoding, a CSV line with the wrong number of fields each get a row saying ``row N: …`` in
an ``error`` field, with no prediction, and every other row is answered. Rows are numbered
from 1 in input order (a CSV's header is not a row). A CSV cell that a spreadsheet would run
as a formula is escaped; an output file appears only whole, moved into place at the end.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import itertools
import json
import sys
import textwrap
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TextIO

from tqdm import tqdm

from scratchformer.analysis.predict import Prediction, Predictor, clean
from scratchformer.files import atomic_path
from scratchformer.inputs import Text, check_encoding, count_rows, file_texts, line_texts, stream_lines

# A cell starting with one of these is a formula to a spreadsheet (OWASP's CSV injection list).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
SHOWN_ROWS = 10  # row numbers named per kind of error on stderr; the output file has them all


@dataclasses.dataclass(frozen=True)
class Row:
    number: int  # the text's place in the input, from 1
    text: str
    prediction: Prediction | None = None
    error: str | None = None  # why there is no prediction: "row N: <problem> (<detail>)"
    problem: str | None = None  # the kind of error, shared by every row it hits ("blank text")

    def as_dict(self) -> dict:
        answer = self.prediction.as_dict() if self.prediction else {"text": self.text}
        return {"row": self.number, **answer, "error": self.error}


def read_texts(
    source: str, column: str | None, delimiter: str | None, encoding: str, stdin: TextIO
) -> tuple[Iterator[Text], int | None]:
    """The rows of ``source`` (a path, or "-" for ``stdin``) and how many there are (None: stdin, not known).

    A file's rows are counted from its bytes, and it is read through once first with the
    reader predict uses: a missing column, an unknown delimiter, an unclosed CSV quote, or a
    reader that does not give one row per counted line refuses the file before any text is
    predicted.
    """
    check_encoding(encoding)
    if source == "-":
        if column is not None or delimiter is not None:
            raise ValueError("--column and --delimiter read a .csv or .tsv --input file; stdin is one text per line")
        return line_texts(stream_lines(stdin, encoding)), None
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file to read texts from")
    total, read = count_rows(path), sum(1 for _ in file_texts(path, column, delimiter, encoding))
    if read != total:
        raise ValueError(f"{path}: {total} rows in the file, {read} rows read; check its quotes and line ends")
    return file_texts(path, column, delimiter, encoding), total


def stdin_texts(stream: TextIO, encoding: str) -> Iterator[Text]:
    """The non-blank lines of ``stream``, read only as they are asked for (predict's stdin without --input)."""
    check_encoding(encoding)
    return line_texts(stream_lines(stream, encoding), skip_blank=True)


def error_row(number: int, text: Text) -> Row:
    """Row ``number`` without a prediction: its text's problem and where it is."""
    problem = text.problem or "blank text"
    where = f" ({text.detail})" if text.detail else ""
    return Row(number, text.text, error=f"row {number}: {problem}{where}", problem=problem)


def answer(
    predictor: Predictor, texts: Iterable[str | Text], top_k: int | None, batch_size: int
) -> Iterator[list[Row]]:
    """The rows of ``texts``, ``batch_size`` at a time: error rows for what cannot be predicted, the rest together."""
    numbered = ((n, t if isinstance(t, Text) else Text(t)) for n, t in enumerate(texts, 1))
    while batch := list(itertools.islice(numbered, batch_size)):
        ok = [t.problem is None and bool(clean(t.text)) for _, t in batch]
        given = [t.text for (_, t), good in zip(batch, ok, strict=True) if good]
        predictions = iter(predictor.predict(given, top_k) if given else [])
        yield [
            Row(n, t.text, next(predictions)) if good else error_row(n, t)
            for (n, t), good in zip(batch, ok, strict=True)
        ]


def driving_tokens(p: Prediction) -> str:
    """The top tokens in two groups by sign: ``toward positive: 净(+0.52) …   toward negative: 差(-0.31) …``.

    Relevance is toward the predicted label, so a negative one pushed away from it: with two
    classes that is toward the other, named; with more, the group is ``against <label>``.
    """
    others = [name for name in p.probabilities if name != p.label]
    away = f"toward {others[0]}" if len(others) == 1 else f"against {p.label}"
    groups = []
    for name, side in (
        (f"toward {p.label}", [t for t in p.top_tokens if t["relevance"] >= 0]),
        (away, [t for t in p.top_tokens if t["relevance"] < 0]),
    ):
        if side:
            groups.append(f"{name}: " + " ".join(f"{t['token']}({t['relevance']:+.2f})" for t in side))
    return "   ".join(groups) or f"toward {p.label}: no token to show"


def text_row(row: Row) -> str:
    """Label, probability and text on one line, then the driving tokens (and any caveat) indented below."""
    p = row.prediction
    if p is None:
        return f"error\t-\t{row.text}\n\t{row.error}"
    line = f"{p.label}\t{p.probability:.3f}\t{p.text}\n\t{driving_tokens(p)}"
    if p.truncated:
        line += f"\n\ttruncated: the model read the first {p.read_tokens} of {p.n_tokens} tokens"
    if p.warning:
        line += f"\n\twarning: {p.warning}"
    return line


def csv_header(class_names: list[str]) -> list[str]:
    probabilities = [f"p_{name}" for name in class_names]
    return ["row", "text", "label", "probability", *probabilities, "top_tokens", "truncated", "warning", "error"]


def escape_formula(cell: object) -> object:
    """``cell`` with a ``'`` in front when it is text a spreadsheet would run as a formula (OWASP's advice)."""
    return f"'{cell}" if isinstance(cell, str) and cell.startswith(FORMULA_STARTS) else cell


def csv_row(row: Row, class_names: list[str]) -> list:
    """The cells under :func:`csv_header`; the driving tokens as ``token:+relevance`` pairs, largest first."""
    p = row.prediction
    if p is None:
        cells = [row.number, row.text, "", "", *("" for _ in class_names), "", "", "", row.error]
    else:
        tokens = " ".join(f"{t['token']}:{t['relevance']:+.4f}" for t in p.top_tokens)
        probabilities = [p.probabilities[name] for name in class_names]
        cells = [row.number, p.text, p.label, p.probability, *probabilities, tokens, p.truncated, p.warning or "", ""]
    return [escape_formula(cell) for cell in cells]


@dataclasses.dataclass
class Tally:
    """What :func:`write_rows` wrote: how many rows, and which carry an error, by kind."""

    rows: int = 0
    errors: int = 0
    by_problem: dict[str, list[int]] = dataclasses.field(default_factory=dict)  # first SHOWN_ROWS of each kind
    counts: dict[str, int] = dataclasses.field(default_factory=dict)

    def add(self, row: Row) -> None:
        self.rows += 1
        if row.error is not None:
            kind = row.problem or "error"
            self.errors += 1
            self.counts[kind] = self.counts.get(kind, 0) + 1
            shown = self.by_problem.setdefault(kind, [])
            if len(shown) < SHOWN_ROWS:
                shown.append(row.number)

    def summary(self) -> str:
        """ "3 of 500 rows could not be answered: rows 4, 17 (blank text); row 230 (not utf-8 text)" """
        parts = []
        for kind, numbers in self.by_problem.items():
            more = self.counts[kind] - len(numbers)
            listed = ", ".join(map(str, numbers)) + (f" and {more} more" if more else "")
            parts.append(f"{'rows' if self.counts[kind] > 1 else 'row'} {listed} ({kind})")
        return f"{self.errors} of {self.rows} rows could not be answered: {'; '.join(parts)}"


def write_rows(batches: Iterable[list[Row]], fmt: str, out: TextIO, class_names: list[str]) -> Tally:
    """Write each batch of rows in format ``fmt``, flushed at once; return how many rows, and which had an error.

    A run stopped between batches leaves every finished row written. ``json`` writes one
    array piece by piece: the same bytes as ``json.dumps(rows, indent=2)``, without holding the rows.
    """
    writer = csv.writer(out, lineterminator="\n")
    if fmt == "csv":
        writer.writerow(csv_header(class_names))
    opened, tally = False, Tally()
    for batch in batches:
        for row in batch:
            tally.add(row)
            if fmt == "csv":
                writer.writerow(csv_row(row, class_names))
            elif fmt == "jsonl":
                out.write(json.dumps(row.as_dict(), ensure_ascii=False) + "\n")
            elif fmt == "json":  # a predicted row as it always was here: the prediction's fields alone
                item = row.prediction.as_dict() if row.prediction else row.as_dict()
                out.write(
                    ("[\n" if not opened else ",\n")
                    + textwrap.indent(json.dumps(item, ensure_ascii=False, indent=2), "  ")
                )
                opened = True
            else:
                out.write(text_row(row) + "\n")
        out.flush()
    if fmt == "json":
        out.write("\n]\n" if opened else "[]\n")
        out.flush()
    return tally


def progress(batches: Iterable[list[Row]], total: int | None) -> Iterator[list[Row]]:
    """``batches`` unchanged, counted on a progress bar on stderr (none when stderr is not a terminal)."""
    with tqdm(total=total, unit="text", desc="predict", file=sys.stderr, disable=None) as bar:
        for batch in batches:
            yield batch
            bar.update(len(batch))  # the writer asked for the next batch: this one is written


@contextlib.contextmanager
def open_output(path: Path) -> Iterator[TextIO]:
    """``path`` for writing answers, moved into place only when the block ends without an exception.

    The rows stream into a temporary file beside ``path``, so memory stays one batch's,
    and a run that stops midway (an error, Ctrl-C, a kill) leaves ``path`` as it was, never
    half written. A path that is not a regular file (``/dev/stdout``, a pipe) is written as it is.
    newline="": the csv module writes its own line ends.
    """
    if path.exists() and not path.is_file():
        with path.open("w", encoding="utf-8", newline="") as out:
            yield out
        return
    with atomic_path(path) as tmp, tmp.open("w", encoding="utf-8", newline="") as out:
        yield out


def shorten(row: Row, top: int) -> Row:
    """``row`` with its prediction's driving tokens cut to the ``top`` most relevant."""
    if row.prediction is None:
        return row
    return dataclasses.replace(
        row, prediction=dataclasses.replace(row.prediction, top_tokens=row.prediction.top_tokens[:top])
    )
