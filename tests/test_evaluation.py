"""Scores at the precision they are written at, and eval mode that always comes back."""

from fractions import Fraction

import pytest
import torch
from sklearn.metrics import f1_score

from scratchformer.evaluation import DECIMALS, macro_f1, scores
from scratchformer.model import eval_mode


def _logits_for(predicted: list[int], k: int = 2) -> torch.Tensor:
    return torch.nn.functional.one_hot(torch.tensor(predicted), k).float() * 3.0


def test_accuracy_is_the_exact_fraction_of_the_split():
    labels = torch.tensor([0] * 600 + [1] * 600)
    predicted = labels.clone()
    predicted[:198] = 1  # 1002 of 1200 right
    s = scores(_logits_for(predicted.tolist()), labels)
    assert s["accuracy"] == 0.835 == float(Fraction(1002, 1200))
    assert repr(s["accuracy"]) == "0.835"  # not the float32 0.8349999785


def test_macro_f1_is_exact_and_agrees_with_scikit_learn():
    labels = [0, 0, 0, 1, 1, 2, 2, 2, 2]
    predicted = [0, 1, 0, 1, 2, 2, 2, 0, 2]
    counts = [[0] * 3 for _ in range(3)]
    for a, p in zip(labels, predicted, strict=True):
        counts[a][p] += 1
    exact = (Fraction(2 * 2, 2 * 2 + 1 + 1) + Fraction(2 * 1, 2 * 1 + 1 + 1) + Fraction(2 * 3, 2 * 3 + 1 + 1)) / 3
    assert macro_f1(counts) == float(exact)
    assert macro_f1(counts) == pytest.approx(f1_score(labels, predicted, average="macro"), abs=1e-15)
    assert scores(_logits_for(predicted, 3), torch.tensor(labels))["f1"] == float(exact)


def test_loss_is_rounded_to_the_stated_decimals():
    labels = torch.tensor([0, 1, 1])
    logits = torch.tensor([[0.3, 0.1], [0.2, 0.9], [1.3, 0.4]])
    loss = scores(logits, labels)["loss"]
    exact = torch.nn.functional.cross_entropy(logits, labels).item()
    assert loss == round(exact, DECIMALS) and loss != exact


def test_eval_mode_restores_the_previous_mode_even_on_error():
    model = torch.nn.Sequential(torch.nn.Dropout(0.5)).train()
    with eval_mode(model):
        assert not model.training and not model[0].training
    assert model.training and model[0].training
    with pytest.raises(RuntimeError), eval_mode(model):
        raise RuntimeError("evaluation failed")
    assert model.training
    model.eval()
    with eval_mode(model):
        pass
    assert not model.training  # an eval-mode model stays in eval mode
