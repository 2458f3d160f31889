"""Training: AdamW on cross-entropy, gradient clipping, best-on-validation checkpoint."""

from __future__ import annotations

import copy
import logging
import math
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
from tqdm import tqdm

from scratchformer.config import TrainConfig
from scratchformer.diagnostics import attention_diagnostics, group_grad_norms, grouped_parameters
from scratchformer.evaluation import accuracy, predict_logits, rounded, scores
from scratchformer.model import TransformerClassifier
from scratchformer.tokenization import TokenizedSplit, batches

log = logging.getLogger(__name__)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def pick_device(name: str) -> torch.device:
    """``auto`` = cuda if present, then Apple's mps, then cpu."""
    if name != "auto":
        return torch.device(name)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


class TrainingDivergedError(RuntimeError):
    """The loss or the gradient norm stopped being a finite number."""


def parameter_groups(modules: Iterable[nn.Module], weight_decay: float) -> list[dict]:
    """Two AdamW groups: the weight matrices of linear layers decay, nothing else does.

    Weight decay pulls a weight towards 0, which regularises the matrices that
    mix features. Biases, LayerNorm gains, embedding tables (token, n-gram and
    learned positional rows: each row is only updated when its token occurs, so
    decay would shrink rare tokens towards nothing) and the pooling query are
    offsets and scales, not mixers, and are left alone (as in nanoGPT's
    ``configure_optimizers``, with embeddings in the no-decay group). A
    parameter shared by two modules (a tied embedding) is listed once.
    """
    decay, no_decay, seen = [], [], set()
    for module in modules:
        for sub in module.modules():
            for name, p in sub.named_parameters(recurse=False):
                if id(p) in seen:
                    continue
                seen.add(id(p))
                (decay if isinstance(sub, nn.Linear) and name == "weight" else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def adamw(groups: list[dict], lr: float, device: torch.device | str) -> torch.optim.AdamW:
    """AdamW over ``parameter_groups``, with the fused kernel where PyTorch has one.

    The fused update is one pass over each tensor instead of a chain of
    elementwise ops, which matters for large embedding tables: every row is
    updated every step (benchmarks/encoder_throughput.py prints the ratio).
    """
    return torch.optim.AdamW(groups, lr=lr, fused=torch.device(device).type in ("cpu", "cuda"))


def lr_factor(step: int, total: int, schedule: str, warmup_ratio: float) -> float:
    """Multiplier of the base lr at ``step``: linear warm-up, then constant or cosine to 0."""
    warmup = int(total * warmup_ratio)
    if step < warmup:
        return (step + 1) / warmup
    if schedule == "constant":
        return 1.0
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def grad_norm_summary(norms: list[float], clip: float) -> dict[str, float]:
    """Median, 99th percentile and max of the pre-clip gradient norms; share of steps clipped."""
    t = torch.tensor(norms, dtype=torch.float64)
    return {
        "grad_norm_median": rounded(t.median().item()),
        "grad_norm_p99": rounded(t.quantile(0.99).item()),
        "grad_norm_max": rounded(t.max().item()),
        "clipped_fraction": accuracy((t > clip).sum().item(), len(norms)) if clip > 0 else 0.0,
    }


def drop_tokens(input_ids: Tensor, p: float, pad_id: int) -> Tensor:
    """Turn each real token but the first ([CLS]) into PAD with probability ``p``.

    A PAD is invisible to attention and pooling, so the model must classify the
    review from the remaining words ("word dropout"); it cannot lean on any
    single character or n-gram it has memorised.
    """
    drop = torch.rand(input_ids.shape, device=input_ids.device) < p  # (B, T)
    drop[:, 0] = False
    return input_ids.masked_fill(drop, pad_id)


@dataclass
class History:
    """Everything a training run measured, for metrics, curves and plots."""

    steps: list[dict] = field(default_factory=list)  # step, loss, grad_norm, lr
    epochs: list[dict] = field(default_factory=list)  # epoch, train/val loss and accuracy
    best_epoch: int = 0
    best_state: dict = field(default_factory=dict)  # the evaluated weights at best_epoch
    initial: dict = field(default_factory=dict)  # the epoch-0 record: the untrained model
    seconds: float = 0.0

    @property
    def best(self) -> dict | None:
        """The record of the selected epoch (None before the first epoch ends)."""
        return self.epochs[self.best_epoch - 1] if self.best_epoch else None

    def as_state(self, weights: bool = True) -> dict:
        """Plain data for the resumable state (``History(**state)`` rebuilds it); without the best weights."""
        state = dict(vars(self))
        if not weights:
            state["best_state"] = {}
        return state


def improves(record: dict, best: dict | None, select: str) -> bool:
    """Whether epoch ``record`` beats ``best`` under ``select``; ties keep the earlier epoch."""
    if best is None:
        return True
    if select == "val_accuracy":
        return record["val_accuracy"] > best["val_accuracy"]
    return record["val_loss"] < best["val_loss"]


def fit(
    model: TransformerClassifier,
    train: TokenizedSplit,
    validation: TokenizedSplit,
    config: TrainConfig,
    seed: int,
    device: torch.device,
    on_step: Callable[[dict], None] = lambda record: None,
    on_epoch: Callable[[dict, TransformerClassifier, bool], None] = lambda record, model, best: None,
    member: int = 0,
    resume: dict | None = None,
    on_state: Callable[[dict], None] = lambda state: None,
) -> History:
    """Train ``model`` in place; return the history, with the weights of the selected epoch.

    ``on_step`` receives each step's record; ``on_epoch`` each epoch's record,
    the model, and whether this epoch is the best so far under ``config.select``
    (lowest validation loss, or highest validation accuracy; ties keep the
    earlier epoch). Epoch 0 is the untrained model and is never selected.

    Each step's ``loss`` is the objective (label smoothing included); the
    epoch's ``train_loss`` is plain cross-entropy, like ``val_loss``, so the two
    compare. A loss or gradient norm that is not finite raises
    :class:`TrainingDivergedError` at once, before the optimizer applies it.

    With ``config.ema_decay`` > 0 an exponential moving average of the weights
    is kept alongside; it is what gets validated, selected and handed to
    ``on_epoch`` (averaging the last few hundred steps' weights smooths out the
    noise of the final minibatches, much like an ensemble of nearby checkpoints).

    At the end of every epoch ``on_state`` receives everything needed to carry
    on from there (weights, optimizer, schedule, EMA, random generators, the
    history so far); handing such a state back as ``resume`` continues the run
    exactly as if it had never stopped, bit for bit.
    """
    model.to(device).train()
    ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(config.ema_decay)) if config.ema_decay else None
    evaluated = ema.module if ema else model
    optimizer = adamw(parameter_groups([model], config.weight_decay), config.lr, device)
    steps_per_epoch = math.ceil(len(train) / config.batch_size)
    total = steps_per_epoch * config.epochs
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: lr_factor(s, total, config.schedule, config.warmup_ratio)
    )
    # A generator of its own keeps the batch order independent of dropout's draws.
    order = torch.Generator().manual_seed(seed)
    history = History()
    start = time.perf_counter()
    parts = {"model": model, "optimizer": optimizer, "scheduler": scheduler, "ema": ema, "order": order}
    if resume is None:
        step, done = 0, 0
        history.initial = _epoch_record(evaluated, 0, math.nan, math.nan, validation, config, device)
        on_epoch(history.initial, evaluated, False)
    else:
        history, step, done = _restore(resume, parts)
        log.info("member %d: resuming after epoch %d of %d", member, done, config.epochs)

    max_norm = config.grad_clip if config.grad_clip > 0 else math.inf
    groups = grouped_parameters(model)
    group_keys = [f"layer_grad_norm/{g}" for g in groups]
    for epoch in range(done + 1, config.epochs + 1):
        total_loss, correct, seen = 0.0, 0, 0
        bar = tqdm(
            batches(train, config.batch_size, model.pad_id, order, config.bucket_by_length),
            total=steps_per_epoch,
            desc=f"epoch {epoch}/{config.epochs}",
            leave=False,
            disable=None,
        )
        for ids, labels in bar:
            ids, labels = ids.to(device), labels.to(device)
            if config.token_dropout:
                ids = drop_tokens(ids, config.token_dropout, model.pad_id)
            logits = model(ids)
            loss = F.cross_entropy(logits, labels, label_smoothing=config.label_smoothing)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            # Each layer's gradient norm before clipping; the global norm is the norm of those,
            # and clipping uses it rather than measuring every gradient a second time.
            per_group = group_grad_norms(groups)  # (G,)
            total = torch.linalg.vector_norm(per_group)
            torch.nn.utils.clip_grads_with_norm_(model.parameters(), max_norm, total)
            with torch.no_grad():  # the smoothing-free loss, comparable with val_loss
                plain = F.cross_entropy(logits, labels) if config.label_smoothing else loss.detach()
            hits = (logits.argmax(1) == labels).sum()
            # One host sync per step for everything it logs.
            loss_value, plain_value, grad_norm, n_right, *norms = torch.stack(
                [loss.detach(), plain, total, hits.to(total.dtype), *per_group]
            ).tolist()
            lr = scheduler.get_last_lr()[0]
            if not (math.isfinite(loss_value) and math.isfinite(grad_norm)):
                raise TrainingDivergedError(
                    f"training diverged in member {member}, epoch {epoch}, step {step} at lr {lr:.3g}: "
                    f"loss {loss_value}, gradient norm {grad_norm}. Lower train.lr, keep train.grad_clip > 0, "
                    "or warm the lr up (train.warmup_ratio); no checkpoint was written"
                )
            record = {"step": step, "loss": loss_value, "grad_norm": grad_norm, "lr": lr}
            record.update(zip(group_keys, norms, strict=True))
            optimizer.step()
            scheduler.step()
            if ema:
                ema.update_parameters(model)
            history.steps.append(record)
            on_step(record)
            step += 1
            total_loss += plain_value * len(labels)
            correct += int(n_right)
            seen += len(labels)
            bar.set_postfix(loss=f"{loss_value:.3f}")
        record = _epoch_record(evaluated, epoch, total_loss / seen, accuracy(correct, seen), validation, config, device)
        is_best = improves(record, history.best, config.select)
        history.epochs.append(record)
        if is_best:
            history.best_epoch = epoch
            history.best_state = copy.deepcopy(evaluated.state_dict())
        log.info("epoch %d: %s", epoch, record)
        on_epoch(record, evaluated, is_best)
        on_state(_snapshot_state(epoch, step, parts, history))
    history.seconds = time.perf_counter() - start
    return history


