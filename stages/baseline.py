"""Stage baseline: char n-gram TF-IDF + logistic regression, + a linear SVM, and NB-LR, on the raw splits.

Scores each on validation and test, whole and on the unseen part (texts not in train),
and on the short-review check (``params.short_reviews``), and keeps every baseline's
predictions for evaluate's paired comparison with the model.
"""

from __future__ import annotations

from pathlib import Path

from scratchformer.analysis.baseline import fit_and_predict_all, score_predictions, write_predictions
from scratchformer.analysis.scoring import scored
from scratchformer.config import Params
from scratchformer.data.ingest import read_split
from scratchformer.data.labels import Classes
from scratchformer.data.short_reviews import read_short_reviews
from scratchformer.data.splits import in_train
from scratchformer.files import write_json
from stages import stage

PARAMS = ("seed", "baseline", "short_reviews")


def run(params: Params, raw_dir: Path, metrics_path: Path, predictions_dir: Path) -> dict:
    """``metrics_path``: each baseline's scores; ``predictions_dir``/<split>.parquet: its predicted class ids."""
    others = {name: read_split(raw_dir, name) for name in ("validation", "test")}
    train = read_split(raw_dir, "train")
    classes = Classes.read(raw_dir / "classes.json")
    seen = {name: in_train(train["text"], frame["text"]) for name, frame in others.items()}
    reviews = None if params.short_reviews is None else read_short_reviews(params.short_reviews, classes.names)
    short = {} if reviews is None else {"short": reviews}
    predicted = fit_and_predict_all(params.baseline, params.seed, train, others | short)
    result = {name: score_predictions(p, others, seen, len(classes)) for name, p in predicted.items()}
    for name, frame in short.items():
        for baseline, p in predicted.items():
            result[baseline][name] = scored(p.pop(name), frame["label"].to_numpy(), len(classes))
    write_predictions(predictions_dir, predicted)
    write_json(metrics_path, result)
    return result


if __name__ == "__main__":
    stage(run)
