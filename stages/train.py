"""Stage train: fit from random init, log curves with dvclive, record the probe's attention.

With ``train.nproc`` > 1 the stage starts itself again as that many processes through
torchrun (data-parallel, see :mod:`scratchformer.train.distributed`); already under
torchrun (a multi-node launch, for example) it joins the process group it finds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import torch
from torch.distributed.elastic.multiprocessing.errors import record
from transformers import PreTrainedTokenizerBase

from dvclive import Live
from scratchformer.analysis.evaluation import predict_logits, scores
from scratchformer.analysis.probe import Probe, make_probe, snapshot
from scratchformer.config import Params
from scratchformer.data.tokenization import TokenizedSplit, batches, load_tokenizer, read_class_names, read_tokenized
from scratchformer.files import write_json
from scratchformer.model.checkpoint import load_pretrained, save_checkpoint
from scratchformer.model.classifier import Ensemble, TransformerClassifier
from scratchformer.model.naive_bayes import NBLogistic
from scratchformer.train.classify import History, fit, grad_norm_summary, seed_everything
from scratchformer.train.distributed import ALONE, World, pick_device, run_ranks
from scratchformer.train.resume import load_state, run_key, save_state, stage_code
from stages import stage

log = logging.getLogger(__name__)


class Member(NamedTuple):
    model: TransformerClassifier  # at its best epoch
    history: History
    snapshots: list[dict]  # the probe at every epoch (empty without a probe)
    pretrained: bool  # started from the pretrain stage's weights


class Curves:
    """Member ``k``'s curves in ``live`` (prefixed ``member<k>/`` for k > 0); nothing when ``live`` is None.

    Only rank 0 of a multi-process run logs (as DVCLive prescribes for DDP);
    the other ranks get curves that go nowhere.
    """

    def __init__(self, live: Live | None, k: int) -> None:
        self.live, self.prefix = live, f"member{k}/" if k else ""

    def step(self, record: dict) -> None:
        if self.live is None:
            return
        self.live.step = record["step"]
        for key, value in record.items():  # loss, grad_norm, lr, layer_grad_norm/<group>
            if key != "step":
                self.live.log_metric(f"{self.prefix}step/{key}", value)

    def epoch(self, record: dict) -> None:
        """An epoch's scores; for epoch 0, the untrained model, only its attention statistics."""
        if self.live is None:
            return
        self.live.step = record["epoch"]
        for key, value in record.items():
            if key != "epoch" and (record["epoch"] > 0 or key.startswith("attention/")):
                self.live.log_metric(f"{self.prefix}epoch/{key}", value)

    def replay(self, history: dict) -> None:
        """Log again what a resumed run had already logged before it stopped, in the order it did.

        The untrained model's statistics came first, so the summary
        (dvclive/metrics.json) lists its keys in the same order as an
        uninterrupted run's.
        """
        self.epoch(history["initial"])
        for row in history["steps"]:
            self.step(row)
        for row in history["epochs"]:
            self.epoch(row)


def train_member(
    k: int,
    params: Params,
    tokenizer: PreTrainedTokenizerBase,
    train_split: TokenizedSplit,
    val_split: TokenizedSplit,
    pretrained_path: Path,
    device: torch.device,
    curves: Curves,
    probe: Probe | None,
    resume: dict | None = None,
    on_state: Callable[[dict], None] = lambda state: None,
    world: World = ALONE,
) -> Member:
    """Train member ``k`` from seed ``params.seed + k``; return it at its best epoch.

    With a ``probe``, its snapshot at every epoch is returned too. ``resume``
    (a state ``on_state`` was handed at the end of an epoch) continues a run
    that stopped there.
    """
    seed = params.seed + k
    seed_everything(seed)
    model = TransformerClassifier(params.model, len(tokenizer), tokenizer.pad_token_id)
    pretrained = load_pretrained(model, pretrained_path)
    snapshots = list(resume["snapshots"]) if resume else []
    if resume:
        curves.replay(resume["history"])

    def on_epoch(record: dict, evaluated: TransformerClassifier, is_best: bool) -> None:
        if probe:
            snapshots.append(snapshot(evaluated, probe, record["epoch"]))
        curves.epoch(record)

    history = fit(
        model,
        train_split,
        val_split,
        params.train,
        seed,
        device,
        curves.step,
        on_epoch,
        member=k,
        resume=resume,
        on_state=lambda state: on_state({**state, "snapshots": snapshots, "pretrained": pretrained}),
        world=world,
    )
    if world.main:  # only rank 0 validates and selects
        model.load_state_dict(history.best_state)  # the evaluated weights (the EMA when on) of the selected epoch
    return Member(model, history, snapshots, pretrained)


