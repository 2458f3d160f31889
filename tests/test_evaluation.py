"""Per-class scores and confusion counts with class names, for any number of classes."""

import numpy as np
import pytest
import torch
from sklearn.metrics import precision_recall_fscore_support

from scratchformer.evaluation import confusion_table, per_class_scores, scores

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
    from scratchformer import plots

    plots.use_cjk_font()
    fig = plots.confusion_figure({"classes": NAMES, "counts": [[1, 0, 1], [0, 1, 0], [0, 0, 1]]}, "test")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == NAMES
    assert [t.get_text() for t in ax.get_yticklabels()] == NAMES
    assert sorted(t.get_text() for t in ax.texts) == ["0"] * 5 + ["1"] * 4
