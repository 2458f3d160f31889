"""Stage baseline: char n-gram TF-IDF + logistic regression, + a linear SVM, and NB-LR, on the raw splits."""

from __future__ import annotations

from pathlib import Path

from scratchformer.analysis.baseline import fit_and_score
from scratchformer.config import Params
from scratchformer.data.ingest import read_split
from scratchformer.files import write_json
from stages import stage

PARAMS = ("seed", "baseline")


def run(params: Params, raw_dir: Path, metrics_path: Path) -> dict:
    others = {name: read_split(raw_dir, name) for name in ("validation", "test")}
    train = read_split(raw_dir, "train")
    result = {
        "baseline": fit_and_score(params.baseline, params.seed, train, others),  # logistic regression
        "svm": fit_and_score(params.baseline, params.seed, train, others, classifier="svm"),
        "nblr": fit_and_score(params.baseline, params.seed, train, others, classifier="nblr"),
    }
    write_json(metrics_path, result)
    return result


if __name__ == "__main__":
    stage(run)