def _snapshot_state(epoch: int, step: int, parts: dict, history: History) -> dict:
    """Everything :func:`fit` needs to carry on after ``epoch``, as tensors and plain data."""
    rng = {"torch": torch.get_rng_state(), "order": parts["order"].get_state(), "python": random.getstate()}
    if torch.cuda.is_available():
        rng["cuda"] = torch.cuda.get_rng_state_all()
    return {
        "epoch": epoch,
        "step": step,
        "model": parts["model"].state_dict(),
        "optimizer": parts["optimizer"].state_dict(),
        "scheduler": parts["scheduler"].state_dict(),
        "ema": parts["ema"].state_dict() if parts["ema"] is not None else None,
        "rng": rng,
        "history": history.as_state(),
    }


def _restore(state: dict, parts: dict) -> tuple[History, int, int]:
    """Load a :func:`_snapshot_state` back into the run's parts; return (history, step, epochs done)."""
    parts["model"].load_state_dict(state["model"])
    parts["optimizer"].load_state_dict(state["optimizer"])
    parts["scheduler"].load_state_dict(state["scheduler"])
    if parts["ema"] is not None:
        parts["ema"].load_state_dict(state["ema"])
    rng = state["rng"]
    torch.set_rng_state(rng["torch"])
    parts["order"].set_state(rng["order"])
    random.setstate(rng["python"])
    if "cuda" in rng and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(rng["cuda"])
    return History(**state["history"]), state["step"], state["epoch"]


def _epoch_record(model, epoch, train_loss, train_acc, validation, config, device) -> dict:
    """Scores on validation, and the attention of every head on its first 64 texts (a fixed sample)."""
    val = scores(predict_logits(model, validation, config.batch_size * 4, device), validation.labels)
    sample, _ = next(iter(batches(validation, 64, model.pad_id)))
    return {
        "epoch": epoch,
        "train_loss": rounded(train_loss),
        "train_accuracy": train_acc,
        "val_loss": val["loss"],
        "val_accuracy": val["accuracy"],
        **{key: rounded(value) for key, value in attention_diagnostics(model, sample.to(device)).items()},
    }
