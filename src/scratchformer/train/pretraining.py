"""Pretraining of the encoder before it learns the labels: the objective chosen, and the run.

``pretrain.objective`` picks what the encoder learns from unlabeled text:

- ``mlm``: masked-language modelling (:mod:`~scratchformer.train.masked_lm`): predict the
  15% of tokens that were masked; the logged loss and accuracy are over those tokens
  (``mlm_loss``, ``masked_accuracy``);
- ``electra``: replaced-token detection (:mod:`~scratchformer.train.replaced_token`): a
  small generator fills the masked positions, the encoder says of every token whether it
  was replaced; the logged loss and accuracy are the detection's, over every real token
  (``detection_loss``, ``detection_accuracy``).

Both run on the training loop of classification, and both leave the classifier's encoder
trained in place; their own layers (heads, the generator) are not kept.
"""

from __future__ import annotations

import logging
import math
import time

import torch
from torch import nn

from scratchformer.analysis.evaluation import accuracy, rounded
from scratchformer.config import PretrainConfig, TrainConfig
from scratchformer.data.tokenized_split import TokenizedSplit
from scratchformer.model.classifier import TransformerClassifier
from scratchformer.train.distributed import ALONE, World
from scratchformer.train.loop import NOTHING, Loop
from scratchformer.train.masked_lm import MaskedLM
from scratchformer.train.optim import Settings
from scratchformer.train.recording import Recorder
from scratchformer.train.replaced_token import ReplacedTokenDetection

log = logging.getLogger(__name__)

# The metrics' names for each objective's loss and accuracy, as they appear in metrics/pretrain.json.
NAMES = {"mlm": ("mlm_loss", "masked_accuracy"), "electra": ("detection_loss", "detection_accuracy")}


def objective(model: TransformerClassifier, config: PretrainConfig, special_ids: list[int], mask_id: int) -> nn.Module:
    """The objective module ``config.objective`` names, around ``model``'s encoder."""
    if config.objective == "electra":
        return ReplacedTokenDetection(
            model, special_ids, mask_id, config.mask_prob, config.generator_layers, config.detection_weight
        )
    return MaskedLM(model, special_ids, mask_id, config.mask_prob)


def pretrain(
    model: TransformerClassifier,
    train: TokenizedSplit,
    config: PretrainConfig,
    special_ids: list[int],
    mask_id: int,
    seed: int,
    device: torch.device,
    world: World = ALONE,
    train_config: TrainConfig | None = None,
    recorder: Recorder = NOTHING,
    resume: dict | None = None,
) -> dict:
    """Train the encoder of ``model`` in place with ``config.objective``; return summary metrics.

    Runs on the same loop as classification (``train_config`` gives its
    precision and logging interval; ``world`` its processes). ``recorder``
    receives each step's record and, on rank 0 at the end of every epoch, the
    state; handing that back as ``resume`` continues from there.
    """
    loop = Loop(
        objective(model, config, special_ids, mask_id),
        Settings.pretraining(config, train_config or TrainConfig()),
        seed,
        math.ceil(len(train) / config.batch_size),
        device,
        world,
        label="pretraining",
        hint="Lower pretrain.lr or warm it up for longer (pretrain.warmup_ratio)",
    )
    done = None
    if resume is not None:
        loop.restore(resume)
        done = resume["done"]
        log.info("pretraining: resuming after epoch %d of %d", loop.epoch, config.epochs)
    loss_name, accuracy_name = NAMES[config.objective]
    start = time.perf_counter()
    while loop.epoch < config.epochs:
        done = loop.run_epoch(train, recorder)
        loss, right = done["train_loss"], accuracy(*done["train_accuracy"])
        log.info("pretrain epoch %d: %s %.4f, %s %.4f", loop.epoch, loss_name, loss, accuracy_name, right)
        state = loop.state()  # collective: all ranks take part
        if world.main:
            recorder.state({**state, "done": done})
    log.info("pretrained %d epochs in %.1f s on %s", config.epochs, time.perf_counter() - start, device)
    return {
        "epochs": config.epochs,
        "objective": config.objective,
        loss_name: rounded(done["train_loss"]),
        accuracy_name: accuracy(*done["train_accuracy"]),
    }
