"""The objective's options: R-Drop, the wide branch's own loss, generalized cross-entropy, adversarial training;
none acts when off."""

import math

import pytest
import torch
import torch.nn.functional as F
from fixtures import tiny_config

from scratchformer.config import TrainConfig
from scratchformer.model.classifier import TransformerClassifier
from scratchformer.train.objective import (
    Classification,
    adversarial_shift,
    generalized_cross_entropy,
    symmetric_kl,
)


def _model(dropout: float) -> TransformerClassifier:
    torch.manual_seed(0)
    return TransformerClassifier(tiny_config(dropout=dropout), 30)


def _batch() -> tuple[torch.Tensor, torch.Tensor]:
    ids = torch.randint(3, 30, (6, 10), generator=torch.Generator().manual_seed(1))
    return ids, torch.tensor([0, 1, 1, 0, 1, 0])


def test_symmetric_kl_is_half_the_two_kls_summed_over_rows():
    a = torch.log(torch.tensor([[0.5, 0.5], [0.2, 0.8]]))
    b = torch.log(torch.tensor([[0.9, 0.1], [0.2, 0.8]]))
    kl_pq = 0.5 * math.log(0.5 / 0.9) + 0.5 * math.log(0.5 / 0.1)
    kl_qp = 0.9 * math.log(0.9 / 0.5) + 0.1 * math.log(0.1 / 0.5)
    assert symmetric_kl(a, b).item() == pytest.approx((kl_pq + kl_qp) / 2)  # the second row agrees: 0
    assert symmetric_kl(b, a).item() == pytest.approx(symmetric_kl(a, b).item())


def test_without_dropout_the_two_passes_agree_and_the_loss_is_one_passs_cross_entropy():
    ids, labels = _batch()
    objective = Classification(_model(dropout=0.0), label_smoothing=0.1, rdrop=1.0).train()
    result = objective(ids, labels)
    one_pass = F.cross_entropy(objective.model(ids), labels, label_smoothing=0.1, reduction="sum")
    torch.testing.assert_close(result.loss, one_pass)


def test_with_dropout_the_loss_is_half_the_two_cross_entropies_and_alpha_times_their_kl():
    ids, labels = _batch()
    model = _model(dropout=0.3)
    objective = Classification(model, rdrop=0.7).train()
    torch.manual_seed(5)
    result = objective(ids, labels)
    torch.manual_seed(5)  # the same masks, drawn in the same order: one pass over both copies
    first, second = model(torch.cat([ids, ids])).chunk(2)
    ce = [F.cross_entropy(logits, labels, reduction="sum") for logits in (first, second)]
    kl = symmetric_kl(first, second)
    assert kl.item() > 1e-4  # two masks, two answers
    torch.testing.assert_close(result.loss, (ce[0] + ce[1] + 0.7 * kl) / 2)
    torch.testing.assert_close(result.plain, ce[0])  # the step reports the first pass, in plain cross-entropy


def test_in_eval_mode_and_at_alpha_zero_it_is_one_pass():
    ids, labels = _batch()
    model = _model(dropout=0.3)
    calls = []
    model.register_forward_hook(lambda module, args, out: calls.append(args[0].shape[0]))
    Classification(model, rdrop=1.0).eval()(ids, labels)
    Classification(model, rdrop=0.0).train()(ids, labels)
    Classification(model, rdrop=1.0).train()(ids, labels)
    assert calls == [6, 6, 12]


def test_train_rdrop_reaches_the_objective_and_a_negative_one_is_refused():
    objective = Classification.for_training(_model(dropout=0.1), TrainConfig(rdrop=0.5))
    assert objective.rdrop == 0.5
    with pytest.raises(ValueError, match=r"train\.rdrop=-1"):
        TrainConfig(rdrop=-1)


def _wide_model() -> TransformerClassifier:
    torch.manual_seed(0)
    model = TransformerClassifier(tiny_config(wide_ngrams=2, ngram_buckets=64), 30)
    torch.nn.init.normal_(model.wide.table.weight)  # the branch starts at zero: give it something to say
    torch.nn.init.normal_(model.wide.unigrams.weight)
    return model


def test_wide_loss_adds_beta_times_the_wide_branchs_own_cross_entropy():
    ids, labels = _batch()
    model = _wide_model()
    result = Classification(model, label_smoothing=0.1, wide_loss=0.5).train()(ids, labels)
    whole = F.cross_entropy(model(ids), labels, label_smoothing=0.1, reduction="sum")
    wide = F.cross_entropy(model.wide(ids), labels, label_smoothing=0.1, reduction="sum")
    assert wide.item() > 1.0  # a term that can be told apart from nothing
    torch.testing.assert_close(result.loss, whole + 0.5 * wide)
    torch.testing.assert_close(result.plain, F.cross_entropy(model(ids), labels, reduction="sum"))
    evaluated = Classification(model, wide_loss=0.5).eval()(ids, labels)  # validation: the plain loss
    torch.testing.assert_close(evaluated.loss, F.cross_entropy(model(ids), labels, reduction="sum"))


def test_wide_loss_trains_the_branch_toward_the_labels_alone():
    ids, labels = _batch()
    model = _wide_model()
    Classification(model, wide_loss=1.0).train()(ids, labels).loss.backward()
    with_it = model.wide.unigrams.weight.grad.clone()
    model.zero_grad()
    Classification(model).train()(ids, labels).loss.backward()
    assert not torch.allclose(with_it, model.wide.unigrams.weight.grad)


