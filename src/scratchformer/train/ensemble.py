"""The train stage's models: transformer members trained one after another, and the NB-weighted n-gram model.

:func:`train_ensemble` is the whole of the train stage's work: the NB model (when asked for), every
member, the model that is saved, its metrics and the probe's record, as one :class:`Trained`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import NamedTuple

import torch
from torch import nn
from transformers import PreTrainedTokenizerBase

from scratchformer.analysis.evaluation import predict_logits, scores
from scratchformer.analysis.probe import Probe, make_probe, snapshots_record
from scratchformer.config import ModelConfig, NBConfig, ProbeConfig, TrainConfig
from scratchformer.data.tokenized_split import TokenizedSplit, batches
from scratchformer.model.checkpoint import load_pretrained
from scratchformer.model.classifier import Ensemble, TransformerClassifier
from scratchformer.model.naive_bayes import NBLogistic, OutOfFold, text_folds
from scratchformer.train.augment import clause_end_ids
from scratchformer.train.classify import History, fit, grad_norm_summary, seed_everything
from scratchformer.train.distributed import ALONE, World
from scratchformer.train.objective import Base
from scratchformer.train.recording import Recording

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


class NBFit(NamedTuple):
    """The n-gram model, fit, with its accuracy on train (out of fold for k models) and validation."""

    model: NBLogistic | OutOfFold  # what teaches, joins the vote, or is the base
    train_accuracy: float
    val_accuracy: float
    out_of_fold: OutOfFold | None = None  # a base's k models, which answer the train texts

    def base(self) -> Base:
        """The networks' base (``nb.role`` base): out of fold on train when there are folds."""
        return Base(self.model if self.out_of_fold is None else self.out_of_fold, self.model)


class Trained(NamedTuple):
    """What the train stage writes: the saved model, its members' best epochs, the metrics, the probe's record."""

    model: nn.Module  # one TransformerClassifier, or an Ensemble
    best_epochs: list[int]
    metrics: dict
    snapshots: dict  # the probe and member 0's snapshot at every epoch
    seconds: float  # the members' training time (a fact of the machine: logged, never written)


def train_ensemble(
    *,
    seed: int,
    model: ModelConfig,
    train: TrainConfig,
    nb: NBConfig,
    probe: ProbeConfig,
    tokenizer: PreTrainedTokenizerBase,
    max_len: int,
    class_names: list[str],
    train_split: TokenizedSplit,
    val_split: TokenizedSplit,
    pretrained_path: Path,
    device: torch.device,
    recording: Recording,
    world: World = ALONE,
    nb_train_split: TokenizedSplit | None = None,
) -> Trained | None:
    """Train the classifier of the train stage; on rank 0 what it writes, elsewhere None.

    With ``train.ensemble`` = K > 1, K members train one after another from seeds seed,
    seed+1, …, each keeping its best epoch; member 0's curves and probe snapshots are the
    plotted ones. With ``nb.ngrams`` > 0 the NB model is fit first (:func:`fit_nb`): it
    joins the ensemble (``nb.role`` member) or only teaches (teacher, ``nb.distill`` > 0),
    and the saved model is then the Transformers alone. The networks read each review's first
    ``model.max_len`` tokens, the NB model's fit all of it (or ``nb_train_split``, cut at ``nb.fit_len``).
    With ``train.teachers`` > 0, networks
    trained first teach the saved one instead (:func:`teaching`). ``recording`` keeps the
    curves and the resumable state; every process of a multi-process run (``world``) calls this.
    """
    shown = make_probe(probe, tokenizer, min(max_len, model.max_len))
    window = dict(train_split=train_split.prefix(model.max_len), val_split=val_split.prefix(model.max_len))
    whole = dict(val_split=val_split, fit_split=train_split if nb_train_split is None else nb_train_split)
    fitted = fit_nb(nb, model.num_classes, tokenizer, train_split=window["train_split"], **whole) if nb.ngrams else None
    common = dict(seed=seed, model=model, train=train, tokenizer=tokenizer, device=device, world=world)  # each member
    common |= dict(**window, pretrained_path=pretrained_path, recording=recording)
    common["base"] = fitted.base() if fitted and nb.role == "base" else None
    teachers, teacher, distill = teaching(train, nb, fitted, common)
    members = [
        train_member(
            k,
            **common,
            probe=shown if k == 0 else None,  # member 0's snapshots are the plotted ones
            teacher=teacher,
            distill=distill,
        )
        for k in range(train.ensemble)
    ]
    if not world.main:
        return None
    nb_member = fitted.model if fitted and nb.role != "teacher" else None  # a teacher stays out of the model
    transformers = [m.model for m in members]
    role = "base" if nb.role == "base" else "member"
    final = transformers[0] if len(members) == 1 and nb_member is None else Ensemble(transformers, nb_member, role)
    snapshots = members[0].snapshots
    record = snapshots_record(shown, probe, n_layers=model.n_layers, class_names=class_names, snapshots=snapshots)
    best_epochs = [m.history.best_epoch for m in members]
    seconds = sum(m.history.seconds for m in members + teachers)  # what the saved model cost, its teachers too
    metrics = stage_metrics(members, final, train, fitted, teachers)
    return Trained(final, best_epochs, metrics, record, seconds)


