"""Lazy AdamW on a sparse table: the decay and the moving average it owes are paid, exactly."""

from __future__ import annotations

import io

import pytest
import torch
from torch import nn
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

from scratchformer.train.lazy import LazyAdamW, dense_only

ROWS, DIM, LRS = 6, 3, [0.05, 0.04, 0.03, 0.02, 0.01, 0.005]  # a decaying lr, as a schedule gives


def tables(seed: int = 0) -> tuple[nn.Embedding, nn.Embedding]:
    """The same table twice: one with sparse gradients, one with dense."""
    torch.manual_seed(seed)
    sparse = nn.Embedding(ROWS, DIM, sparse=True)
    dense = nn.Embedding(ROWS, DIM)
    dense.load_state_dict(sparse.state_dict())
    return sparse, dense


def train(table: nn.Embedding, optimizer: torch.optim.Optimizer, steps: list[list[int]], ema=None, lrs=LRS) -> list:
    """One step per entry of ``steps`` (the rows it reads) at the lrs of ``lrs``; each step's weights."""
    seen = []
    for lr, rows in zip(lrs, steps, strict=True):
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.zero_grad()
        table(torch.tensor(rows)).pow(2).sum().backward()
        optimizer.step()
        if ema is not None:
            ema.update_parameters(table)
        seen.append(table.weight.detach().clone())
    return seen


def test_a_table_whose_every_row_is_used_every_step_moves_as_under_adamw_with_its_average():
    sparse, dense = tables()
    lazy_average = AveragedModel(sparse, multi_avg_fn=dense_only(get_ema_multi_avg_fn(0.9), [sparse.weight]))
    lazy = LazyAdamW([sparse.weight], 0.05, weight_decay=0.3, averages=[lazy_average.module.weight], ema_decay=0.9)
    dense_average = AveragedModel(dense, multi_avg_fn=get_ema_multi_avg_fn(0.9))
    adamw = torch.optim.AdamW([dense.weight], 0.05, weight_decay=0.3)
    every = [list(range(ROWS))] * len(LRS)
    train(sparse, lazy, every, lazy_average)
    train(dense, adamw, every, dense_average)
    lazy.settle()
    torch.testing.assert_close(sparse.weight, dense.weight, rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(lazy_average.module.weight, dense_average.module.weight, rtol=1e-6, atol=1e-7)


def test_a_row_no_step_uses_pays_every_steps_decay_when_settled():
    sparse, dense = tables()
    lazy = LazyAdamW([sparse.weight], 0.05, weight_decay=0.3)
    adamw = torch.optim.AdamW([dense.weight], 0.05, weight_decay=0.3)
    steps = [[0, 1]] * len(LRS)  # rows 2..5 never read: under AdamW they only decay (zero moments, zero step)
    train(sparse, lazy, steps)
    train(dense, adamw, steps)
    assert not torch.allclose(sparse.weight[2:], dense.weight[2:])  # owed, not yet paid
    lazy.settle()
    torch.testing.assert_close(sparse.weight[2:], dense.weight[2:], rtol=1e-6, atol=1e-7)
    expected = tables()[0].weight[2:] * torch.tensor([1 - lr * 0.3 for lr in LRS]).prod()
    torch.testing.assert_close(sparse.weight[2:], expected, rtol=1e-6, atol=1e-7)


def test_the_average_of_a_row_used_now_and_then_is_the_average_of_its_path():
    # Without decay a lazy row holds still between its uses, so its average over every step can
    # be written out from the weights after each step.
    steps = [[0, 1], [0], [2], [3], [0], [3]]  # row 0 used at steps 1, 2 and 5; row 1 only at step 1
    sparse, _ = tables()
    path = train(sparse, LazyAdamW([sparse.weight], 0.05), steps)
    expected = path[0].clone()
    for weights in path[1:]:
        expected = 0.8 * expected + 0.2 * weights
    sparse, _ = tables()
    average = AveragedModel(sparse, multi_avg_fn=dense_only(get_ema_multi_avg_fn(0.8), [sparse.weight]))
    lazy = LazyAdamW([sparse.weight], 0.05, averages=[average.module.weight], ema_decay=0.8)
    train(sparse, lazy, steps, average)
    lazy.settle()
    torch.testing.assert_close(average.module.weight, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("decay", [0.0, 0.3])
def test_a_run_that_saves_and_reloads_its_state_goes_on_bit_identical(decay):
    steps = [[0, 1], [2], [0, 5], [3], [1, 3], [4]]
    whole, _ = tables()
    train(whole, LazyAdamW([whole.weight], 0.05, weight_decay=decay), steps)
    first, _ = tables()
    optimizer = LazyAdamW([first.weight], 0.05, weight_decay=decay)
    train(first, optimizer, steps[:3], lrs=LRS[:3])
    buffer = io.BytesIO()
    torch.save(optimizer.state_dict(), buffer)
    buffer.seek(0)
    again = LazyAdamW([first.weight], 0.05, weight_decay=decay)
    again.load_state_dict(torch.load(buffer, weights_only=True))
    assert again.state[first.weight]["row_log_decay"].dtype == torch.float64
    train(first, again, steps[3:], lrs=LRS[3:])
    assert torch.equal(first.weight, whole.weight)
