"""The classical references every experiment is compared with: character n-gram
TF-IDF features and two linear classifiers (scikit-learn), a logistic regression and a
linear SVM, fit on the same train split.

Chinese has no spaces, so characters and their short runs (1–3 grams) stand in for
words. A model written from scratch has to beat these to be worth its compute.
"""

from __future__ import annotations

import pandas as pd
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, f1_score
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.svm import LinearSVC

from scratchformer.config import BaselineConfig


def make_baseline(config: BaselineConfig, seed: int, classifier: str = "logistic") -> Pipeline:
    """TF-IDF over character 1..ngram_max-grams, then ``logistic`` regression (C) or a linear ``svm`` (svm_c)."""
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
