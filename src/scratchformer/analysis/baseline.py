"""The classical references every experiment is compared with, fit on the same train
split with scikit-learn: character n-gram TF-IDF features under a logistic regression
and a linear SVM, and NB-LR (Wang & Manning, 2012) — the presence of each n-gram scaled
by its Naive Bayes log-count ratio, under a logistic regression.

Chinese has no spaces, so characters and their short runs (1–3 grams) stand in for
words. A model written from scratch has to beat these to be worth its compute.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import scipy.sparse as sp
from joblib import Parallel, cpu_count, delayed
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.multiclass import OneVsRestClassifier
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.svm import LinearSVC

from scratchformer.analysis.scoring import split_scores
from scratchformer.config import BaselineConfig
from scratchformer.files import atomic_dir


class NBScaling(BaseEstimator, TransformerMixin):
    """Scale each binary feature by r = log((p / |p|) / (q / |q|)); p, q: 1 + its count in the positive, other texts."""

    def fit(self, X, y):
        positive = np.asarray(y) == 1
        p = 1 + np.asarray(X[positive].sum(axis=0)).ravel()
        q = 1 + np.asarray(X[~positive].sum(axis=0)).ravel()
        self.ratio_ = np.log((p / p.sum()) / (q / q.sum()))
        return self

    def transform(self, X):
        return X @ sp.diags(self.ratio_)


def make_baseline(config: BaselineConfig, seed: int, classifier: str = "logistic") -> Pipeline:
    """Character 1..ngram_max-grams, then ``logistic`` regression (C) or a linear ``svm`` (svm_c) on TF-IDF,
    or ``nblr``: logistic regression (nb_c) on NB-scaled presence, one class against the rest."""
    if classifier == "nblr":
        presence = CountVectorizer(
            analyzer="char", ngram_range=(1, config.ngram_max), binary=True, min_df=config.min_df
        )
        one_against_rest = make_pipeline(
            NBScaling(), LogisticRegression(C=config.nb_c, max_iter=2000, random_state=seed)
        )
        return make_pipeline(presence, OneVsRestClassifier(one_against_rest))
    features = TfidfVectorizer(
        analyzer="char", ngram_range=(1, config.ngram_max), sublinear_tf=True, min_df=config.min_df
    )
    if classifier == "svm":
        return make_pipeline(features, LinearSVC(C=config.svm_c, random_state=seed))
    return make_pipeline(features, LogisticRegression(C=config.C, max_iter=2000, random_state=seed))


BASELINES = {"baseline": "logistic", "svm": "svm", "nblr": "nblr"}  # metrics/baseline.json section -> classifier


def fit_and_predict(
    config: BaselineConfig,
    seed: int,
    train: pd.DataFrame,
    others: dict[str, pd.DataFrame],
    classifier: str = "logistic",
) -> dict[str, np.ndarray]:
    """Fit on ``train``; the predicted class id (int64) of every row of each frame of ``others``, in order."""
    model = make_baseline(config, seed, classifier).fit(train["text"], train["label"])
    return {name: np.asarray(model.predict(frame["text"]), dtype=np.int64) for name, frame in others.items()}


def fit_and_predict_all(
    config: BaselineConfig, seed: int, train: pd.DataFrame, others: dict[str, pd.DataFrame]
) -> dict[str, dict[str, np.ndarray]]:
    """:func:`fit_and_predict` for every baseline of :data:`BASELINES` (name -> frame -> class ids), fit side
    by side, one process a core (joblib): each fit is what it would be alone."""
    jobs = Parallel(n_jobs=min(len(BASELINES), cpu_count()))(
        delayed(fit_and_predict)(config, seed, train, others, classifier) for classifier in BASELINES.values()
    )
    return dict(zip(BASELINES, jobs, strict=True))


def score_predictions(
    predicted: dict[str, np.ndarray], others: dict[str, pd.DataFrame], seen: dict[str, np.ndarray], num_classes: int
) -> dict[str, dict]:
    """Accuracy, macro F1 and their intervals on each frame of ``others``, whole and unseen (``~seen``)."""
    return {
        name: split_scores(predicted[name], frame["label"].to_numpy(), seen[name], num_classes)
        for name, frame in others.items()
    }


def write_predictions(out_dir: str | Path, predicted: dict[str, dict[str, np.ndarray]]) -> None:
    """``out_dir``/<split>.parquet: one int64 column of predicted class ids per baseline, rows in the split's order.

    ``predicted``: baseline -> split -> ids. What evaluate compares the model with, review by review.
    """
    splits = next(iter(predicted.values())).keys()
    with atomic_dir(out_dir) as tmp:
        for split in splits:
            table = pa.table({name: pa.array(by_split[split], pa.int64()) for name, by_split in predicted.items()})
            pq.write_table(table, Path(tmp) / f"{split}.parquet")


def read_predictions(out_dir: str | Path, split: str, rows: int) -> dict[str, np.ndarray]:
    """The baselines' predicted class ids on ``split`` (baseline -> ids), checked to have ``rows`` rows."""
    path = Path(out_dir) / f"{split}.parquet"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no baseline predictions; run `dvc repro baseline`")
    table = pq.read_table(path)
    if table.num_rows != rows:
        raise ValueError(f"{path}: {table.num_rows} predictions for {rows} {split} rows; run `dvc repro baseline`")
    return {name: table[name].to_numpy() for name in table.column_names}