def test_wide_loss_without_a_wide_branch_or_below_zero_is_refused():
    with pytest.raises(ValueError, match=r"train\.wide_loss=1.0 needs the wide branch: set model\.wide_ngrams"):
        Classification.for_training(_model(dropout=0.0), TrainConfig(wide_loss=1.0))
    with pytest.raises(ValueError, match=r"train\.wide_loss=-1"):
        TrainConfig(wide_loss=-1)


def test_generalized_cross_entropy_is_one_minus_p_to_the_q_over_q_and_near_q_zero_the_cross_entropy():
    logits = torch.log(torch.tensor([[0.2, 0.8], [0.9, 0.1]], dtype=torch.float64))  # q near 0 needs the digits
    labels = torch.tensor([1, 1])
    expected = (1 - 0.8**0.5) / 0.5 + (1 - 0.1**0.5) / 0.5
    assert generalized_cross_entropy(logits, labels, 0.5).item() == pytest.approx(expected)
    assert generalized_cross_entropy(logits, labels, 1.0).item() == pytest.approx(0.2 + 0.9)  # q = 1: MAE
    ce = F.cross_entropy(logits, labels, reduction="sum").item()
    assert generalized_cross_entropy(logits, labels, 1e-6).item() == pytest.approx(ce, rel=1e-4)


def test_gce_is_the_loss_the_step_descends_and_the_reported_loss_stays_cross_entropy():
    ids, labels = _batch()
    model = _model(dropout=0.0)
    result = Classification(model, gce=0.7).train()(ids, labels)
    logits = model(ids)
    torch.testing.assert_close(result.loss, generalized_cross_entropy(logits, labels, 0.7))
    torch.testing.assert_close(result.plain, F.cross_entropy(logits, labels, reduction="sum"))
    assert not torch.allclose(result.loss, result.plain)


def test_gce_with_label_smoothing_or_out_of_range_is_refused():
    with pytest.raises(ValueError, match=r"train\.gce=0.7 scores hard labels"):
        Classification.for_training(_model(dropout=0.0), TrainConfig(gce=0.7, label_smoothing=0.1))
    with pytest.raises(ValueError, match=r"train\.gce=1.5"):
        TrainConfig(gce=1.5)


def test_the_adversarial_shift_is_epsilon_long_on_every_row_along_its_own_gradient():
    grad = torch.randn(3, 4, 5, generator=torch.Generator().manual_seed(2))
    grad[1] *= 100.0  # a row with a much larger gradient still moves ε
    grad[2] = 0.0  # a row with no gradient does not move
    shift = adversarial_shift(grad.requires_grad_(), 0.3)
    norms = torch.linalg.vector_norm(shift.flatten(1), dim=1)
    torch.testing.assert_close(norms, torch.tensor([0.3, 0.3, 0.0]))
    for row in (0, 1):
        torch.testing.assert_close(shift[row] / 0.3, grad[row] / grad[row].norm())
    assert not shift.requires_grad  # held fixed: no gradient through the direction


def _loss_at(model, ids, labels, shift):
    return F.cross_entropy(model(ids, shift=shift), labels, label_smoothing=0.1, reduction="sum")


def test_the_adversarial_loss_adds_the_loss_at_embeddings_moved_up_each_rows_gradient():
    ids, labels = _batch()
    model = _model(dropout=0.0)
    result = Classification(model, label_smoothing=0.1, adversarial=0.5).train()(ids, labels)
    zero = torch.zeros(*ids.shape, model.config.d_model, requires_grad=True)
    clean = _loss_at(model, ids, labels, zero)
    (grad,) = torch.autograd.grad(clean, zero)
    moved = grad * (0.5 / torch.linalg.vector_norm(grad.flatten(1), dim=1))[:, None, None]
    up = _loss_at(model, ids, labels, moved)
    torch.testing.assert_close(result.loss, clean + up)
    torch.testing.assert_close(result.plain, F.cross_entropy(model(ids), labels, reduction="sum"))
    # The move raises the loss, and more than a move of the same lengths in random directions.
    noise = torch.randn(moved.shape, generator=torch.Generator().manual_seed(3))
    noise *= (0.5 / torch.linalg.vector_norm(noise.flatten(1), dim=1))[:, None, None]
    assert up.item() > _loss_at(model, ids, labels, noise).item() > clean.item() - 0.05
    assert up.item() > clean.item() + 0.05


def test_the_adversarial_term_trains_the_weights_and_is_off_in_eval_mode():
    ids, labels = _batch()
    model = _model(dropout=0.0)
    Classification(model, adversarial=0.5).train()(ids, labels).loss.backward()
    with_it = model.head.weight.grad.clone()
    model.zero_grad()
    Classification(model).train()(ids, labels).loss.backward()
    assert not torch.allclose(with_it, model.head.weight.grad)
    evaluated = Classification(model, adversarial=0.5).eval()(ids, labels)  # validation: the plain loss
    torch.testing.assert_close(evaluated.loss, F.cross_entropy(model(ids), labels, reduction="sum"))


def test_train_adversarial_reaches_the_objective_and_below_zero_or_with_rdrop_is_refused():
    assert Classification.for_training(_model(dropout=0.1), TrainConfig(adversarial=1.0)).adversarial == 1.0
    with pytest.raises(ValueError, match=r"train\.adversarial=-1"):
        TrainConfig(adversarial=-1)
    with pytest.raises(ValueError, match=r"train\.adversarial=1.0 takes no train\.rdrop"):
        Classification.for_training(_model(dropout=0.1), TrainConfig(adversarial=1.0, rdrop=1.0))
