"""Stage train: fit from random init, log curves with dvclive, record the probe's attention."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import NamedTuple

import torch
from transformers import PreTrainedTokenizerBase

from dvclive import Live
from scratchformer.checkpoint import load_pretrained, save_checkpoint
from scratchformer.config import Params
from scratchformer.files import write_json
from scratchformer.model import Ensemble, TransformerClassifier
from scratchformer.probe import Probe, make_probe, snapshot
from scratchformer.tokenization import TokenizedSplit, load_tokenizer, read_class_names, read_tokenized
from scratchformer.training import History, fit, grad_norm_summary, pick_device, seed_everything


class Member(NamedTuple):
    model: TransformerClassifier  # at its best epoch
    history: History
    snapshots: list[dict]  # the probe at every epoch (empty without a probe)
    pretrained: bool  # started from the pretrain stage's weights


def train_member(
    k: int,
    params: Params,
    tokenizer: PreTrainedTokenizerBase,
    train_split: TokenizedSplit,
    val_split: TokenizedSplit,
    pretrained_path: Path,
    device: torch.device,
    live: Live,
    probe: Probe | None,
) -> Member:
    """Train member ``k`` from seed ``params.seed + k``; return it at its best epoch.

    Curves go to ``live`` (prefixed ``member<k>/`` for k > 0). With a ``probe``,
    its snapshot at every epoch is returned too.
    """
    seed = params.seed + k
    prefix = f"member{k}/" if k else ""
    seed_everything(seed)
    model = TransformerClassifier(params.model, len(tokenizer), tokenizer.pad_token_id)
    pretrained = load_pretrained(model, pretrained_path)
    best_state, snapshots = {}, []

    def on_step(record: dict) -> None:
        live.step = record["step"]
        for key in ("loss", "grad_norm", "lr"):
            live.log_metric(f"{prefix}step/{key}", record[key])

    def on_epoch(record: dict, evaluated: TransformerClassifier, is_best: bool) -> None:
        if probe:
            snapshots.append(snapshot(evaluated, probe, record["epoch"]))
        if record["epoch"] == 0:
            return
        live.step = record["epoch"]
        for key, value in record.items():
            if key != "epoch":
                live.log_metric(f"{prefix}epoch/{key}", value)
        if is_best:  # the evaluated weights (the EMA when on) of the lowest validation loss so far
            best_state.update(copy.deepcopy(evaluated.state_dict()))

    history = fit(model, train_split, val_split, params.train, seed, device, on_step, on_epoch)
    model.load_state_dict(best_state)
    return Member(model, history, snapshots, pretrained)


def run(
    params: Params,
    tokenized_dir: Path,
    tokenizer_dir: Path,
    pretrained_path: Path,
    model_path: Path,
    live_dir: Path,
    snapshots_path: Path,
    metrics_path: Path,
) -> dict:
    """Train from random init; save the best checkpoint, curves, probe snapshots, metrics.

    With ``train.ensemble`` = K > 1, K members are trained one after another from
    seeds seed, seed+1, …, each keeping its own best epoch; the checkpoint holds
    the ensemble. Member 0's curves and probe snapshots are the plotted ones; the
    others' curves are logged under ``member<k>/``.
    """
    tokenizer = load_tokenizer(str(tokenizer_dir))
    class_names = read_class_names(tokenized_dir)  # the model's output size comes from the data
    params = dataclasses.replace(params, model=params.model.for_classes(class_names))
    train_split = read_tokenized(tokenized_dir / "train")
    val_split = read_tokenized(tokenized_dir / "validation")
    device = pick_device(params.train.device)
    probe = make_probe(params.probe, tokenizer, params.tokenizer.max_len)
    with Live(str(live_dir), dvcyaml=False, save_dvc_exp=False) as live:
        members = [
            train_member(
                k, params, tokenizer, train_split, val_split, pretrained_path, device, live, probe if k == 0 else None
            )
            for k in range(params.train.ensemble)
        ]
    histories = [m.history for m in members]
    final = members[0].model if len(members) == 1 else Ensemble([m.model for m in members])
    save_checkpoint(
        model_path,
        final,
        best_epochs=[h.best_epoch for h in histories],
        class_names=class_names,
        tokenizer_max_len=params.tokenizer.max_len,
    )
    history = histories[0]
    best = history.epochs[history.best_epoch - 1]
    last = history.epochs[-1]
    metrics = {
        "best_epoch": history.best_epoch,
        "best_val_accuracy": best["val_accuracy"],
        "best_val_loss": best["val_loss"],
        "final_train_loss": last["train_loss"],
        "final_train_accuracy": last["train_accuracy"],
        "epochs": params.train.epochs,
        "ensemble": len(members),
        "seconds": round(sum(h.seconds for h in histories), 1),
        "parameters": final.num_parameters(),
        "device": device.type,
        "pretrained": members[0].pretrained,
        **grad_norm_summary([r["grad_norm"] for r in history.steps], params.train.grad_clip),
    }
    if len(members) > 1:  # each member's own best validation accuracy, beside the ensemble's in eval
        metrics["member_val_accuracy"] = {
            str(k): h.epochs[h.best_epoch - 1]["val_accuracy"] for k, h in enumerate(histories)
        }
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
    return metrics