def teaching(
    train: TrainConfig, nb: NBConfig, fitted: NBFit | None, common: dict
) -> tuple[list[Member], nn.Module | None, float]:
    """Who teaches the saved members, and with what weight: the teachers trained here (if any), the module, α.

    Distillation from an ensemble: with ``train.teachers`` = k the teachers (members 1..k, from
    seeds seed+1..seed+k) train first, on the labels alone, and teach as one ensemble: member
    0, the one saved, learns from targets mixing the labels with their mean probability on each
    batch as it sees it (weight ``train.distill``). Otherwise the NB model teaches when
    ``nb.distill`` > 0, or no one. ``common``: :func:`train_member`'s keyword arguments.
    """
    teachers = [train_member(k, **common | {"base": None}) for k in range(1, train.teachers + 1)]
    if teachers:
        return teachers, Ensemble([t.model for t in teachers]), train.distill
    return [], (fitted.model if fitted and nb.distill else None), nb.distill


def stage_metrics(
    members: list[Member],
    final: nn.Module,
    train: TrainConfig,
    fitted: NBFit | None,
    teachers: list[Member] | None = None,
) -> dict:
    """The train stage's metrics: member 0's best and last epoch, its gradient norms, the saved model's size.

    With several members, each one's best validation accuracy; with an NB model (member or
    teacher), its own train and validation accuracy: each beside the ensemble's in evaluate;
    with ``teachers``, each one's best validation accuracy.
    """
    history = members[0].history
    best, last = history.best, history.epochs[-1]
    metrics = {
        "best_epoch": history.best_epoch,
        "best_val_accuracy": best["val_accuracy"],
        "best_val_loss": best["val_loss"],
        "final_train_loss": last["train_loss"],
        "final_train_accuracy": last["train_accuracy"],
        "epochs": train.epochs,
        "ensemble": len(members),
        "parameters": final.num_parameters(),
        "pretrained": members[0].pretrained,
        **grad_norm_summary([r["grad_norm"] for r in history.steps], train.grad_clip),
    }
    if len(members) > 1:
        metrics["member_val_accuracy"] = {str(k): m.history.best["val_accuracy"] for k, m in enumerate(members)}
    if fitted:
        metrics["nb_train_accuracy"], metrics["nb_val_accuracy"] = fitted.train_accuracy, fitted.val_accuracy
    if teachers:
        metrics["teacher_val_accuracy"] = {str(k): t.history.best["val_accuracy"] for k, t in enumerate(teachers, 1)}
    return metrics


