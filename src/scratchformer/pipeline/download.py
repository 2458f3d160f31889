"""Stage download: the corpus from the hub or a local folder into data/raw/."""

from __future__ import annotations

from pathlib import Path

from scratchformer.config import Params
from scratchformer.data import load_corpus, write_corpus
from scratchformer.files import write_json
from scratchformer.inputs import resolved_revision


def run(params: Params, inputs_path: Path, raw_dir: Path, metrics_path: Path) -> dict:
    """Source (hub id or folder) -> raw_dir/{train,validation,test}.parquet, classes.json, ingest.json.

    The hub revision read is the one the inputs stage resolved, so the data and its
    recorded fingerprint agree. The ingest report (rows per split and class, blank
    rows dropped, texts shared between train and evaluation) is also the metrics file.
    """
    revision = resolved_revision(inputs_path) or params.data.revision
    corpus = load_corpus(params.data, params.seed, revision)
    write_corpus(corpus, raw_dir)
    write_json(metrics_path, {"data": corpus.report})
    return corpus.report
