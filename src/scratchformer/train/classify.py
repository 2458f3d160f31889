"""Training the classifier: cross-entropy on the shared loop, validation each epoch, the best epoch kept."""

from __future__ import annotations

import copy
import functools
import logging
import math
import random
import time
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor, nn

from scratchformer.analysis.evaluation import accuracy, predict_logits, rounded, scores
from scratchformer.config import TrainConfig
from scratchformer.data.tokenized_split import TokenizedSplit, batches
from scratchformer.model.classifier import Ensemble, TransformerClassifier
from scratchformer.train.diagnostics import attention_diagnostics
from scratchformer.train.distributed import ALONE, World
from scratchformer.train.loop import NOTHING, Loop
from scratchformer.train.objective import Base, Classification
from scratchformer.train.optim import Settings
from scratchformer.train.recording import Recorder

log = logging.getLogger(__name__)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def grad_norm_summary(norms: list[float], clip: float) -> dict[str, float]:
    """Median, 99th percentile and max of the pre-clip gradient norms; share of steps clipped."""
    t = torch.tensor(norms, dtype=torch.float64)
    return {
        "grad_norm_median": rounded(t.median().item()),
        "grad_norm_p99": rounded(t.quantile(0.99).item()),
        "grad_norm_max": rounded(t.max().item()),
        "clipped_fraction": accuracy((t > clip).sum().item(), len(norms)) if clip > 0 else 0.0,
    }


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

    def add(self, record: dict, evaluated: nn.Module, select: str) -> None:
        """Epoch ``record``; the ``evaluated`` weights kept if it is the best so far under ``select``."""
        if improves(record, self.best, select):
            self.best_epoch = record["epoch"]
            self.best_state = copy.deepcopy(evaluated.state_dict())
        self.epochs.append(record)

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
    *,
    recorder: Recorder = NOTHING,
    resume: dict | None = None,
    member: int = 0,
    world: World = ALONE,
    teacher: nn.Module | None = None,
    distill: float = 0.0,
    clause_ends: Tensor | None = None,
    base: Base | None = None,
) -> History:
    """Train ``model`` in place; return the history, with the weights of the selected epoch.

    ``recorder`` (:class:`~scratchformer.train.recording.Recorder`) receives each step's and
    epoch's record and, each epoch, the state to carry on from: handed back as ``resume`` it
    continues the run bit for bit. The selected epoch has the lowest ``val_loss`` or highest
    ``val_accuracy`` (``config.select``; ties keep the earlier; epoch 0 never wins). The
    epoch's ``train_loss`` is plain cross-entropy like ``val_loss`` (a step's ``loss`` is the
    objective); a loss that is not finite raises :class:`~scratchformer.train.loop.TrainingDivergedError`.
    With ``config.ema_decay`` > 0 the moving average is what is validated and recorded; with a
    ``teacher`` and ``distill`` > 0 the targets mix in its probabilities (:class:`Classification`);
    with several processes (``world``) only rank 0 validates, selects and records;
    ``train.span_length=clause`` crops at ``clause_ends`` (:func:`~scratchformer.train.augment.clause_end_ids`);
    with a ``base`` the network learns on top of its logits, and what is validated is the two added.
    """
    objective = Classification.for_training(model, config, teacher, distill, clause_ends, base)
    steps = math.ceil(len(train) / config.batch_size)
    loop = Loop(objective, Settings.training(config), seed, steps, device, world, where=f"member {member}, ")
    history = History()
    start = time.perf_counter()
    scored = functools.partial(_epoch_record, validation=validation, config=config, device=device, base=base)
    if resume is None:
        if world.main:
            history.initial = scored(loop.evaluated, 0, math.nan, math.nan)
            recorder.epoch(history.initial, loop.evaluated)
    else:
        loop.restore(resume)
        history = History(**resume["history"])
        log.info("member %d: resuming after epoch %d of %d", member, loop.epoch, config.epochs)
    first = loop.epoch + 1  # the first epoch this process trains (a resumed run starts later)
    while loop.epoch < config.epochs:
        done = loop.run_epoch(train, Steps(history.steps, recorder))
        state = loop.state()  # collective: all ranks take part
        if not world.main:
            continue
        record = scored(loop.evaluated, loop.epoch, done["train_loss"], accuracy(*done["train_accuracy"]))
        history.add(record, loop.evaluated, config.select)
        log.info(epoch_line(record, config.epochs, time.perf_counter() - start, first))
        log.debug("epoch %d: %s", loop.epoch, record)
        recorder.epoch(record, loop.evaluated)
        recorder.state({**state, "history": history.as_state()})
    history.seconds = time.perf_counter() - start
    return history


def epoch_line(record: dict, epochs: int, elapsed: float, first: int) -> str:
    """One line a person can read at a glance: epoch i/N, both losses and accuracies, time, time left.

    The estimate assumes the epochs still to come take as long as the mean of those
    trained in this process (from epoch ``first`` on; a resumed run's earlier epochs
    took their time in another).
    """
    done = record["epoch"] - first + 1
    left = elapsed / done * (epochs - record["epoch"])
    return (
        f"epoch {record['epoch']}/{epochs}  train loss {record['train_loss']:.4f} acc {record['train_accuracy']:.4f}"
        f"  val loss {record['val_loss']:.4f} acc {record['val_accuracy']:.4f}"
        f"  {_clock(elapsed)} elapsed, ~{_clock(left)} left"
    )


def _clock(seconds: float) -> str:
    minutes, seconds = divmod(round(seconds), 60)
    return f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"


class Steps(Recorder):
    """Each step's record into ``steps`` (the history), then on to ``recorder``."""

    def __init__(self, steps: list[dict], recorder: Recorder) -> None:
        self.steps, self.recorder = steps, recorder

    def step(self, record: dict) -> None:
        self.steps.append(record)
        self.recorder.step(record)


def _epoch_record(model, epoch, train_loss, train_acc, validation, config, device, base=None) -> dict:
    """Scores on validation (of the network with its ``base``), and the attention of every head on its first
    64 texts (a fixed sample)."""
    scored = model if base is None else Ensemble([model], base.full, "base").train(model.training)
    val = scores(predict_logits(scored, validation, config.batch_size * 4, device), validation.labels)
    sample, _ = next(iter(batches(validation, 64, model.pad_id)))
    return {
        "epoch": epoch,
        "train_loss": rounded(train_loss),
        "train_accuracy": train_acc,
        "val_loss": val["loss"],
        "val_accuracy": val["accuracy"],
        **{key: rounded(value) for key, value in attention_diagnostics(model, sample.to(device)).items()},
    }
