"""Scores of a trained classifier on a tokenized split. No plotting here."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from sklearn.metrics import confusion_matrix, f1_score
from torch import Tensor

from scratchformer.model import Classifier
from scratchformer.tokenization import TokenizedSplit, batches

CLASS_NAMES = ("negative", "positive")  # label 0, label 1


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


def confusion_rows(logits: Tensor, labels: Tensor, class_names: list[str]) -> list[dict[str, str]]:
    """One {actual, predicted} row per example: the shape of dvc's ``confusion`` template."""
    predicted = logits.argmax(dim=1)
    return [
        {"actual": class_names[a], "predicted": class_names[p]}
        for a, p in zip(labels.tolist(), predicted.tolist(), strict=True)
    ]


def confusion_counts(logits: Tensor, labels: Tensor, num_classes: int) -> list[list[int]]:
    return confusion_matrix(labels.numpy(), logits.argmax(dim=1).numpy(), labels=range(num_classes)).tolist()
