"""Lazy AdamW on a sparse table: the decay and the moving average it owes are paid, exactly."""

from __future__ import annotations

import io

import pytest
import torch
from torch import nn
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

from scratchformer.train.lazy import LazyAdamW, dense_only, pay_before_reading

ROWS, DIM, LRS = 6, 3, [0.05, 0.04, 0.03, 0.02, 0.01, 0.005]  # a decaying lr, as a schedule gives


def tables(seed: int = 0) -> tuple[nn.Embedding, nn.Embedding]:
    """The same table twice: one with sparse gradients, one with dense."""
    torch.manual_seed(seed)
    sparse = nn.Embedding(ROWS, DIM, sparse=True)
    dense = nn.Embedding(ROWS, DIM)
    dense.load_state_dict(sparse.state_dict())
    return sparse, dense


def lazy_adamw(table: nn.Embedding, **settings) -> LazyAdamW:
    """LazyAdamW over ``table``, which pays its rows' owed decay before a forward pass reads them (as in training)."""
    optimizer = LazyAdamW([table.weight], 0.05, **settings)
    optimizer.hook = pay_before_reading(table, optimizer)
    return optimizer


def train(table: nn.Embedding, optimizer: torch.optim.Optimizer, steps: list[list[int]], ema=None, lrs=LRS, loss=None):
    """One step per entry of ``steps`` (the rows it reads) at the lrs of ``lrs``; each step's weights.

    The loss is the sum of the squares of the rows read (a gradient that depends on the weights), or ``loss``.
    """
    loss = loss or (lambda rows: rows.pow(2).sum())
    seen = []
    for lr, rows in zip(lrs, steps, strict=True):
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.zero_grad()
        loss(table(torch.tensor(rows))).backward()
        optimizer.step()
        if ema is not None:
            ema.update_parameters(table)
        seen.append(table.weight.detach().clone())
    return seen


def test_a_table_whose_every_row_is_used_every_step_moves_as_under_adamw_with_its_average():
    sparse, dense = tables()
    lazy_average = AveragedModel(sparse, multi_avg_fn=dense_only(get_ema_multi_avg_fn(0.9), [sparse.weight]))
    lazy = lazy_adamw(sparse, weight_decay=0.3, averages=[lazy_average.module.weight], ema_decay=0.9)
    dense_average = AveragedModel(dense, multi_avg_fn=get_ema_multi_avg_fn(0.9))
    adamw = torch.optim.AdamW([dense.weight], 0.05, betas=(0.0, 0.999), weight_decay=0.3)
    every = [list(range(ROWS))] * len(LRS)
    train(sparse, lazy, every, lazy_average)
    train(dense, adamw, every, dense_average)
    lazy.settle()
    torch.testing.assert_close(sparse.weight, dense.weight, rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(lazy_average.module.weight, dense_average.module.weight, rtol=1e-6, atol=1e-7)


SOMETIMES = [[0, 1], [0], [2], [3, 0], [0], [3]]  # rows 4 and 5 never; the others with gaps


def test_without_momentum_a_table_used_now_and_then_ends_as_under_dense_adamw():
    # At beta1 = 0 a step without a gradient moves a row only by its decay, which lazy AdamW
    # pays later; its second moment decays by beta2 per missed step. So nothing is approximated.
    sparse, dense = tables()
    lazy = lazy_adamw(sparse, weight_decay=0.3)
    train(sparse, lazy, SOMETIMES)
    train(dense, torch.optim.AdamW([dense.weight], 0.05, betas=(0.0, 0.999), weight_decay=0.3), SOMETIMES)
    assert not torch.allclose(sparse.weight, dense.weight)  # decay owed, not yet paid
    lazy.settle()
    torch.testing.assert_close(sparse.weight, dense.weight, rtol=1e-6, atol=1e-7)
    expected = tables()[0].weight[4:] * torch.tensor([1 - lr * 0.3 for lr in LRS]).prod()  # decay alone
    torch.testing.assert_close(sparse.weight[4:], expected, rtol=1e-6, atol=1e-7)


def test_with_momentum_the_moments_of_a_row_are_dense_adamws_when_it_is_used_again():
    sparse, dense = tables()
    lazy = lazy_adamw(sparse, betas=(0.9, 0.999))
    adamw = torch.optim.AdamW([dense.weight], 0.05, betas=(0.9, 0.999), weight_decay=0.0)
    linear = torch.sum  # a gradient that the weights do not change: the moments alone differ, if anything
    train(sparse, lazy, SOMETIMES, loss=linear)
    train(dense, adamw, SOMETIMES, loss=linear)
    last = SOMETIMES[-1]  # row 3, last used two steps before
    for moment in ("exp_avg", "exp_avg_sq"):
        got, want = lazy.state[sparse.weight][moment][last], adamw.state[dense.weight][moment][last]
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-9)