def finished(member: Member) -> dict:
    """A trained member as plain data, for the resumable state (its weights are the best ones already)."""
    return {
        "model": member.model.state_dict(),
        "history": member.history.as_state(weights=False),
        "snapshots": member.snapshots,
        "pretrained": member.pretrained,
    }


def unfinished(saved: dict, params: Params, tokenizer: PreTrainedTokenizerBase) -> Member:
    """The member that :func:`finished` saved."""
    model = TransformerClassifier(params.model, len(tokenizer), tokenizer.pad_token_id)
    model.load_state_dict(saved["model"])
    return Member(model, History(**saved["history"]), list(saved["snapshots"]), saved["pretrained"])


def fit_nb(
    params: Params, train_split: TokenizedSplit, val_split: TokenizedSplit, tokenizer: PreTrainedTokenizerBase
) -> tuple[NBLogistic, float, float]:
    """The NB-weighted n-gram member (:mod:`scratchformer.model.naive_bayes`), fit on the train split.

    Returns it with its train and validation accuracy.
    """
    pad_id = tokenizer.pad_token_id
    nb = NBLogistic(params.train.nb_ngrams, params.train.nb_buckets, len(tokenizer), params.model.num_classes, pad_id)
    train_accuracy = nb.fit(list(batches(train_split, 256, pad_id)), params.train.nb_c)
    logits = predict_logits(nb, val_split, 256)
    val_accuracy = scores(logits, val_split.labels)["accuracy"]
    log.info("NB member: train accuracy %.4f, validation accuracy %.4f", train_accuracy, val_accuracy)
    return nb, train_accuracy, val_accuracy


