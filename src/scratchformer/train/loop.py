"""The training loop that pretraining and classification share.

What is trained is an *objective*: a module whose ``forward(inputs, labels)``
returns a :class:`StepResult` (the loss summed over its rows, and what to log),
with a ``prepare`` that draws the step's random corruption (masking, token
dropout) on the whole global batch. The loop owns everything else, once:

- the optimizer (AdamW, decay on linear weights only), the lr schedule, an
  optional moving average of the weights (EMA);
- data parallelism: each of ``world.size`` processes takes its share of every
  global batch, and the loss is divided by the *global* count, so DDP's mean of
  the gradients equals the one-process gradient (see :mod:`scratchformer.train.distributed`);
- mixed precision: the forward pass under autocast (``bf16``, or ``fp16`` with
  loss scaling on CUDA); parameters, gradients and the optimizer stay fp32;
- clipping with the norm of the per-layer gradient norms, measured once;
- host-sync-free logging: each step's values stay on the device and are read
  together every ``log_every`` steps (one sync), when they are also checked for
  divergence;
- resumable state: everything needed to carry on after an epoch, bit for bit.
"""

from __future__ import annotations

import logging
import math
import random
import time
from typing import NamedTuple

import torch
from torch import Tensor, nn
from tqdm import tqdm

from scratchformer.config import UserError
from scratchformer.data.tokenized_split import TokenizedSplit, batches
from scratchformer.train.diagnostics import group_grad_norms
from scratchformer.train.distributed import ALONE, World
from scratchformer.train.lazy import LazyAdamW
from scratchformer.train.optim import (
    Settings,
    autocast,
    lr_factor,
    optimizers_and_average,
)
from scratchformer.train.recording import Recorder

log = logging.getLogger(__name__)

NOTHING = Recorder()  # records nothing


class TrainingDivergedError(UserError, RuntimeError):
    """The loss or the gradient norm stopped being a finite number."""


class StepResult(NamedTuple):
    """What an objective's forward returns for this process's share of a batch."""

    loss: Tensor  # () the objective summed over the rows (what backward minimises, after normalising)
    plain: Tensor  # () the smoothing-free loss summed over the rows (the epoch's train loss)
    hits: Tensor  # () rows predicted right (the epoch's train accuracy)


class Progress:
    """A progress line every ``every`` seconds where no progress bar shows (CI, ``dvc queue``, a pipe).

    tqdm draws the bar on a terminal and turns itself off elsewhere; there, an epoch of
    several minutes would otherwise pass without a word.
    """

    every = 30.0  # seconds

    def __init__(self, what: str, total: int, quiet: bool) -> None:
        self.what, self.total, self.quiet = what, total, quiet
        self.start = self.last = time.monotonic()

    def tick(self, step: int, loss: float) -> None:
        now = time.monotonic()
        if self.quiet or now - self.last < self.every:
            return
        self.last = now
        left = (now - self.start) / step * (self.total - step)
        log.info("%s: step %d/%d, loss %.3f, ~%ds left in this epoch", self.what, step, self.total, loss, left)


