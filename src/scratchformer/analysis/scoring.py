"""Scores of predicted class ids, with their uncertainty: no torch, so the baselines use them too.

Accuracy and macro F1 are exact fractions of counts. A split is also scored on its
*unseen* part, the reviews whose text does not occur in train
(:func:`scratchformer.data.splits.in_train`): a review also in train can be scored by
memory, and on ChnSentiCorp more than a quarter of validation and test are.

Two kinds of 95% interval, both functions of the predictions alone (the same on every
machine):

* one accuracy: the **Wilson score interval** of k right out of n, closed form;
* a difference of two classifiers on the same reviews: a **paired bootstrap**, each
  resample drawing n reviews with replacement and scoring both classifiers on those
  same reviews, so what the two share (easy reviews, hard ones) cancels.
"""

from __future__ import annotations

import logging
import math
from fractions import Fraction
from statistics import NormalDist

import numpy as np

log = logging.getLogger(__name__)

Z95 = NormalDist().inv_cdf(0.975)  # 1.959963984540054
RESAMPLES = 10_000  # bootstrap resamples: the interval's ends move by ~0.001 between seeds
DRAWS_PER_CHUNK = 1 << 22  # bootstrap indices drawn at once: bounds memory on a large split or corpus


def accuracy(correct: int, total: int) -> float:
    """``correct / total`` as the float nearest the exact fraction."""
    return float(Fraction(int(correct), int(total)))


def _class_counts(counts: list[list[int]]) -> list[tuple[int, int, int]]:
    """(hits, actual, predicted) of each class of a confusion matrix; ``counts[a][p]``: class a predicted p."""
    k = len(counts)
    return [(counts[c][c], sum(counts[c]), sum(counts[a][c] for a in range(k))) for c in range(k)]


def _f1(hits: int, actual: int, predicted: int) -> Fraction:
    """2·TP / (2·TP + FP + FN) = 2·hits / (actual + predicted); 0 for a class never present nor predicted."""
    return Fraction(2 * hits, actual + predicted) if actual + predicted else Fraction(0)


def macro_f1(counts: list[list[int]]) -> float:
    """Mean over classes of 2·TP / (2·TP + FP + FN), computed exactly from a confusion matrix.

    ``counts[a][p]`` is how many examples of class ``a`` were predicted ``p``. A
    class that never occurs and is never predicted has F1 0, as in scikit-learn.
    """
    return float(sum(_f1(*c) for c in _class_counts(counts)) / len(counts))


def counts_of(predicted: np.ndarray, labels: np.ndarray, num_classes: int) -> list[list[int]]:
    """(K, K) confusion counts: row = actual class id, column = predicted class id."""
    flat = np.bincount(np.asarray(labels) * num_classes + np.asarray(predicted), minlength=num_classes**2)
    return flat.reshape(num_classes, num_classes).tolist()


def wilson(correct: int, total: int, z: float = Z95) -> dict[str, float]:
    """The Wilson score interval of the accuracy ``correct / total``: ``{"lo": .., "hi": ..}``.

    (p + z²/2n ± z·√(p(1-p)/n + z²/4n²)) / (1 + z²/n), p = k/n. Unlike p ± z·√(p(1-p)/n)
    it stays inside [0, 1] and does not shrink to a point at p = 1 (8/10: [0.4902, 0.9433]).
    """
    if total <= 0:
        raise ValueError(f"no reviews to put an interval on ({correct} right out of {total})")
    p, n = correct / total, total
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    scale = 1 + z * z / n
    # At k = 0 (k = n) the lower (upper) end is exactly 0 (1); float rounding would leave 2e-17.
    lo = 0.0 if correct == 0 else (centre - half) / scale
    hi = 1.0 if correct == total else (centre + half) / scale
    return {"lo": lo, "hi": hi}


def scored(predicted: np.ndarray, labels: np.ndarray, num_classes: int) -> dict:
    """Accuracy (with its Wilson interval), macro F1 and the number of reviews; ``{"n": 0}`` for none."""
    n = len(labels)
    if n == 0:
        return {"n": 0}
    right = int((np.asarray(predicted) == np.asarray(labels)).sum())
    return {
        "accuracy": accuracy(right, n),
        "accuracy_ci95": wilson(right, n),
        "f1": macro_f1(counts_of(predicted, labels, num_classes)),
        "n": n,
    }