def run(
    params: Params,
    tokenized_dir: Path,
    tokenizer_dir: Path,
    pretrained_path: Path,
    model_path: Path,
    live_dir: Path,
    snapshots_path: Path,
    metrics_path: Path,
    state_path: Path,
    world: World = ALONE,
) -> dict | None:
    """Train from random init; save the best checkpoint, curves, probe snapshots, metrics.

    With ``train.ensemble`` = K > 1, K members are trained one after another from
    seeds seed, seed+1, …, each keeping its own best epoch; the checkpoint holds
    the ensemble. Member 0's curves and probe snapshots are the plotted ones; the
    others' curves are logged under ``member<k>/``.

    At the end of every epoch the state of the run goes to ``state_path``
    (see :mod:`scratchformer.train.resume`); a rerun with the same params, inputs and code
    continues from there, and the file is removed once the outputs are written.

    Every process of a multi-process run (``world``) calls this; only rank 0
    writes anything, and only rank 0 returns the metrics (the others None).
    """
    tokenizer = load_tokenizer(str(tokenizer_dir))
    class_names = read_class_names(tokenized_dir)  # the model's output size comes from the data
    params = dataclasses.replace(params, model=params.model.for_classes(class_names))
    train_split = read_tokenized(tokenized_dir / "train")
    val_split = read_tokenized(tokenized_dir / "validation")
    device = world.place(pick_device(params.train.device))
    log.info("rank %d of %d, on %s, %d threads", world.rank, world.size, device, torch.get_num_threads())
    probe = make_probe(params.probe, tokenizer, params.tokenizer.max_len)
    read = {"seed": params.seed, "model": params.model, "train": params.train, "probe": params.probe}
    key = run_key(
        {**read, "tokenizer.max_len": params.tokenizer.max_len},
        [tokenized_dir, tokenizer_dir, pretrained_path],
        stage_code("train"),
    )
    saved = load_state(state_path, key) or {"members": [], "current": None}
    done: list[dict] = list(saved["members"])
    members: list[Member] = []
    live_or_none = Live(str(live_dir), dvcyaml=False, save_dvc_exp=False) if world.main else contextlib.nullcontext()
    with live_or_none as live:
        for k in range(params.train.ensemble):
            curves = Curves(live, k)
            if k < len(done):  # finished before the run stopped
                log.info("member %d: restored, trained before the run stopped", k)
                member = unfinished(done[k], params, tokenizer)
                curves.replay(done[k]["history"])
            else:
                member = train_member(
                    k,
                    params,
                    tokenizer,
                    train_split,
                    val_split,
                    pretrained_path,
                    device,
                    curves,
                    probe if k == 0 else None,
                    resume=saved["current"] if k == len(saved["members"]) else None,
                    on_state=lambda state, k=k: save_state(
                        state_path, {"key": key, "members": done, "current": {**state, "member": k}}
                    ),
                    world=world,
                )
                done.append(finished(member))
                if world.main:
                    save_state(state_path, {"key": key, "members": done, "current": None})
            members.append(member)
    if not world.main:
        return None
    histories = [m.history for m in members]
    nb = fit_nb(params, train_split, val_split, tokenizer) if params.train.nb_ngrams else None
    transformers = [m.model for m in members]
    final = transformers[0] if len(members) == 1 and nb is None else Ensemble(transformers, nb[0] if nb else None)
    save_checkpoint(
        model_path,
        final,
        best_epochs=[h.best_epoch for h in histories],
        class_names=class_names,
        tokenizer_max_len=params.tokenizer.max_len,
    )
    history = histories[0]
    best, last = history.best, history.epochs[-1]
    metrics = {
        "best_epoch": history.best_epoch,
        "best_val_accuracy": best["val_accuracy"],
        "best_val_loss": best["val_loss"],
        "final_train_loss": last["train_loss"],
        "final_train_accuracy": last["train_accuracy"],
        "epochs": params.train.epochs,
        "ensemble": len(members),
        "parameters": final.num_parameters(),
        "pretrained": members[0].pretrained,
        **grad_norm_summary([r["grad_norm"] for r in history.steps], params.train.grad_clip),
    }
    if len(members) > 1:  # each member's own best validation accuracy, beside the ensemble's in eval
        metrics["member_val_accuracy"] = {str(k): h.best["val_accuracy"] for k, h in enumerate(histories)}
    if nb:  # the NB member alone, beside the ensemble's in eval
        metrics["nb_train_accuracy"], metrics["nb_val_accuracy"] = nb[1], nb[2]
    write_json(
        snapshots_path,
        {
            "text": params.probe.text,
            "tokens": probe.tokens,
            "query_index": probe.query_index,
            "query_token": params.probe.query_token,
            "layer": probe.layer if probe.layer >= 0 else params.model.n_layers + probe.layer,
            "head": probe.head,
            "class_names": class_names,
            "snapshots": members[0].snapshots,
        },
    )
    write_json(metrics_path, metrics)
    state_path.unlink(missing_ok=True)  # the outputs are written: nothing left to resume
    # Wall time and device are facts of the machine, not of code, params and data:
    # logged, never written into a tracked output (a rerun must change no byte).
    log.info("trained in %.1f s on %s", sum(h.seconds for h in histories), device)
    return metrics


@record  # a rank's uncaught error reaches torchrun's report with its traceback
def ranks(params: Params, work: Callable[[World], dict | None]) -> dict | None:
    """``work`` on each of ``train.nproc`` processes, relaunched through torchrun; rank 0's result."""
    nproc = params.train.nproc
    return run_ranks(nproc, params.train.device, "stages.train", work)


if __name__ == "__main__":
    stage(run, ranks=ranks)
