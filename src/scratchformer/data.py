"""Ingest: bring a labelled corpus from the hub or a local folder into one shape.

Whatever the source, the result is three pandas frames (train, validation, test)
with columns ``text`` (str) and ``label`` (int 0/1). 🤗 datasets reads both
kinds of source. Nothing is dropped silently: any row that cannot be used stops
the stage with a message naming the file and the row.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import datasets
import pandas as pd

from scratchformer.config import DataConfig
from scratchformer.files import write_atomic
from scratchformer.hub import check_hub_reachable, is_local

log = logging.getLogger(__name__)

SPLITS = ("train", "validation", "test")
SPLIT_ALIASES = {"train": ("train",), "validation": ("validation", "dev", "valid"), "test": ("test",)}
TEXT_COLUMNS = ("text", "text_a", "review", "sentence")
# How 🤗 datasets reads each file type. TSV quoting is off: reviews begin with or
# contain '"', and a quote-aware reader silently merges such rows. NA detection is
# off: a review reading "NA" or "null" is text, not a missing value.
READERS = {
    ".tsv": ("csv", {"delimiter": "\t", "quoting": 3, "na_filter": False}),
    ".csv": ("csv", {"na_filter": False}),
    ".parquet": ("parquet", {}),
    ".jsonl": ("json", {}),
}


class DataError(ValueError):
    """The corpus cannot be used as it is; the message says where and why."""


@dataclass(frozen=True)
class Split:
    name: str
    frame: pd.DataFrame  # columns text (str), label (int)
    origin: str  # the file (or hub split) it came from, for messages


def load_splits(config: DataConfig) -> list[Split]:
    """Read train/validation/test from ``config.source`` and validate every row."""
    if is_local(config.source):
        raw = _read_local(Path(config.source).expanduser())
    else:
        raw = _read_hub(config.source)
    return [_normalise(name, ds, origin, config) for name, (ds, origin) in raw.items()]


def write_splits(splits: list[Split], out_dir: str | Path) -> None:
    for split in splits:
        path = Path(out_dir) / f"{split.name}.parquet"
        write_atomic(path, lambda tmp, s=split: s.frame.to_parquet(tmp, index=False))
        log.info("%s: %d rows -> %s", split.origin, len(split.frame), path)


def read_split(raw_dir: str | Path, name: str) -> pd.DataFrame:
    return pd.read_parquet(Path(raw_dir) / f"{name}.parquet")


def _read_hub(repo_id: str) -> dict[str, tuple[datasets.Dataset, str]]:
    check_hub_reachable(repo_id, "data.source")
    loaded = datasets.load_dataset(repo_id)
    found = {}
    for split in SPLITS:
        name = next((a for a in SPLIT_ALIASES[split] if a in loaded), None)
        if name is None:
            raise DataError(f"{repo_id}: no {split} split (has {', '.join(loaded)})")
        found[split] = (loaded[name], f"{repo_id}[{name}]")
    return found


def _read_local(folder: Path) -> dict[str, tuple[datasets.Dataset, str]]:
    found = {}
    for split in SPLITS:
        candidates = [folder / f"{a}{ext}" for a in SPLIT_ALIASES[split] for ext in READERS]
        path = next((p for p in candidates if p.is_file()), None)
        if path is None:
            wanted = ", ".join(f"{a}.{{tsv,csv,parquet,jsonl}}" for a in SPLIT_ALIASES[split])
            raise DataError(f"{folder}: no {split} split (looked for {wanted})")
        builder, options = READERS[path.suffix]
        ds = datasets.load_dataset(builder, data_files=str(path), split="train", **options)
        if path.suffix == ".tsv":
            _check_line_count(path, len(ds))
        found[split] = (ds, str(path))
    return found


def _check_line_count(path: Path, rows: int) -> None:
    """A TSV has one record per line: any other count means rows were merged or lost."""
    with path.open(encoding="utf-8") as f:
        lines = sum(1 for line in f if line.strip()) - 1  # minus the header
    if rows != lines:
        raise DataError(f"{path}: read {rows} rows but the file has {lines} data lines")


def _normalise(name: str, ds: datasets.Dataset, origin: str, config: DataConfig) -> Split:
    columns = ds.column_names
    text_col = config.text_column or next((c for c in TEXT_COLUMNS if c in columns), None)
    if text_col is None or text_col not in columns:
        wanted = config.text_column or " or ".join(TEXT_COLUMNS)
        raise DataError(f"{origin}: no text column {wanted} (columns: {', '.join(columns)}); set data.text_column")
    if config.label_column not in columns:
        raise DataError(
            f"{origin}: no label column {config.label_column!r} (columns: {', '.join(columns)}); set data.label_column"
        )
    frame = ds.select_columns([text_col, config.label_column]).to_pandas()
    frame.columns = ["text", "label"]
    # Row numbers in messages count data rows from 1, as a spreadsheet would.
    for i, (text, label) in enumerate(zip(frame["text"], frame["label"], strict=True), start=1):
        if not isinstance(text, str) or not text.strip():
            raise DataError(f"{origin}: row {i} has an empty text")
        if str(label).strip() not in ("0", "1"):
            raise DataError(f"{origin}: row {i} has label {label!r}; expected 0 or 1")
    frame["text"] = frame["text"].str.strip()
    frame["label"] = frame["label"].map(lambda v: int(str(v).strip())).astype("int64")
    counts = frame["label"].value_counts().to_dict()
    log.info("%s: %s rows, label 0: %d, label 1: %d", origin, len(frame), counts.get(0, 0), counts.get(1, 0))
    return Split(name, frame.reset_index(drop=True), origin)
