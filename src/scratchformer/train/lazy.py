"""AdamW and the moving average for a table whose gradient is sparse: work per row used, not per row.

A step reads a few thousand of the hashed n-gram table's 2^18 rows. Dense AdamW, its
weight decay and the EMA touch every row every step, so their cost grows with the table,
not with the batch (``benchmarks/ngram_table.py``). Here each of the three acts on the rows
a step's gradient holds, and the rest is owed, not dropped:

- **Adam's moments** decay by ``β^k`` over the ``k`` steps a row missed (its gradient was 0
  there), so they are what dense AdamW's would be. Its *moves* over those steps are not
  made: with momentum (``β1 > 0``) dense AdamW keeps moving a row for some ten steps after
  its n-gram occurred, by about ten times the one step a lazy update makes (PyTorch's
  ``SparseAdam`` is lazy in this way, and rare n-grams then learn about ten times more
  slowly). The table therefore trains with ``β1 = 0`` (RMSprop's update with Adam's bias
  correction), where a step without a gradient moves nothing, and lazy AdamW is exactly
  dense AdamW: one use of a rare row moves it about as far as momentum carried it in all.
- **Decoupled weight decay** is exact. A step multiplies every row by ``1 - lr·wd``; the
  product of those factors since a row's last step is a difference of two running sums of
  ``log(1 - lr·wd)``, so a row pays its missed decay before the forward pass reads it
  (:func:`pay_before_reading`, a hook on the table), and every row at
  :meth:`LazyAdamW.settle`.
- **The moving average** of a row whose value held still for ``k`` steps is
  ``d^k · ema + (1 - d^k) · value``: the missed EMA steps are paid the same way. This is
  the average of the lazy trajectory exactly when the table takes no decay; with decay, an
  unused row's value is taken as it was at its last use for the steps it missed (a drift of
  ``lr·wd`` per step, 0.0012 in the ``transformer`` recipe).

:meth:`LazyAdamW.settle` pays every row's debt, so the table and its average are then what
the lazy updates make them. The loop settles at the end of every epoch, before validation
and before its resumable state is taken: a resumed run settles at the same steps as one that
never stopped, and ends bit-identical to it.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor, nn

_EXACT = ("log_decay", "row_log_decay", "row_step", "row_ema_step")  # state kept in its own dtype, not the table's


class LazyAdamW(torch.optim.Optimizer):
    """AdamW on the rows of sparse-gradient tables, with the decay and EMA they missed; exact at ``β1 = 0``.

    ``averages``, if given, are the moving-average copies of ``params`` (one each, same shape)
    that this optimizer keeps at ``ema_decay``; the dense EMA must leave them alone
    (:func:`dense_only`). Like ``AveragedModel``, the first step copies the weights into them.
    """

    def __init__(
        self,
        params: list[nn.Parameter],
        lr: float,
        weight_decay: float = 0.0,
        betas: tuple[float, float] = (0.0, 0.999),
        eps: float = 1e-8,
        averages: list[Tensor] | None = None,
        ema_decay: float = 0.0,
    ) -> None:
        super().__init__(params, {"lr": lr, "weight_decay": weight_decay, "betas": betas, "eps": eps})
        tables = [p for group in self.param_groups for p in group["params"]]
        if averages is not None and [a.shape for a in averages] != [p.shape for p in tables]:
            raise ValueError("LazyAdamW: averages must be one tensor per table, of the table's shape")
        self.averages = list(averages) if averages is not None else None
        self.ema_decay = ema_decay

    def _state(self, p: Tensor) -> dict:
        state = self.state[p]
        if not state:
            rows = p.shape[0]
            state["step"] = torch.zeros((), dtype=torch.int64)
            state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            # Σ log(1 - lr·wd) over the steps so far, and its value when each row last paid its decay
            state["log_decay"] = torch.zeros((), dtype=torch.float64)
            state["row_log_decay"] = torch.zeros(rows, dtype=torch.float64)
            state["row_step"] = torch.zeros(rows, dtype=torch.int64)  # the step each row's moments are at
            state["row_ema_step"] = torch.zeros(rows, dtype=torch.int64)  # the step each row's average is at
        return state

    @torch.no_grad()
    def step(self, closure=None):
        """One update of the rows in each table's sparse gradient (``closure`` is not supported)."""
        index = 0
        for group in self.param_groups:
            lr, wd, eps, (beta1, beta2) = group["lr"], group["weight_decay"], group["eps"], group["betas"]
            for p in group["params"]:
                average = self.averages[index] if self.averages is not None else None
                index += 1
                if p.grad is not None and not p.grad.is_sparse:
                    raise RuntimeError("LazyAdamW updates tables with sparse gradients (nn.Embedding(sparse=True))")
                state = self._state(p)
                state["step"] += 1
                step = int(state["step"])
                if p.grad is None:  # no row used: every row owes this step
                    rows, values = torch.zeros(0, dtype=torch.int64), p.new_zeros(0, *p.shape[1:])
                else:
                    grad = p.grad.coalesce()
                    rows, values = grad.indices()[0], grad.values()
                log_decay = state["log_decay"] + math.log1p(-lr * wd)
                if average is not None and step > 1:
                    self._catch_up_average(average, p, rows, step - 1, state)
                # the decay owed since each row's last step, and this step's: one factor
                owed = torch.exp(log_decay - state["row_log_decay"].index_select(0, rows)).to(p.dtype).unsqueeze(1)
                # the moments' decay over the steps a row missed (gradient 0 there), then this step's
                missed = (step - 1 - state["row_step"].index_select(0, rows)).to(torch.float64).unsqueeze(1)
                state["row_step"].index_fill_(0, rows, step)
                exp_avg = state["exp_avg"].index_select(0, rows).mul_(torch.pow(beta1, missed + 1).to(p.dtype))
                exp_avg.add_(values, alpha=1 - beta1)
                exp_avg_sq = state["exp_avg_sq"].index_select(0, rows).mul_(torch.pow(beta2, missed + 1).to(p.dtype))
                exp_avg_sq.addcmul_(values, values, value=1 - beta2)
                state["exp_avg"].index_copy_(0, rows, exp_avg)
                state["exp_avg_sq"].index_copy_(0, rows, exp_avg_sq)
                denominator = exp_avg_sq.div_(1 - beta2**step).sqrt_().add_(eps)
                moved = p.index_select(0, rows).mul_(owed).addcdiv_(exp_avg, denominator, value=-lr / (1 - beta1**step))
                p.index_copy_(0, rows, moved)
                state["row_log_decay"].index_fill_(0, rows, float(log_decay))
                state["log_decay"] = log_decay
                if average is not None:
                    if step == 1:  # the first average is a copy of the weights, as AveragedModel's
                        average.copy_(p)
                        state["row_ema_step"].fill_(1)
                    else:
                        average.index_copy_(0, rows, average.index_select(0, rows).lerp_(moved, 1 - self.ema_decay))
                        state["row_ema_step"].index_fill_(0, rows, step)
        return None

    def load_state_dict(self, state_dict: dict) -> None:
        """As ``Optimizer``'s, but the running sums stay float64 and the row steps int64.

        The base class casts every state tensor but ``step`` to the table's dtype, and a
        float32 sum of logs would make a resumed run drift from one that never stopped.
        """
        exact = {i: {k: state[k].clone() for k in _EXACT if k in state} for i, state in state_dict["state"].items()}
        super().load_state_dict(state_dict)
        params = [p for group in self.param_groups for p in group["params"]]
        for i, kept in exact.items():
            self.state[params[i]].update(kept)

    def _catch_up_average(self, average: Tensor, p: Tensor, rows: Tensor, step: int, state: dict) -> None:
        """Bring the averages of ``rows`` to ``step``: their weights held still since their last update."""
        missed = (step - state["row_ema_step"].index_select(0, rows)).to(torch.float64)
        kept = torch.pow(self.ema_decay, missed).to(p.dtype).unsqueeze(1)  # d^k
        average.index_copy_(0, rows, average.index_select(0, rows).lerp_(p.index_select(0, rows), 1 - kept))
        state["row_ema_step"].index_fill_(0, rows, step)

    @torch.compiler.disable  # the optimizer's bookkeeping, run as is when the model is compiled
    @torch.no_grad()
    def pay(self, p: Tensor, rows: Tensor) -> None:
        """Apply the decay ``rows`` of table ``p`` owe, so that a forward pass reads them as dense AdamW left them."""
        state = self.state.get(p)
        if not state:
            return
        rows = rows.unique()
        owed = torch.exp(state["log_decay"] - state["row_log_decay"].index_select(0, rows))
        p.index_copy_(0, rows, p.index_select(0, rows).mul_(owed.to(p.dtype).unsqueeze(1)))
        state["row_log_decay"].index_fill_(0, rows, float(state["log_decay"]))

    @torch.no_grad()
    def settle(self) -> None:
        """Pay every row's owed decay and average: the tables as if every row had been updated."""
        params = [p for group in self.param_groups for p in group["params"]]
        for index, p in enumerate(params):
            state = self.state.get(p)
            if not state:
                continue
            p.mul_(torch.exp(state["log_decay"] - state["row_log_decay"]).to(p.dtype).unsqueeze(1))
            state["row_log_decay"].fill_(float(state["log_decay"]))
            if self.averages is not None:
                every = torch.arange(p.shape[0])
                self._catch_up_average(self.averages[index], p, every, int(state["step"]), state)


def pay_before_reading(table: nn.Embedding, optimizer: LazyAdamW) -> torch.utils.hooks.RemovableHandle:
    """In training, make ``table`` pay the decay its rows owe just before each forward pass reads them."""

    def pay(module: nn.Embedding, inputs: tuple[Tensor, ...]) -> None:
        if module.training:
            optimizer.pay(module.weight, inputs[0].flatten())

    return table.register_forward_pre_hook(pay)


def dense_only(multi_avg_fn: Callable, tables: list[Tensor]) -> Callable:
    """``AveragedModel``'s update, skipping ``tables`` after its first copy (:class:`LazyAdamW` averages them)."""
    pointers = {t.data_ptr() for t in tables}

    def update(averaged: list[Tensor], current: list[Tensor], n_averaged: Tensor) -> None:
        pairs = [(a, c) for a, c in zip(averaged, current, strict=True) if c.data_ptr() not in pointers]
        if pairs:
            multi_avg_fn([a for a, _ in pairs], [c for _, c in pairs], n_averaged)

    return update
