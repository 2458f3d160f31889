"""Where a corpus comes from: a hub dataset or a local folder, with its own splits or one file.

🤗 datasets reads both. A folder holds train / validation (or dev, valid) / test files
in tsv, csv, parquet or jsonl, or a single such file; a hub dataset has those splits
or just one. Either way the result maps ``train``/``validation``/``test`` (or ``all``
for a one-file corpus) to a Dataset and the file or hub split it came from.
"""

from __future__ import annotations

import logging
from pathlib import Path

import datasets

from scratchformer.hub import check_hub_reachable, is_local
from scratchformer.labels import DataError

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


def read_source(source: str, revision: str | None = None) -> dict[str, tuple[datasets.Dataset, str]]:
    """The splits of ``source`` (a folder, or a hub id at ``revision``), each with its origin."""
    if is_local(source):
        if revision:
            log.warning("data.revision=%s is ignored: %s is a local folder", revision, source)
        return _read_local(Path(source).expanduser())
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


def _read_local(folder: Path) -> dict[str, tuple[datasets.Dataset, str]]:
    files = sorted(p for p in folder.iterdir() if p.suffix in READERS and p.is_file() and not p.name.startswith("."))
    found = {}
    for split in SPLITS:
        candidates = [folder / f"{a}{ext}" for a in SPLIT_ALIASES[split] for ext in READERS]
        path = next((p for p in candidates if p.is_file()), None)
        if path is None:
            if len(files) == 1:  # a one-file corpus, divided by data.split
                return {"all": (_read_file(files[0]), str(files[0]))}
            wanted = ", ".join(f"{a}.{{tsv,csv,parquet,jsonl}}" for a in SPLIT_ALIASES[split])
            raise DataError(f"{folder}: no {split} split (looked for {wanted}), and not a one-file corpus")
        found[split] = (_read_file(path), str(path))
    return found


def _read_file(path: Path) -> datasets.Dataset:
    builder, options = READERS[path.suffix]
    ds = datasets.load_dataset(builder, data_files=str(path), split="train", **options)
    if path.suffix == ".tsv":
        _check_line_count(path, len(ds))
    return ds


def _check_line_count(path: Path, rows: int) -> None:
    """A TSV has one record per line: any other count means rows were merged or lost."""
    with path.open(encoding="utf-8") as f:
        lines = sum(1 for line in f if line.strip()) - 1  # minus the header
    if rows != lines:
        raise DataError(f"{path}: read {rows} rows but the file has {lines} data lines")
