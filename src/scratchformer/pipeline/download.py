"""Stage download: the corpus from the hub or a local folder into data/raw/."""

from __future__ import annotations

from pathlib import Path

from scratchformer.config import Params
from scratchformer.data import load_splits, write_splits


def run(params: Params, raw_dir: Path) -> dict[str, int]:
    """Source (hub id or folder) -> raw_dir/{train,validation,test}.parquet; returns row counts."""
    splits = load_splits(params.data)
    write_splits(splits, raw_dir)
    return {s.name: len(s.frame) for s in splits}
