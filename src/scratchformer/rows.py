"""Many texts through ``scratchformer predict``: texts in, one answer row per text out, written as they are done.

In: a text file or stdin, one text per line, or one column of a ``.csv``/``.tsv`` file.
Out: ``text`` (what a person reads), ``csv``, ``jsonl`` (one JSON object a line) or ``json``
(one array, written piece by piece). A text that is blank does not stop the run: its row
says ``row N: blank text`` in an ``error`` field and carries no prediction, and every other
row is answered. Rows are numbered from 1 in input order (a CSV's header is not a row).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import functools
import itertools
import json
import sys
import textwrap
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TextIO

from tqdm import tqdm

from scratchformer.analysis.predict import Prediction, Predictor, clean

DELIMITERS = {".csv": ",", ".tsv": "\t"}


@dataclasses.dataclass(frozen=True)
class Row:
    number: int  # the text's place in the input, from 1
    text: str
    prediction: Prediction | None = None
    error: str | None = None  # why there is no prediction

    def as_dict(self) -> dict:
        answer = self.prediction.as_dict() if self.prediction else {"text": self.text}
        return {"row": self.number, **answer, "error": self.error}


def line_texts(stream: Iterable[str]) -> Iterator[str]:
    """Every line of ``stream``, blank ones included, without its line break."""
    return (line.removesuffix("\n").removesuffix("\r") for line in stream)


def column_texts(stream: TextIO, path: Path, column: str | None) -> Iterator[str]:
    """Column ``column`` of the CSV (``.csv``) or TSV (``.tsv``) file ``path`` open as ``stream``.

    The header is read at once, so a wrong or missing ``column`` is refused, naming the file's
    columns, before any text is predicted; the rows are read as they are asked for.
    """
    reader = csv.DictReader(stream, delimiter=DELIMITERS[path.suffix.lower()])
    columns = reader.fieldnames or []
    if column not in columns:
        asked = "give --column" if column is None else f"it has no column {column!r}"
        raise ValueError(f"{path}: {asked}; its columns are {', '.join(map(repr, columns)) or 'none (empty file)'}")
    return ((row[column] or "") for row in reader)


def stdin_texts(stream: Iterable[str]) -> Iterator[str]:
    """The non-blank lines of ``stream``, read only as they are asked for (predict's stdin without --input)."""
    for chunk in stream:
        yield from (line for line in chunk.splitlines() if clean(line))


@contextlib.contextmanager
def read_texts(source: str, column: str | None, stdin: TextIO) -> Iterator[tuple[Iterator[str], int | None]]:
    """The texts of ``source`` (a path, or "-" for ``stdin``) and how many there are (None: stdin, not known).

    A file is read through once first, to count its texts for the progress bar: a file that
    is not UTF-8 or not well-formed CSV is refused then, before any text is predicted.
    """
    if source == "-":
        if column is not None:
            raise ValueError("--column reads a .csv or .tsv --input file; stdin is read one text per line")
        yield line_texts(stdin), None
        return
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file to read texts from")
    read: Callable[[TextIO], Iterator[str]] = line_texts
    if path.suffix.lower() in DELIMITERS:
        read = functools.partial(column_texts, path=path, column=column)
    elif column is not None:
        raise ValueError(f"--column reads a .csv or .tsv file; {path} is read one text per line")
    # newline="": the csv module's own line handling; line_texts strips \n, \r\n and \r alike
    with path.open(encoding="utf-8-sig", newline="") as stream:
        try:
            total = sum(1 for _ in read(stream))
        except UnicodeDecodeError as err:
            raise ValueError(f"{path} is not UTF-8 text ({err})") from err
        except csv.Error as err:
            raise ValueError(f"{path}: not well-formed {path.suffix[1:].upper()} ({err})") from err
    with path.open(encoding="utf-8-sig", newline="") as stream:
        yield read(stream), total


def answer(predictor: Predictor, texts: Iterable[str], top_k: int | None, batch_size: int) -> Iterator[list[Row]]:
    """The rows of ``texts``, ``batch_size`` at a time: blank texts as error rows, the rest predicted together."""
    numbered = enumerate(texts, 1)
    while batch := list(itertools.islice(numbered, batch_size)):
        given = [text for _, text in batch if clean(text)]
        predictions = iter(predictor.predict(given, top_k) if given else [])
        yield [
            Row(n, text, next(predictions)) if clean(text) else Row(n, text, error=f"row {n}: blank text")
            for n, text in batch
        ]


def text_row(row: Row) -> str:
    """Label, probability and text on one line, then the driving tokens (and any caveat) indented below."""
    p = row.prediction
    if p is None:
        return f"error\t-\t{row.text}\n\t{row.error}"
    tokens = " ".join(f"{t['token']}({t['relevance']:.2f})" for t in p.top_tokens)
    line = f"{p.label}\t{p.probability:.3f}\t{p.text}\n\tdriven by: {tokens}"
    if p.truncated:
        line += f"\n\ttruncated: the model read the first {p.read_tokens} of {p.n_tokens} tokens"
    if p.warning:
        line += f"\n\twarning: {p.warning}"
    return line


def csv_header(class_names: list[str]) -> list[str]:
    probabilities = [f"p_{name}" for name in class_names]
    return ["row", "text", "label", "probability", *probabilities, "top_tokens", "truncated", "warning", "error"]


def csv_row(row: Row, class_names: list[str]) -> list:
    """The cells under :func:`csv_header`; the driving tokens as ``token:relevance`` pairs, most relevant first."""
    p = row.prediction
    if p is None:
        return [row.number, row.text, "", "", *("" for _ in class_names), "", "", "", row.error]
    tokens = " ".join(f"{t['token']}:{t['relevance']:.4f}" for t in p.top_tokens)
    probabilities = [p.probabilities[name] for name in class_names]
    return [row.number, p.text, p.label, p.probability, *probabilities, tokens, p.truncated, p.warning or "", ""]


def write_rows(batches: Iterable[list[Row]], fmt: str, out: TextIO, class_names: list[str]) -> int:
    """Write each batch of rows in format ``fmt``, flushed at once; return how many rows had an error.

    A run stopped between batches leaves every finished row written. ``json`` writes one
    array piece by piece: the same bytes as ``json.dumps(rows, indent=2)``, without holding the rows.
    """
    writer = csv.writer(out, lineterminator="\n")
    if fmt == "csv":
        writer.writerow(csv_header(class_names))
    opened, errors = False, 0
    for batch in batches:
        for row in batch:
            errors += row.error is not None
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
    return errors


def progress(batches: Iterable[list[Row]], total: int | None) -> Iterator[list[Row]]:
    """``batches`` unchanged, counted on a progress bar on stderr (none when stderr is not a terminal)."""
    with tqdm(total=total, unit="text", desc="predict", file=sys.stderr, disable=None) as bar:
        for batch in batches:
            yield batch
            bar.update(len(batch))  # the writer asked for the next batch: this one is written


def open_output(path: Path) -> TextIO:
    """``path`` for writing answers (newline="": the csv module writes its own line ends)."""
    return path.open("w", encoding="utf-8", newline="")


def shorten(row: Row, top: int) -> Row:
    """``row`` with its prediction's driving tokens cut to the ``top`` most relevant."""
    if row.prediction is None:
        return row
    return dataclasses.replace(
        row, prediction=dataclasses.replace(row.prediction, top_tokens=row.prediction.top_tokens[:top])
    )
