"""The classical references every experiment is compared with, fit on the same train
split with scikit-learn: character n-gram TF-IDF features under a logistic regression
and a linear SVM, and NB-LR (Wang & Manning, 2012) — the presence of each n-gram scaled
by its Naive Bayes log-count ratio, under a logistic regression.

Chinese has no spaces, so characters and their short runs (1–3 grams) stand in for
words. A model written from scratch has to beat these to be worth its compute.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, f1_score
from sklearn.multiclass import OneVsRestClassifier
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.svm import LinearSVC

from scratchformer.config import BaselineConfig


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


def fit_and_score(
    config: BaselineConfig,
    seed: int,
    train: pd.DataFrame,
    others: dict[str, pd.DataFrame],
    classifier: str = "logistic",
) -> dict[str, dict[str, float]]:
    """Fit on ``train``; accuracy and macro F1 on each frame of ``others``."""
    model = make_baseline(config, seed, classifier).fit(train["text"], train["label"])
    result = {}
    for name, frame in others.items():
        predicted = model.predict(frame["text"])
        result[name] = {
            "accuracy": float(accuracy_score(frame["label"], predicted)),
            "f1": float(f1_score(frame["label"], predicted, average="macro")),
        }
    return result
