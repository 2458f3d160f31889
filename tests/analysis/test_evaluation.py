"""Scores at the precision they are written at, per class with names, and eval mode that always comes back."""

from fractions import Fraction

import numpy as np
import pytest
import torch
from sklearn.metrics import f1_score, precision_recall_fscore_support

from scratchformer.analysis.evaluation import DECIMALS, confusion_table, macro_f1, per_class_scores, scores
from scratchformer.model.classifier import eval_mode


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


NAMES = ["中评", "好评", "差评"]


def three_class_logits(n=300, seed=0):
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 3, (n,), generator=g)
    logits = torch.randn(n, 3, generator=g) + 1.5 * torch.nn.functional.one_hot(labels, 3)
    logits[:5] = torch.tensor([0.0, 0.0, 9.0])  # class 2 over-predicted
    return logits, labels


def test_per_class_scores_match_scikit_learn_and_average_to_the_macro_f1():
    logits, labels = three_class_logits()
    table = confusion_table(logits, labels, NAMES)
    assert table["classes"] == NAMES and np.array(table["counts"]).shape == (3, 3)
    assert np.array(table["counts"]).sum() == 300
    per_class = per_class_scores(table["counts"], NAMES)
    p, r, f, support = precision_recall_fscore_support(labels, logits.argmax(1), labels=[0, 1, 2], zero_division=0)
    for k, name in enumerate(NAMES):
        got = per_class[name]
        assert (got["precision"], got["recall"], got["f1"]) == pytest.approx((p[k], r[k], f[k]))
        assert got["support"] == support[k]
    assert np.mean([c["f1"] for c in per_class.values()]) == pytest.approx(scores(logits, labels)["f1"])


def test_a_class_never_predicted_scores_zero_not_nan():
    labels = torch.tensor([0, 1, 2, 2])
    logits = torch.nn.functional.one_hot(torch.tensor([0, 1, 1, 1]), 3).float()
    per_class = per_class_scores(confusion_table(logits, labels, NAMES)["counts"], NAMES)
    assert per_class["差评"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 2}


def test_confusion_counts_rows_are_actual_columns_predicted():
    labels = torch.tensor([0, 0, 1, 2])
    logits = torch.nn.functional.one_hot(torch.tensor([0, 2, 1, 2]), 3).float()
    assert confusion_table(logits, labels, NAMES)["counts"] == [[1, 0, 1], [0, 1, 0], [0, 0, 1]]


def test_confusion_picture_carries_the_class_names():
    from scratchformer.render import pictures as plots

    plots.use_cjk_font()
    fig = plots.confusion_figure({"classes": NAMES, "counts": [[1, 0, 1], [0, 1, 0], [0, 0, 1]]}, "test")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == NAMES
    assert [t.get_text() for t in ax.get_yticklabels()] == NAMES
    assert sorted(t.get_text() for t in ax.texts) == ["0"] * 5 + ["1"] * 4


def test_a_blends_parts_are_its_transformers_and_its_nb_member():
    from fixtures import tiny_config

    from scratchformer.analysis.evaluation import parts
    from scratchformer.model.classifier import Ensemble, TransformerClassifier
    from scratchformer.model.naive_bayes import NBLogistic

    members = [TransformerClassifier(tiny_config(), 30) for _ in range(2)]
    nb = NBLogistic(2, 64, 30, 2, 0)
    assert parts(members[0]) == {} and parts(Ensemble(members)) == {}  # no NB member: nothing to split
    found = parts(Ensemble(members, nb))
    assert found["nb"] is nb and list(found["transformers"].members) == members and found["transformers"].nb is None
    alone = parts(Ensemble(members[:1], nb))["transformers"]  # an Ensemble still: it reads the networks' window
    assert isinstance(alone, Ensemble) and list(alone.members) == members[:1] and alone.nb is None
