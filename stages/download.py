"""Stage download: the corpus from the hub or a local folder into data/raw/."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

from scratchformer.config import Params
from scratchformer.data.fingerprints import resolved_revision
from scratchformer.data.ingest import load_corpus, write_corpus
from scratchformer.data.splits import check_splits
from scratchformer.files import write_json
from stages import stage

PARAMS = ("seed", "data")

log = logging.getLogger(__name__)


def run(params: Params, inputs_path: Path, raw_dir: Path, metrics_path: Path) -> dict:
    """Source (hub id or folder) -> raw_dir/{train,validation,test}.parquet, classes.json, ingest.json.

    The hub revision read is the one the inputs stage resolved, so the data and its
    recorded fingerprint agree. The ingest report (rows per split and class, blank
    rows dropped, texts shared between train and evaluation) is also the metrics file.
    A split that cannot measure a class stops the stage here, before anything trains
    (see :func:`scratchformer.data.splits.check_splits`); a class too thin in test is a
    warning, kept in the report under ``warnings``.
    """
    revision = resolved_revision(inputs_path) or params.data.revision
    corpus = load_corpus(params.data, params.seed, revision)
    warnings = check_splits(corpus.report["class_rows"], {s.name: s.origin for s in corpus.splits})
    for warning in warnings:
        log.warning("%s: %s", corpus.splits[2].origin, warning)
    if warnings:  # only then: an unchanged corpus keeps the very same report
        corpus = dataclasses.replace(corpus, report={**corpus.report, "warnings": warnings})
    write_corpus(corpus, raw_dir)
    write_json(metrics_path, {"data": corpus.report})
    return corpus.report


if __name__ == "__main__":
    stage(run)
