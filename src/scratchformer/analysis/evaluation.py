"""Scores of a trained classifier on a tokenized split. No plotting here.

Scores are written at a stated precision so that they compare across machines:
accuracy and F1 are exact fractions of the split's counts (1002 right out of
1200 is 0.835, not the float32 0.8349999785), and a loss (or any other
measured real number) is rounded to ``DECIMALS`` decimals, above the last
digits that differ between CPUs.
"""

from __future__ import annotations

from fractions import Fraction

import torch
import torch.nn.functional as F
from sklearn.metrics import confusion_matrix
from torch import Tensor

from scratchformer.analysis.scoring import _class_counts, _f1, accuracy, macro_f1
from scratchformer.data.tokenized_split import TokenizedSplit, batches
from scratchformer.model.classifier import Classifier, Ensemble, eval_mode

DECIMALS = 5


@torch.no_grad()
def predict_logits(
    model: Classifier, split: TokenizedSplit, batch_size: int, device: torch.device | str = "cpu"
) -> Tensor:
    """Logits (N, num_classes) for every example, in the split's order, in eval mode."""
    with eval_mode(model):
        out = [model(ids.to(device)).float().cpu() for ids, _ in batches(split, batch_size, model.pad_id)]
    return torch.cat(out)


def parts(model: Classifier) -> dict[str, torch.nn.Module]:
    """The parts of a blend that carry a score of their own: its Transformers together, its NB member.

    A blend of Transformers and the NB member is scored as a whole; its parts' own scores
    say which of them carries the number. A model without an NB member has no parts.
    """
    if not isinstance(model, Ensemble) or model.nb is None:
        return {}
    return {"transformers": Ensemble(list(model.members)), "nb": model.nb}  # each reads what it reads in the blend


def rounded(value: float) -> float:
    """``value`` at the precision metrics are written at."""
    return round(float(value), DECIMALS)


def scores(logits: Tensor, labels: Tensor) -> dict[str, float]:
    """Loss, accuracy and macro F1 of ``logits`` (N, K) against ``labels`` (N,), at the stated precision."""
    predicted = logits.argmax(dim=1)
    return {
        "loss": rounded(F.cross_entropy(logits, labels).item()),
        "accuracy": accuracy((predicted == labels).sum().item(), len(labels)),
        "f1": macro_f1(confusion_counts(logits, labels, logits.size(1))),
    }


def confusion_counts(logits: Tensor, labels: Tensor, num_classes: int) -> list[list[int]]:
    """(K, K) counts: row = actual class id, column = predicted class id."""
    return confusion_matrix(labels.numpy(), logits.argmax(dim=1).numpy(), labels=range(num_classes)).tolist()


def confusion_table(logits: Tensor, labels: Tensor, class_names: list[str]) -> dict:
    """The confusion counts with their class names: K x K numbers, however many examples."""
    return {"classes": list(class_names), "counts": confusion_counts(logits, labels, len(class_names))}


def per_class_scores(counts: list[list[int]], class_names: list[str]) -> dict[str, dict[str, float]]:
    """Precision, recall, F1 and support of each class from confusion ``counts`` (rows actual), exactly.

    A class never predicted (or never present) scores 0 where its denominator is 0,
    as scikit-learn's ``zero_division=0``; the mean of the F1s is the macro F1 that
    :func:`scores` reports as ``f1``.
    """
    out = {}
    for name, (hits, actual, predicted) in zip(class_names, _class_counts(counts), strict=True):
        out[name] = {
            "precision": float(Fraction(hits, predicted)) if predicted else 0.0,
            "recall": float(Fraction(hits, actual)) if actual else 0.0,
            "f1": float(_f1(hits, actual, predicted)),
            "support": int(actual),
        }
    return out
