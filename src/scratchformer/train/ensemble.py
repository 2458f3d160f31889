"""The train stage's models: transformer members trained one after another, and the NB-weighted n-gram member."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import NamedTuple

import torch
from transformers import PreTrainedTokenizerBase

from scratchformer.analysis.evaluation import predict_logits, scores
from scratchformer.analysis.probe import Probe
from scratchformer.config import Params
from scratchformer.data.tokenization import TokenizedSplit, batches
from scratchformer.model.checkpoint import load_pretrained
from scratchformer.model.classifier import TransformerClassifier
from scratchformer.model.naive_bayes import NBLogistic, OutOfFold, text_folds
from scratchformer.train.classify import History, fit, seed_everything
from scratchformer.train.distributed import ALONE, World
from scratchformer.train.run import Run

log = logging.getLogger(__name__)


class Member(NamedTuple):
    model: TransformerClassifier  # at its best epoch
    history: History
    snapshots: list[dict]  # the probe at every epoch (empty without a probe)
    pretrained: bool  # started from the pretrain stage's weights

    def saved(self) -> dict:
        """This member as plain data, for the resumable state (its weights are the best ones already)."""
        return {
            "model": self.model.state_dict(),
            "history": self.history.as_state(weights=False),
            "snapshots": self.snapshots,
            "pretrained": self.pretrained,
        }


def train_member(
    k: int,
    params: Params,
    tokenizer: PreTrainedTokenizerBase,
    train_split: TokenizedSplit,
    val_split: TokenizedSplit,
    pretrained_path: Path,
    device: torch.device,
    run: Run,
    probe: Probe | None = None,
    world: World = ALONE,
    teacher: NBLogistic | OutOfFold | None = None,
) -> Member:
    """Member ``k`` of ``run``, trained from seed ``params.seed + k``, at its best epoch.

    With a ``teacher`` and ``train.distill`` > 0 its targets mix in the teacher's
    probabilities (:class:`~scratchformer.train.classify.Classification`).

    A member that finished before the run stopped is restored instead; one that
    had begun carries on from its last epoch. With a ``probe``, its snapshot at
    every epoch is kept.
    """
    saved = run.restored(k)
    if saved is not None:
        model = TransformerClassifier(params.model, len(tokenizer), tokenizer.pad_token_id)
        model.load_state_dict(saved["model"])
        return Member(model, History(**saved["history"]), list(saved["snapshots"]), saved["pretrained"])
    seed = params.seed + k
    seed_everything(seed)
    model = TransformerClassifier(params.model, len(tokenizer), tokenizer.pad_token_id)
    pretrained = load_pretrained(model, pretrained_path)
    recorder = run.member(k, probe)
    config = params.train
    history = fit(model, train_split, val_split, config, seed, device, recorder, recorder.resume, k, world, teacher)
    if world.main:  # only rank 0 validates and selects
        model.load_state_dict(history.best_state)  # the evaluated weights (the EMA when on) of the selected epoch
    member = Member(model, history, recorder.snapshots, pretrained)
    run.finish(k, member.saved())
    return member


def fit_nb(
    params: Params, train_split: TokenizedSplit, val_split: TokenizedSplit, tokenizer: PreTrainedTokenizerBase
) -> tuple[NBLogistic | OutOfFold, float, float]:
    """The NB-weighted n-gram model (:mod:`scratchformer.model.naive_bayes`), fit on the train split.

    Returns it with its train and validation accuracy. It joins the ensemble
    (``train.nb_role`` member), or only teaches (teacher); either way it is
    fit before the Transformers, deterministically (full-batch L-BFGS), so
    every process of a multi-process run and every resumed run fits the same one.

    With ``train.distill_folds`` = k > 1 the teacher is k models, the j-th fit
    on the train texts outside fold j (:class:`~scratchformer.model.naive_bayes.OutOfFold`);
    its train accuracy is then out of fold, every text answered by the model
    that never saw it.
    """
    config, pad_id = params.train, tokenizer.pad_token_id

    def new() -> NBLogistic:
        return NBLogistic(config.nb_ngrams, config.nb_buckets, len(tokenizer), params.model.num_classes, pad_id)

    train = list(batches(train_split, 256, pad_id))
    if config.distill_folds == 1:
        nb = new()
        train_accuracy = nb.fit(train, config.nb_c)
    else:
        k = config.distill_folds
        folds = [text_folds(ids, k, pad_id) for ids, _ in train]
        models = [new() for _ in range(k)]
        for j, model in enumerate(models):
            model.fit([(ids[f != j], y[f != j]) for (ids, y), f in zip(train, folds, strict=True)], config.nb_c)
        nb = OutOfFold(models, pad_id)
        with torch.no_grad():
            right = sum(int((nb(ids, f).argmax(1) == y).sum()) for (ids, y), f in zip(train, folds, strict=True))
        train_accuracy = right / len(train_split)
    logits = predict_logits(nb, val_split, 256)
    val_accuracy = scores(logits, val_split.labels)["accuracy"]
    log.info("NB %s: train accuracy %.4f, validation accuracy %.4f", config.nb_role, train_accuracy, val_accuracy)
    return nb, train_accuracy, val_accuracy
