"""Stage download: the corpus from the hub or a local folder into data/raw/, and the labels that look wrong."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pandas as pd

from scratchformer.analysis.duplicates import contradictions
from scratchformer.analysis.label_issues import listed, most_suspect, rank_splits
from scratchformer.config import Params
from scratchformer.data.fingerprints import resolved_revision
from scratchformer.data.ingest import drop_train_rows, load_corpus, write_corpus
from scratchformer.data.splits import check_splits
from scratchformer.files import write_atomic, write_json
from stages import stage

PARAMS = ("seed", "data", "baseline.ngram_max", "baseline.min_df", "baseline.nb_c")

log = logging.getLogger(__name__)


def run(params: Params, inputs_path: Path, raw_dir: Path, metrics_path: Path, label_issues_dir: Path) -> dict:
    """Source (hub id or folder) -> raw_dir/{train,validation,test}.parquet, classes.json, ingest.json.

    The hub revision read is the one the inputs stage resolved, so the data and its
    recorded fingerprint agree. The ingest report (rows per split and class, blank
    rows dropped, texts shared between train and evaluation) is also the metrics file.
    A split that cannot measure a class stops the stage here, before anything trains
    (see :func:`scratchformer.data.splits.check_splits`); a class too thin in test is a
    warning, kept in the report under ``warnings``.

    Every label is scored too (:mod:`scratchformer.analysis.label_issues`, NB-LR with the
    ``baseline`` n-gram settings) and the contradicting copies are found
    (:mod:`scratchformer.analysis.duplicates`): ``label_issues_dir``/<split>.csv and
    contradictions.csv, counts in the metrics under ``label_issues`` and ``contradictions``, with
    ``contradictions.copies``: how often two copies of one text disagree, and the flip rate it implies.
    It takes seconds, and ``data.label_issues: drop`` needs it here, before train is written.
    """
    revision = resolved_revision(inputs_path) or params.data.revision
    corpus = load_corpus(params.data, params.seed, revision)
    origins = {s.name: s.origin for s in corpus.splits}
    check_splits(corpus.report["class_rows"], origins)  # a split that cannot measure a class stops here
    frames = {s.name: s.frame for s in corpus.splits}
    names = corpus.classes.names
    rankings = rank_splits(frames, names, params.baseline, params.seed)
    counts, torn = contradictions(frames, names, params.seed)
    n = params.data.label_issues_n
    dropped = 0
    if params.data.label_issues == "drop":
        rows = most_suspect(rankings["train"], n)
        corpus = drop_train_rows(corpus, rows, f"data.label_issues: drop, data.label_issues_n={n}")
        dropped = len(rows)
    warnings = check_splits(corpus.report["class_rows"], origins)  # again: drop may thin a class
    for warning in warnings:
        log.warning("%s: %s", corpus.splits[2].origin, warning)
    if warnings:  # only then: an unchanged corpus keeps the very same report
        corpus = dataclasses.replace(corpus, report={**corpus.report, "warnings": warnings})
    write_corpus(corpus, raw_dir)
    for split, ranking in rankings.items():  # train: at least the rows that drop removes (or would)
        _write_csv(label_issues_dir / f"{split}.csv", listed(ranking, n if split == "train" else 0))
    _write_csv(label_issues_dir / "contradictions.csv", torn)
    issues = {split: r.issues for split, r in rankings.items()} | {"dropped_from_train": dropped}
    write_json(metrics_path, {"data": corpus.report, "label_issues": issues, "contradictions": counts})
    return {**corpus.report, "label_issues": issues, "contradictions": counts}


def _write_csv(path: Path, frame: pd.DataFrame) -> None:
    write_atomic(path, lambda tmp: frame.to_csv(tmp, index=False, lineterminator="\n"))


if __name__ == "__main__":
    stage(run)