def split_scores(predicted: np.ndarray, labels: np.ndarray, seen: np.ndarray, num_classes: int) -> dict:
    """A split's accuracy, its Wilson interval and macro F1, on every review and on the unseen ones.

    ``seen`` marks the reviews whose text occurs in train; ``unseen`` scores the rest,
    with its own ``n``. A split with no unseen review gets ``unseen: {"n": 0}``.
    """
    predicted, labels, seen = np.asarray(predicted), np.asarray(labels), np.asarray(seen, dtype=bool)
    if not len(predicted) == len(labels) == len(seen):
        raise ValueError(f"{len(predicted)} predictions, {len(labels)} labels and {len(seen)} seen flags")
    whole = scored(predicted, labels, num_classes)
    return {
        "accuracy": whole["accuracy"],
        "accuracy_ci95": whole["accuracy_ci95"],
        "f1": whole["f1"],
        "unseen": scored(predicted[~seen], labels[~seen], num_classes),
    }


def paired_bootstrap(
    correct_a: np.ndarray, correct_b: np.ndarray, seed: int, resamples: int = RESAMPLES
) -> dict[str, float | dict[str, float]]:
    """Accuracy of A minus accuracy of B on the same reviews, with a 95% paired bootstrap interval.

    ``correct_a`` / ``correct_b``: whether each classifier got each review right, in the
    same order: shape (n,), or (runs, n) for several runs of each (seeds of a recipe), the
    difference then being that of the mean accuracies over the runs. Every resample draws
    n review indices with replacement (``numpy.random.default_rng(seed)``) and takes both
    sides' accuracy on those same reviews, every run of a review moving with it; the
    interval is the 2.5th and 97.5th percentile of the ``resamples`` differences (linear
    interpolation). Same inputs and seed, same bytes.
    """
    a, b = np.atleast_2d(np.asarray(correct_a, dtype=bool)), np.atleast_2d(np.asarray(correct_b, dtype=bool))
    n = a.shape[1]
    if n == 0 or b.shape[1] != n:
        raise ValueError(
            f"a paired bootstrap needs the same reviews on both sides, at least one ({n} and {b.shape[1]})"
        )
    # Per review, the share of A's runs right minus the share of B's, over the common
    # denominator: sums of these integers are the difference of the mean accuracies times n * scale.
    scale = len(a) * len(b)
    gain = a.sum(axis=0).astype(np.int64) * len(b) - b.sum(axis=0).astype(np.int64) * len(a)
    rng = np.random.default_rng(seed)
    per_chunk = max(1, DRAWS_PER_CHUNK // n)
    sums = np.empty(resamples, dtype=np.int64)
    for start in range(0, resamples, per_chunk):
        rows = min(per_chunk, resamples - start)
        sums[start : start + rows] = gain[rng.integers(0, n, size=(rows, n))].sum(axis=1)
    lo, hi = np.quantile(sums, [0.025, 0.975])
    return {
        "delta": float(Fraction(int(gain.sum()), n * scale)),
        "ci95": {"lo": float(lo) / (n * scale), "hi": float(hi) / (n * scale)},
    }


def versus_best(
    predicted: dict[str, np.ndarray],
    labels: dict[str, np.ndarray],
    seen: dict[str, np.ndarray],
    baselines: dict[str, dict[str, np.ndarray]],
    seed: int,
) -> dict[str, dict]:
    """Per split, the model against the baseline strongest on unseen validation, on the unseen reviews.

    ``predicted`` / ``labels`` / ``seen``: split -> the model's class ids, the labels, the
    in-train mask; ``baselines``: split -> baseline name -> its class ids. The baseline is
    chosen once, on validation (the first of equals, in ``baselines``' order), and is the
    same on every split. Each split gets ``{"name", "delta", "ci95": {"lo", "hi"}}`` from
    :func:`paired_bootstrap` with ``seed``; a split without unseen reviews gets nothing.
    """
    unseen = {split: ~np.asarray(mask, dtype=bool) for split, mask in seen.items()}
    if not unseen["validation"].any():
        log.warning("every validation text is also in train: no unseen reviews to compare the baselines on")
        return {}

    def right(split: str, ids: np.ndarray) -> np.ndarray:
        u = unseen[split]
        return np.asarray(ids)[u] == np.asarray(labels[split])[u]

    on_validation = {name: int(right("validation", ids).sum()) for name, ids in baselines["validation"].items()}
    best = max(on_validation, key=on_validation.__getitem__)
    out = {}
    for split in predicted:
        if not unseen[split].any():
            log.warning("every %s text is also in train: no unseen reviews to compare with %s on", split, best)
            continue
        compared = paired_bootstrap(right(split, predicted[split]), right(split, baselines[split][best]), seed)
        out[split] = {"name": best, **compared}
    return out
