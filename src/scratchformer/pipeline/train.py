"""Stage train: fit from random init, log curves with dvclive, record the probe's attention."""

from __future__ import annotations

from pathlib import Path

from dvclive import Live
from scratchformer.checkpoint import load_pretrained, save_checkpoint
from scratchformer.config import Params
from scratchformer.evaluation import CLASS_NAMES
from scratchformer.files import write_json
from scratchformer.model import TransformerClassifier
from scratchformer.probe import make_probe, snapshot
from scratchformer.tokenization import load_tokenizer, read_tokenized
from scratchformer.training import fit, grad_norm_summary, pick_device, seed_everything


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
    """Train from random init; save the best checkpoint, curves, probe snapshots, metrics."""
    seed_everything(params.seed)
    tokenizer = load_tokenizer(str(tokenizer_dir))
    train_split = read_tokenized(tokenized_dir / "train.parquet")
    val_split = read_tokenized(tokenized_dir / "validation.parquet")
    model = TransformerClassifier(params.model, len(tokenizer), tokenizer.pad_token_id)
    pretrained = load_pretrained(model, pretrained_path)
    device = pick_device(params.train.device)
    probe = make_probe(params.probe, tokenizer, params.tokenizer.max_len)
    snapshots = []

    with Live(str(live_dir), dvcyaml=False, save_dvc_exp=False) as live:

        def on_step(record: dict) -> None:
            live.step = record["step"]
            for key in ("loss", "grad_norm", "lr"):
                live.log_metric(f"step/{key}", record[key])

        def on_epoch(record: dict, model: TransformerClassifier, is_best: bool) -> None:
            snapshots.append(snapshot(model, probe, record["epoch"]))
            if record["epoch"] == 0:
                return
            live.step = record["epoch"]
            for key, value in record.items():
                if key != "epoch":
                    live.log_metric(f"epoch/{key}", value)
            if is_best:
                save_checkpoint(
                    model_path,
                    model,
                    epoch=record["epoch"],
                    val_loss=record["val_loss"],
                    tokenizer_max_len=params.tokenizer.max_len,
                )

        history = fit(model, train_split, val_split, params.train, params.seed, device, on_step, on_epoch)

    best = history.epochs[history.best_epoch - 1]
    last = history.epochs[-1]
    metrics = {
        "best_epoch": history.best_epoch,
        "best_val_accuracy": best["val_accuracy"],
        "best_val_loss": best["val_loss"],
        "final_train_loss": last["train_loss"],
        "final_train_accuracy": last["train_accuracy"],
        "epochs": params.train.epochs,
        "seconds": round(history.seconds, 1),
        "parameters": model.num_parameters(),
        "device": device.type,
        "pretrained": pretrained,
        **grad_norm_summary([r["grad_norm"] for r in history.steps], params.train.grad_clip),
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
            "class_names": CLASS_NAMES,
            "snapshots": snapshots,
        },
    )
    write_json(metrics_path, metrics)
    return metrics
