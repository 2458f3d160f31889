"""Labels that look wrong: confident learning over NB-LR's out-of-fold probabilities.

A review's label is suspect when a model that never saw the review gives that
label a low probability. For train, every review is scored by NB-LR (the
strongest n-gram baseline, :func:`scratchformer.analysis.baseline.make_baseline`)
fit on the other ``FOLDS - 1`` folds; validation and test are scored by NB-LR fit
on all of train. cleanlab (Northcutt et al., "Confident learning", JAIR 2021) turns
those probabilities into

- ``score``: its label quality score (``get_label_quality_scores``, self-confidence:
  the probability of the given label), low = suspect; the ranking's order, and
- ``issue``: whether ``find_label_issues`` flags the row (the per-class thresholds of
  confident learning, pruned by the estimated noise rates); the counts in metrics.

Folds are grouped by the normalised text (:func:`scratchformer.analysis.duplicates.normalise`):
copies of one review land in one fold, so a copy in another fold cannot vouch for
its label. The folds are stratified and shuffled with the params ``seed``, and fit side by
side, one process a core (joblib): each fit is what it would be alone.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd
from joblib import Parallel, cpu_count, delayed
from sklearn.model_selection import StratifiedGroupKFold

from scratchformer.analysis.baseline import make_baseline
from scratchformer.analysis.duplicates import normalise
from scratchformer.config import BaselineConfig

log = logging.getLogger(__name__)

FOLDS = 5
DECIMALS = 6  # scores are written, and ranked, at this precision: the order does not hang on the last bits
COLUMNS = ["row", "text", "label", "suggested", "score", "issue"]


@dataclass(frozen=True)
class Ranking:
    """Every row of one split, the most suspect label first (columns :data:`COLUMNS`).

    ``row`` is the row's 0-based position in the split as ingest wrote it to data/raw
    (before ``data.label_issues: drop``).
    """

    split: str
    frame: pd.DataFrame

    @property
    def issues(self) -> int:
        return int(self.frame["issue"].sum())


def _probabilities(model, texts: pd.Series, num_classes: int) -> np.ndarray:
    """(N, K) with the columns of the classes the model never saw at a tiny probability."""
    out = np.full((len(texts), num_classes), 1e-6)
    out[:, model.classes_] = model.predict_proba(texts)
    return out / out.sum(axis=1, keepdims=True)


def out_of_fold(
    texts: pd.Series, labels: np.ndarray, num_classes: int, config: BaselineConfig, seed: int
) -> np.ndarray:
    """(N, K): each text's class probabilities from NB-LR fit on the folds that do not hold it."""
    groups = pd.factorize(texts.map(normalise))[0]
    k = min(FOLDS, int(groups.max()) + 1)
    if k < 2:
        raise ValueError(f"{len(texts)} train texts, all one text after normalisation: nothing to score out of fold")
    folds = list(StratifiedGroupKFold(k, shuffle=True, random_state=seed).split(texts, labels, groups))
    fold_probs = Parallel(n_jobs=min(k, cpu_count()))(
        delayed(_held_fold)(texts.iloc[fit_rows], labels[fit_rows], texts.iloc[held_rows], num_classes, config, seed)
        for fit_rows, held_rows in folds
    )
    probs = np.zeros((len(texts), num_classes))
    for (_, held_rows), held in zip(folds, fold_probs, strict=True):
        probs[held_rows] = held
    return probs


def _held_fold(
    fit_texts: pd.Series, fit_labels: np.ndarray, held: pd.Series, num_classes: int, config: BaselineConfig, seed: int
) -> np.ndarray:
    """(len(held), K): NB-LR fit on one fold's complement, answering the fold."""
    if len(np.unique(fit_labels)) < 2:  # a tiny corpus: the fold knows one class, it cannot judge
        return np.tile(np.bincount(fit_labels, minlength=num_classes) / len(fit_labels), (len(held), 1))
    model = make_baseline(config, seed, "nblr").fit(fit_texts, fit_labels)
    return _probabilities(model, held, num_classes)


def held_out(
    train: pd.DataFrame, frames: dict[str, pd.DataFrame], num_classes: int, config: BaselineConfig, seed: int
) -> dict[str, np.ndarray]:
    """Each of ``frames``' (N, K) class probabilities from one NB-LR fit on all of ``train``."""
    model = make_baseline(config, seed, "nblr").fit(train["text"], train["label"].to_numpy())
    return {split: _probabilities(model, frame["text"], num_classes) for split, frame in frames.items()}


def rank(split: str, frame: pd.DataFrame, probs: np.ndarray, names: list[str]) -> Ranking:
    """``frame`` (text, label id) and its probabilities -> every row, the least likely label first."""
    from cleanlab.filter import find_label_issues  # imported here: it takes a second, and only this stage needs it
    from cleanlab.rank import get_label_quality_scores

    labels = frame["label"].to_numpy()
    scores = np.round(get_label_quality_scores(labels, probs, method="self_confidence"), DECIMALS)
    flagged = find_label_issues(labels, probs)
    out = pd.DataFrame(
        {
            "row": np.arange(len(frame)),
            "text": frame["text"].to_numpy(),
            "label": [names[i] for i in labels],
            "suggested": [names[i] for i in probs.argmax(axis=1)],
            "score": scores,
            "issue": flagged,
        }
    )
    out = out.sort_values(["score", "row"], kind="stable").reset_index(drop=True)
    log.info("%s: cleanlab flags %d of %d labels", split, int(flagged.sum()), len(frame))
    return Ranking(split, out)


def rank_splits(
    frames: dict[str, pd.DataFrame], names: list[str], config: BaselineConfig, seed: int
) -> dict[str, Ranking]:
    """A :class:`Ranking` per split: train out of fold, the others by NB-LR fit on all of train."""
    train = frames["train"]
    labels = train["label"].to_numpy()
    result = {"train": rank("train", train, out_of_fold(train["text"], labels, len(names), config, seed), names)}
    others = {split: frame for split, frame in frames.items() if split != "train"}
    for split, probs in held_out(train, others, len(names), config, seed).items():
        result[split] = rank(split, others[split], probs, names)
    return result


def most_suspect(ranking: Ranking, n: int) -> np.ndarray:
    """The rows (positions in the split) of the ``n`` most suspect labels, ascending."""
    return np.sort(ranking.frame["row"].to_numpy()[:n])


def listed(ranking: Ranking, at_least: int = 0) -> pd.DataFrame:
    """What the CSV holds: every row cleanlab flags, and at least the ``at_least`` most suspect, in rank order."""
    frame = ranking.frame
    keep = frame["issue"].to_numpy() | (np.arange(len(frame)) < at_least)
    return frame[keep].reset_index(drop=True)