def train_member(
    k: int,
    *,
    seed: int,
    model: ModelConfig,
    train: TrainConfig,
    tokenizer: PreTrainedTokenizerBase,
    train_split: TokenizedSplit,
    val_split: TokenizedSplit,
    pretrained_path: Path,
    device: torch.device,
    recording: Recording,
    probe: Probe | None = None,
    world: World = ALONE,
    teacher: NBLogistic | OutOfFold | Ensemble | None = None,
    distill: float = 0.0,
    base: Base | None = None,
) -> Member:
    """Member ``k`` of ``recording``, trained from seed ``seed + k``, at its best epoch.

    With a ``teacher`` (the NB model, or an ensemble of teachers) and ``distill`` > 0 its
    targets mix in the teacher's probabilities (:class:`~scratchformer.train.objective.Classification`);
    with a ``base`` it learns on top of the base's logits.

    A member that finished before the run stopped is restored instead; one that
    had begun carries on from its last epoch. With a ``probe``, its snapshot at
    every epoch is kept.
    """
    saved = recording.restored(k)
    if saved is not None:
        classifier = TransformerClassifier(model, len(tokenizer), tokenizer.pad_token_id)
        classifier.load_state_dict(saved["model"])
        return Member(classifier, History(**saved["history"]), list(saved["snapshots"]), saved["pretrained"])
    seed_everything(seed + k)
    classifier = TransformerClassifier(model, len(tokenizer), tokenizer.pad_token_id)
    pretrained = load_pretrained(classifier, pretrained_path)
    recorder = recording.member(k, probe)
    history = fit(
        classifier,
        train_split,
        val_split,
        train,
        seed + k,
        device,
        recorder=recorder,
        resume=recorder.resume,
        member=k,
        world=world,
        teacher=teacher,
        distill=distill,
        clause_ends=clause_end_ids(tokenizer.get_vocab()),
        base=base,
    )
    if world.main:  # only rank 0 validates and selects
        classifier.load_state_dict(history.best_state)  # the evaluated weights (the EMA when on) of the best epoch
    member = Member(classifier, history, recorder.snapshots, pretrained)
    recording.finish(k, member.saved())
    return member


def fit_nb(
    config: NBConfig,
    num_classes: int,
    tokenizer: PreTrainedTokenizerBase,
    *,
    train_split: TokenizedSplit,
    val_split: TokenizedSplit,
    fit_split: TokenizedSplit | None = None,
) -> NBFit:
    """The NB-weighted n-gram model (:mod:`scratchformer.model.naive_bayes`), fit on the train split.

    It joins the ensemble (``nb.role`` member), only teaches (teacher), or is the base the
    networks learn on (base); either way it is fit before the Transformers, deterministically
    (full-batch L-BFGS), so every process of a multi-process run and every resumed run fits the same one.

    With ``nb.distill_folds`` = k > 1 there are k models, the j-th fit on the train texts
    outside fold j (:class:`~scratchformer.model.naive_bayes.OutOfFold`): they are the
    teacher, or they answer a base's train texts while the base fit on all of train answers
    the rest. The train accuracy is then out of fold, every text answered by the model that never saw it.

    ``fit_split``, when given, holds the same train reviews cut longer than the networks read
    them (``train_split``): the fit reads it, so a long review lends all its n-grams. Each text's
    fold is still drawn from its ids in ``train_split``, as the networks' batches carry them.
    """
    pad_id = tokenizer.pad_token_id
    markers = (tokenizer.cls_token_id, tokenizer.sep_token_id)  # what the tokenizer wraps a text in, if anything
    skip = () if config.special_tokens else tuple(t for t in markers if t is not None)

    def new() -> NBLogistic:
        return NBLogistic(config.ngrams, config.buckets, len(tokenizer), num_classes, pad_id, config.scaling, skip)

    fit_split = train_split if fit_split is None else fit_split
    train = list(batches(fit_split, 256, pad_id))
    k = config.distill_folds
    full = None
    if k == 1 or config.role != "teacher":
        full = new()
        train_accuracy = full.fit(train, config.c)
    folded = None
    if k > 1:
        cut = train if fit_split is train_split else batches(train_split, 256, pad_id)  # the networks' ids
        folds = [text_folds(ids, k, pad_id) for ids, _ in cut]
        models = [new() for _ in range(k)]
        for j, model in enumerate(models):
            model.fit([(ids[f != j], y[f != j]) for (ids, y), f in zip(train, folds, strict=True)], config.c)
        folded = OutOfFold(models, pad_id)
        with torch.no_grad():
            right = sum(int((folded(ids, f).argmax(1) == y).sum()) for (ids, y), f in zip(train, folds, strict=True))
        train_accuracy = right / len(train_split)
    nb = folded if config.role == "teacher" and k > 1 else full  # a base or member is the one fit on all of train
    logits = predict_logits(nb, val_split, 256)
    val_accuracy = scores(logits, val_split.labels)["accuracy"]
    log.info("NB %s: train accuracy %.4f, validation accuracy %.4f", config.role, train_accuracy, val_accuracy)
    return NBFit(nb, train_accuracy, val_accuracy, folded if config.role == "base" else None)
