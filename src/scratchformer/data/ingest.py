"""Ingest: bring a labelled corpus from the hub or a local folder into one shape.

Whatever the source, the result is three tables (train, validation, test) with
columns ``text`` (str) and ``label`` (int class id), and the class names those ids
stand for. 🤗 datasets reads both kinds of source; the checks run on its Arrow
columns, so a million reviews never become a million Python objects. Nothing is
dropped silently: a row that cannot be used stops the stage with a message naming
the file and the row, unless a param says to drop it, and then it is counted.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import datasets
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from scratchformer.config import DataConfig
from scratchformer.data.labels import Classes, DataError, label_keys
from scratchformer.data.sources import SPLITS, read_source
from scratchformer.data.splits import leakage, stratified_share, stratified_split, strip_edges
from scratchformer.files import write_atomic, write_json

log = logging.getLogger(__name__)

TEXT_COLUMNS = ("text", "text_a", "review", "sentence")


@dataclass(frozen=True)
class Split:
    name: str
    table: pa.Table  # columns text (string), label (int64 class id)
    origin: str  # the file (or hub split) it came from, for messages

    @property
    def frame(self) -> pd.DataFrame:
        return self.table.to_pandas()


@dataclass(frozen=True)
class Corpus:
    """The three splits, their classes, and what ingest did on the way (for the record)."""

    splits: list[Split]
    classes: Classes
    report: dict = field(default_factory=dict)


@dataclass(frozen=True)
class _Part:
    """One file (or hub split) after its columns and rows were checked."""

    table: pa.Table  # text (string, stripped), key (the label, as int64 or string)
    origin: str
    dropped_empty: int


def load_corpus(config: DataConfig, seed: int = 0, revision: str | None = None) -> Corpus:
    """Read ``config.source``, check every row, find the classes, split if asked, keep ``data.train_share`` of
    train, count leakage (in the train kept)."""
    raw = read_source(config.source, revision, config.encoding)
    parts = {name: _check_rows(ds, origin, config) for name, (ds, origin) in raw.items()}
    classes = Classes.from_keys({p.origin: p.table["key"] for p in parts.values()}, config.label_names)
    tables, origins = _divide(parts, classes, config, seed)
    tables["train"], not_kept = _keep_share(tables["train"], config.train_share, seed)
    found = leakage(tables["train"]["text"], [tables["validation"]["text"], tables["test"]["text"]])
    shared = found.pop("train_mask")
    found["removed_from_train"] = 0
    if config.dedupe:
        found["removed_from_train"] = pc.sum(shared).as_py() or 0
        tables["train"] = tables["train"].filter(pc.invert(shared))
        log.info(
            "data.dedupe: %d train rows whose text is also in validation or test removed", found["removed_from_train"]
        )

    splits = [Split(name, tables[name], origins[name]) for name in SPLITS]
    for s in splits:
        if not len(s.table):
            why = f"too few rows for data.split={list(config.split)}" if config.split else "every row was removed"
            raise DataError(f"{s.origin}: no rows in {s.name} ({why})")
    report = {
        "rows": {s.name: len(s.table) for s in splits},
        "classes": classes.names,
        "class_rows": {s.name: classes.counts(s.table["label"].to_numpy()) for s in splits},
        "dropped_empty": {_relative(p.origin, config.source): p.dropped_empty for p in parts.values()},
        "split": list(config.split) if config.split is not None else None,
        "leakage": found,
    }
    if config.train_share < 1:  # only then: the whole corpus keeps the very same report
        report["train_share"] = {"share": config.train_share, "removed": not_kept}
    for s in splits:
        log.info("%s -> %s: %d rows %s", s.origin, s.name, len(s.table), report["class_rows"][s.name])
    if any(found[k] for k in ("validation_in_train", "test_in_train")):
        log.warning("texts shared between train and validation/test: %s", found)
    return Corpus(splits, classes, report)


def drop_train_rows(corpus: Corpus, rows: np.ndarray, why: str) -> Corpus:
    """``corpus`` without the train rows at positions ``rows``; its report's row and class counts follow."""
    train = corpus.splits[0]
    if len(rows) >= len(train.table):
        raise DataError(f"{train.origin}: {why} would remove all {len(train.table)} train rows")
    keep = np.ones(len(train.table), dtype=bool)
    keep[rows] = False
    splits = [Split(train.name, train.table.filter(pa.array(keep)), train.origin), *corpus.splits[1:]]
    report = {
        **corpus.report,
        "rows": {s.name: len(s.table) for s in splits},
        "class_rows": {s.name: corpus.classes.counts(s.table["label"].to_numpy()) for s in splits},
    }
    log.info("%s: %d train rows removed (%s)", train.origin, len(rows), why)
    return Corpus(splits, corpus.classes, report)


def load_splits(config: DataConfig, seed: int = 0) -> list[Split]:
    return load_corpus(config, seed).splits


def write_corpus(corpus: Corpus, out_dir: str | Path) -> None:
    """``out_dir``/{train,validation,test}.parquet, ``classes.json`` and ``ingest.json``."""
    write_splits(corpus.splits, out_dir)
    corpus.classes.write(Path(out_dir) / "classes.json")
    write_json(Path(out_dir) / "ingest.json", corpus.report)


def write_splits(splits: list[Split], out_dir: str | Path) -> None:
    for split in splits:
        path = Path(out_dir) / f"{split.name}.parquet"
        write_atomic(path, lambda tmp, s=split: pq.write_table(s.table, tmp))
        log.info("%s: %d rows -> %s", split.origin, len(split.table), path)


