"""Scores of a trained classifier on a tokenized split. No plotting here."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.metrics import confusion_matrix, f1_score
from torch import Tensor

from scratchformer.model import Classifier
from scratchformer.tokenization import TokenizedSplit, batches


@torch.no_grad()
def predict_logits(
    model: Classifier, split: TokenizedSplit, batch_size: int, device: torch.device | str = "cpu"
) -> Tensor:
    """Logits (N, num_classes) for every example, in the split's order, in eval mode."""
    was_training = model.training
    model.eval()
    out = [model(ids.to(device)).float().cpu() for ids, _ in batches(split, batch_size, model.pad_id)]
    model.train(was_training)
    return torch.cat(out)


def scores(logits: Tensor, labels: Tensor) -> dict[str, float]:
    """Loss, accuracy and macro F1 of ``logits`` (N, K) against ``labels`` (N,)."""
    predicted = logits.argmax(dim=1)
    return {
        "loss": F.cross_entropy(logits, labels).item(),
        "accuracy": (predicted == labels).float().mean().item(),
        "f1": float(f1_score(labels.numpy(), predicted.numpy(), average="macro")),
    }


def confusion_counts(logits: Tensor, labels: Tensor, num_classes: int) -> list[list[int]]:
    """(K, K) counts: row = actual class id, column = predicted class id."""
    return confusion_matrix(labels.numpy(), logits.argmax(dim=1).numpy(), labels=range(num_classes)).tolist()


def confusion_table(logits: Tensor, labels: Tensor, class_names: list[str]) -> dict:
    """The confusion counts with their class names: K x K numbers, however many examples."""
    return {"classes": list(class_names), "counts": confusion_counts(logits, labels, len(class_names))}


def per_class_scores(counts: list[list[int]], class_names: list[str]) -> dict[str, dict[str, float]]:
    """Precision, recall, F1 and support of each class from confusion ``counts`` (rows actual).

    A class never predicted (or never present) scores 0 where its denominator is 0,
    as scikit-learn's ``zero_division=0``; the mean of the F1s is the macro F1 that
    :func:`scores` reports as ``f1``.
    """
    m = np.asarray(counts, dtype=np.int64)
    hits, actual, predicted = np.diag(m), m.sum(axis=1), m.sum(axis=0)
    out = {}
    for k, name in enumerate(class_names):
        p = hits[k] / predicted[k] if predicted[k] else 0.0
        r = hits[k] / actual[k] if actual[k] else 0.0
        f1 = 2 * p * r / (p + r) if p + r else 0.0
        out[name] = {"precision": float(p), "recall": float(r), "f1": float(f1), "support": int(actual[k])}
    return out