def test_the_average_of_a_row_used_now_and_then_is_the_average_of_its_path():
    # Without decay a lazy row holds still between its uses, so its average over every step can
    # be written out from the weights after each step.
    steps = [[0, 1], [0], [2], [3], [0], [3]]  # row 0 used at steps 1, 2 and 5; row 1 only at step 1
    sparse, _ = tables()
    path = train(sparse, lazy_adamw(sparse), steps)
    expected = path[0].clone()
    for weights in path[1:]:
        expected = 0.8 * expected + 0.2 * weights
    sparse, _ = tables()
    average = AveragedModel(sparse, multi_avg_fn=dense_only(get_ema_multi_avg_fn(0.8), [sparse.weight]))
    lazy = lazy_adamw(sparse, averages=[average.module.weight], ema_decay=0.8)
    train(sparse, lazy, steps, average)
    lazy.settle()
    torch.testing.assert_close(average.module.weight, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("decay", [0.0, 0.3])
def test_a_run_that_saves_and_reloads_its_state_goes_on_bit_identical(decay):
    steps = [[0, 1], [2], [0, 5], [3], [1, 3], [4]]
    whole, _ = tables()
    train(whole, lazy_adamw(whole, weight_decay=decay), steps)
    first, _ = tables()
    optimizer = lazy_adamw(first, weight_decay=decay)
    train(first, optimizer, steps[:3], lrs=LRS[:3])
    buffer = io.BytesIO()
    torch.save(optimizer.state_dict(), buffer)
    buffer.seek(0)
    optimizer.hook.remove()
    again = lazy_adamw(first, weight_decay=decay)
    again.load_state_dict(torch.load(buffer, weights_only=True))
    assert again.state[first.weight]["row_log_decay"].dtype == torch.float64
    train(first, again, steps[3:], lrs=LRS[3:])
    assert torch.equal(first.weight, whole.weight)


def test_sparse_ngrams_on_a_model_without_tables_leave_adamw_alone():
    # `-S model.ngram_max=1 -S model.wide_ngrams=0` under the default's train.sparse_ngrams: no
    # table to update lazily, so AdamW alone trains the model and no LazyAdamW is built.
    from scratchformer.config import from_dict
    from scratchformer.model.classifier import TransformerClassifier
    from scratchformer.train.objective import Classification
    from scratchformer.train.optim import Settings, optimizers_and_average

    params = from_dict({"model": {"ngram_max": 1, "wide_ngrams": 0}, "train": {"sparse_ngrams": True}})
    model = TransformerClassifier(params.model.for_classes(["a", "b"]), 30)
    optimizers, _ = optimizers_and_average(Classification(model), Settings.training(params.train), "cpu")
    assert [type(o).__name__ for o in optimizers] == ["AdamW"]


@pytest.mark.parametrize("sparse", [False, True])
def test_ngram_lr_moves_the_table_alone_that_many_times_as_far(sparse):
    """Adam's first step moves a weight by about lr, whatever its gradient: with train.ngram_lr=3 the
    n-gram rows a batch read move three times as far, by AdamW (dense) or lazy AdamW (sparse), and
    every other weight exactly as with 1."""
    import torch.nn.functional as F
    from fixtures import tiny_config

    from scratchformer.config import TrainConfig
    from scratchformer.model.classifier import TransformerClassifier
    from scratchformer.train.objective import Classification
    from scratchformer.train.optim import Settings, optimizers_and_average

    ids = torch.tensor([[1, 5, 6, 7, 2, 0], [1, 8, 9, 2, 0, 0]])
    moved = {}
    for ngram_lr in (1.0, 3.0):
        torch.manual_seed(0)
        model = TransformerClassifier(tiny_config(ngram_max=2, ngram_buckets=64, dropout=0.0), 30)
        before = {name: p.detach().clone() for name, p in model.named_parameters()}
        settings = Settings.training(TrainConfig(lr=0.01, sparse_ngrams=sparse, ngram_lr=ngram_lr))
        optimizers, _ = optimizers_and_average(Classification(model), settings, "cpu")
        F.cross_entropy(model(ids), torch.tensor([0, 1])).backward()
        for optimizer in optimizers:
            optimizer.step()
        moved[ngram_lr] = {name: p.detach() - before[name] for name, p in model.named_parameters()}
    table = "ngrams.table.weight"
    read = moved[1.0][table].abs().sum(dim=1) > 0
    assert 0 < read.sum() < len(read) - 1
    torch.testing.assert_close(moved[3.0][table][read], 3 * moved[1.0][table][read], rtol=1e-4, atol=0)
    assert torch.equal(moved[3.0][table][~read], moved[1.0][table][~read])  # no decay: unread rows stay
    for name in moved[1.0].keys() - {table}:
        assert torch.equal(moved[3.0][name], moved[1.0][name]), name


def test_the_ngram_lr_default_keeps_the_optimizer_state_of_before():
    """At train.ngram_lr=1 the dense path's AdamW keeps the groups it had before the key existed
    (the tables in the no-decay group), so an optimizer state saved then, by a run killed before
    an upgrade, still resumes."""
    import torch.nn.functional as F
    from fixtures import tiny_config

    from scratchformer.config import TrainConfig
    from scratchformer.model.classifier import TransformerClassifier
    from scratchformer.train.objective import Classification
    from scratchformer.train.optim import Settings, adamw, optimizers_and_average, parameter_groups

    torch.manual_seed(0)
    model = TransformerClassifier(tiny_config(ngram_max=2, ngram_buckets=64, dropout=0.0), 30)
    objective = Classification(model)
    before = adamw(parameter_groups([objective], 0.01), 0.01, "cpu")  # the groups without the key
    F.cross_entropy(model(torch.tensor([[1, 5, 6, 2]])), torch.tensor([1])).backward()
    before.step()
    settings = Settings.training(TrainConfig(lr=0.01, sparse_ngrams=False))
    (optimizer,), _ = optimizers_and_average(objective, settings, "cpu")
    optimizer.load_state_dict(before.state_dict())  # refused if the groups differ
    assert [len(g["params"]) for g in optimizer.param_groups] == [len(g["params"]) for g in before.param_groups]