def read_split(raw_dir: str | Path, name: str) -> pd.DataFrame:
    return pd.read_parquet(Path(raw_dir) / f"{name}.parquet")


def read_column(raw_dir: str | Path, name: str, column: str) -> pa.ChunkedArray:
    """One column (``text`` or ``label``) of a written split, as Arrow: no Python object per row."""
    return pq.read_table(Path(raw_dir) / f"{name}.parquet", columns=[column])[column]


def text_column(columns: list[str], origin: str, wanted: str | None = None, hint: str = "set data.text_column") -> str:
    """The column of ``origin`` that holds the texts: ``wanted``, or else the first of :data:`TEXT_COLUMNS` present.

    Raises :class:`DataError` naming ``origin``, its columns and ``hint`` when there is none.
    """
    column = wanted or next((c for c in TEXT_COLUMNS if c in columns), None)
    if column is None or column not in columns:
        named = wanted or " or ".join(TEXT_COLUMNS)
        raise DataError(f"{origin}: no text column {named} (columns: {', '.join(columns)}); {hint}")
    return column


def _check_rows(ds: datasets.Dataset, origin: str, config: DataConfig) -> _Part:
    """Pick the text and label columns; stop at (or, with data.drop_empty, drop) blank texts."""
    columns = ds.column_names
    text_col = text_column(columns, origin, config.text_column)
    if config.label_column not in columns:
        raise DataError(
            f"{origin}: no label column {config.label_column!r} (columns: {', '.join(columns)}); set data.label_column"
        )
    table = ds.data.table.select([text_col, config.label_column])  # Arrow, memory-mapped by 🤗 datasets
    text = table.column(0)
    if not pa.types.is_string(text.type) and not pa.types.is_large_string(text.type):
        raise DataError(f"{origin}: text column {text_col!r} holds {text.type}, not text")
    text = strip_edges(text)  # the normalisation leakage and the unseen scores compare texts under
    # Row numbers in messages count data rows from 1, as a spreadsheet would.
    empty = pc.fill_null(pc.equal(pc.utf8_length(text), 0), True)
    n_empty = pc.sum(empty).as_py() or 0
    if n_empty and not config.drop_empty:
        row = pc.index(empty, True).as_py() + 1
        raise DataError(
            f"{origin}: row {row} has an empty text ({n_empty} such rows; data.drop_empty: true drops them)"
        )
    labels = table.column(1)
    rows = None
    if n_empty:
        keep = pc.invert(empty)
        rows = np.flatnonzero(keep.to_numpy()) + 1
        text, labels = text.filter(keep), labels.filter(keep)
        log.warning("%s: %d rows with an empty text dropped (data.drop_empty)", origin, n_empty)
    part = pa.table({"text": text, "key": label_keys(labels, origin, rows, config.label_names)})
    return _Part(part, origin, n_empty)


def _divide(
    parts: dict[str, _Part], classes: Classes, config: DataConfig, seed: int
) -> tuple[dict[str, pa.Table], dict[str, str]]:
    """The train/validation/test tables (text, class id) and where each came from.

    A corpus with its own splits keeps them; a one-file corpus (or, with
    ``data.resplit``, the pooled splits) is divided by ``data.split``, stratified.
    """
    tables = {name: _with_ids(p, classes) for name, p in parts.items()}
    single = list(parts) == ["all"]
    if single and config.split is None:
        raise DataError(
            f"{parts['all'].origin}: one file, no train/validation/test; set data.split, e.g. [0.8, 0.1, 0.1]"
        )
    if not single and config.split is not None and not config.resplit:
        raise DataError(
            f"{config.source} has its own train/validation/test splits and data.split={list(config.split)} is set; "
            "remove data.split, or set data.resplit: true to pool and divide them again"
        )
    if config.split is None:
        return tables, {name: parts[name].origin for name in SPLITS}
    pooled = pa.concat_tables(tables.values())
    origin = parts["all"].origin if single else f"{config.source} (pooled)"
    chosen = stratified_split(pooled["label"].to_numpy(), config.split, seed)
    # A mask per split, not ``take``: filtering goes chunk by chunk and copies each text once.
    masks = {name: np.zeros(len(pooled), dtype=bool) for name in SPLITS}
    for name in SPLITS:
        masks[name][chosen[name]] = True
    return {name: pooled.filter(pa.array(masks[name])) for name in SPLITS}, {n: f"{origin}[{n}]" for n in SPLITS}


def _keep_share(train: pa.Table, share: float, seed: int) -> tuple[pa.Table, int]:
    """``train`` reduced to ``share`` of its rows, each class alike (``data.train_share``), and how many went."""
    if share >= 1:
        return train, 0
    keep = np.zeros(len(train), dtype=bool)
    keep[stratified_share(train["label"].to_numpy(), share, seed)] = True
    log.info("data.train_share=%s: %d of %d train rows kept", share, keep.sum(), len(train))
    return train.filter(pa.array(keep)), len(train) - int(keep.sum())


def _relative(origin: str, source: str) -> str:
    """A file's name inside the corpus folder: no machine's absolute path goes into a tracked output."""
    return origin[len(source) :].lstrip("/") if origin.startswith(source) else origin


def _with_ids(part: _Part, classes: Classes) -> pa.Table:
    return pa.table({"text": part.table["text"], "label": classes.ids(part.table["key"])})