class Loop:
    """One training run's moving parts, and the epochs that drive them.

    ``objective`` (a module with ``model``, ``prepare``, ``count``,
    ``grad_groups`` and a forward returning :class:`StepResult`) is trained in
    place. ``seed`` seeds the batch order; ``seed + 1`` the corruption drawn by
    ``prepare``. Each has a generator of its own, so neither depends on how
    many random numbers dropout drew.
    """

    def __init__(
        self,
        objective: nn.Module,
        settings: Settings,
        seed: int,
        steps_per_epoch: int,
        device: torch.device,
        world: World = ALONE,
        label: str = "training",
        where: str = "",
        hint: str = "Lower train.lr, keep train.grad_clip > 0, or warm the lr up (train.warmup_ratio)",
    ) -> None:
        device = torch.device(device)
        if world.size > 1:  # the same weights everywhere (DDP broadcasts them), but each rank its own dropout
            torch.manual_seed(seed + 1_000_003 * world.rank)
        self.objective = objective.to(device).train()
        self.model = objective.model
        self.settings, self.device, self.world = settings, device, world
        self.label, self.where, self.hint = label, where, hint  # who diverged, where, and what to change then
        autocast(device, settings.precision)  # fail now on an impossible precision, not at the first step
        self.ddp = world.wrap(objective, find_unused_parameters=objective.unused_parameters)
        self.optimizers, self.ema = optimizers_and_average(objective, settings, device)
        self.steps_per_epoch = steps_per_epoch
        total = steps_per_epoch * settings.epochs
        self.schedulers = [
            torch.optim.lr_scheduler.LambdaLR(
                o, lambda s: lr_factor(s, total, settings.schedule, settings.warmup_ratio)
            )
            for o in self.optimizers
        ]
        self.scaler = torch.amp.GradScaler("cuda") if settings.precision == "fp16" else None
        self.order = torch.Generator().manual_seed(seed)
        self.draws = torch.Generator().manual_seed(seed + 1)
        self.groups = objective.grad_groups()
        self.group_keys = [f"layer_grad_norm/{g}" for g in self.groups]
        self.epoch, self.step = 0, 0

    @property
    def evaluated(self) -> nn.Module:
        """The weights that are validated and saved: the moving average when on, else the model."""
        return self.ema.module if self.ema is not None else self.model

    def run_epoch(self, data: TokenizedSplit, recorder: Recorder = NOTHING) -> dict:
        """Train one epoch over ``data``; return its ``train_loss`` (smoothing-free) and ``train_accuracy``.

        ``recorder.step`` receives each step's record (step, loss, grad_norm, lr,
        layer_grad_norm/<group>) after that step's update, in batches of
        ``log_every`` (the values are read from the device then, once).
        """
        self.epoch += 1
        s = self.settings
        pending: list[tuple[Tensor, dict]] = []  # values still on the device, with their host-side facts
        loss_sum = hits = 0.0
        seen = 0
        bar = tqdm(
            batches(data, s.batch_size, self.model.pad_id, self.order, s.bucket_by_length),
            total=self.steps_per_epoch,
            desc=f"epoch {self.epoch}/{s.epochs}",
            leave=False,
            disable=None,
        )
        progress = Progress(
            f"epoch {self.epoch}/{s.epochs}", self.steps_per_epoch, quiet=not bar.disable or not self.world.main
        )
        for i, (ids, labels) in enumerate(bar):
            pending.append(self.gradients(ids, labels))
            records = []
            if len(pending) == s.log_every or i == self.steps_per_epoch - 1:
                records = self._read(pending)  # the one host sync of the interval; stops a diverged run
                pending = []
            self._update()
            for record, plain, right, count in records:
                loss_sum += plain
                hits += right
                seen += count
                recorder.step(record)
            if records:
                bar.set_postfix(loss=f"{records[-1][0]['loss']:.3f}")
                progress.tick(i + 1, records[-1][0]["loss"])
        for optimizer in self.optimizers:
            if isinstance(optimizer, LazyAdamW):
                optimizer.settle()  # every row as if updated at every step, before validation and the saved state
        return {"train_loss": loss_sum / seen, "train_accuracy": (int(hits), seen)}

    def gradients(self, ids: Tensor, labels: Tensor) -> tuple[Tensor, dict]:
        """Forward, loss, backward and clipping for one global batch; the optimizer has not stepped yet.

        Returns the step's logged values, still on the device (loss, plain
        loss, hits, gradient norm, each group's gradient norm), and what is
        already known on the host (step, lr, rows).
        """
        ids, labels = self.objective.prepare(ids, labels, self.draws)  # on the whole global batch
        n = self.objective.count(labels)  # rows the loss is averaged over, all ranks together
        ids, labels = self.world.shard(ids).to(self.device), self.world.shard(labels).to(self.device)
        with autocast(self.device, self.settings.precision):
            out = self.ddp(ids, labels)
        loss = out.loss / n  # this rank's share of the global mean; the shares sum to it
        for optimizer in self.optimizers:
            optimizer.zero_grad(set_to_none=True)
        objective = loss * self.world.size if self.world.size > 1 else loss  # DDP averages over ranks: × size
        if self.scaler is not None:
            self.scaler.scale(objective).backward()
            for optimizer in self.optimizers:
                self.scaler.unscale_(optimizer)
        else:
            objective.backward()
        # Each layer's gradient norm before clipping; the global norm is the norm of those,
        # and clipping uses it rather than measuring every gradient a second time.
        per_group = group_grad_norms(self.groups)  # (G,)
        total = torch.linalg.vector_norm(per_group)
        max_norm = self.settings.grad_clip if self.settings.grad_clip > 0 else math.inf
        torch.nn.utils.clip_grads_with_norm_(self.objective.parameters(), max_norm, total)
        values = torch.stack([loss.detach(), out.plain.detach(), out.hits.to(total.dtype), total, *per_group])
        return values, {"step": self.step, "lr": self.schedulers[0].get_last_lr()[0], "count": n}

    def _update(self) -> None:
        """Apply the clipped gradients: each optimizer (through the loss scaler in fp16) and its schedule, the EMA."""
        for optimizer, scheduler in zip(self.optimizers, self.schedulers, strict=True):
            if self.scaler is not None:
                self.scaler.step(optimizer)  # skipped when fp16 overflowed; the scale then shrinks
            else:
                optimizer.step()
            scheduler.step()
        if self.scaler is not None:
            self.scaler.update()
        if self.ema is not None:
            self.ema.update_parameters(self.model)
        self.step += 1

    def _read(self, pending: list[tuple[Tensor, dict]]) -> list[tuple[dict, float, float, int]]:
        """Bring the pending steps' values to the host (summed over ranks); stop on divergence.

        Returns ``(record, plain loss sum, hits, rows)`` per step. The loss, the
        plain loss and the hits are summed over ranks; the gradient norms are
        the same on every rank (DDP averaged the gradients) and are not.
        """
        rows = torch.stack([values for values, _ in pending])  # (S, 4 + G)
        rows[:, :3] = self.world.sum(rows[:, :3].contiguous())  # collectives need contiguous memory
        out = []
        for (loss, plain, right, grad_norm, *norms), (_, facts) in zip(rows.tolist(), pending, strict=True):
            finite_grad = math.isfinite(grad_norm) or self.scaler is not None  # fp16 overflow: the scaler skips
            if not (math.isfinite(loss) and finite_grad):
                raise TrainingDivergedError(
                    f"{self.label} diverged in {self.where}epoch {self.epoch}, step {facts['step']} "
                    f"at lr {facts['lr']:.3g}: loss {loss}, gradient norm {grad_norm}. "
                    f"{self.hint}; no checkpoint was written"
                )
            record = {"step": facts["step"], "loss": loss, "grad_norm": grad_norm, "lr": facts["lr"]}
            record.update(zip(self.group_keys, norms, strict=True))
            out.append((record, plain, right, facts["count"]))
        return out

    def state(self) -> dict:
        """Everything needed to carry on after the current epoch, as tensors and plain data.

        Collective: every rank contributes its random generators (dropout draws
        differ per rank), so all ranks must call it.
        """
        rng = {"torch": torch.get_rng_state(), "python": random.getstate()}
        if torch.cuda.is_available():
            rng["cuda"] = torch.cuda.get_rng_state_all()
        return {
            "epoch": self.epoch,
            "step": self.step,
            "objective": self.objective.state_dict(),  # the model, and an objective's own layers (MLM head)
            "optimizers": [o.state_dict() for o in self.optimizers],
            "schedulers": [s.state_dict() for s in self.schedulers],
            "ema": self.ema.state_dict() if self.ema is not None else None,
            "scaler": self.scaler.state_dict() if self.scaler is not None else None,
            "order": self.order.get_state(),
            "draws": self.draws.get_state(),
            "rng": self.world.gather(rng),  # one per rank
        }

    def restore(self, state: dict) -> None:
        """Load a :meth:`state` back: the run continues as if it had never stopped."""
        self.objective.load_state_dict(state["objective"])
        for optimizer, saved in zip(self.optimizers, state["optimizers"], strict=True):
            optimizer.load_state_dict(saved)
        for scheduler, saved in zip(self.schedulers, state["schedulers"], strict=True):
            scheduler.load_state_dict(saved)
        if self.ema is not None:
            self.ema.load_state_dict(state["ema"])
        if self.scaler is not None:
            self.scaler.load_state_dict(state["scaler"])
        self.order.set_state(state["order"])
        self.draws.set_state(state["draws"])
        rng = state["rng"][self.world.rank]
        torch.set_rng_state(rng["torch"])
        random.setstate(rng["python"])
        if "cuda" in rng and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(rng["cuda"])
        self.epoch, self.step = state["epoch"], state["step"]
