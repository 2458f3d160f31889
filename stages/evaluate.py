"""Stage evaluate: validation/test scores, confusion data and the acceptance checks.

Each split is scored whole and on its unseen part (texts not in train, read from the raw
splits), with 95% intervals, and the model is compared review by review with the n-gram
baseline strongest on unseen validation (``vs_best_baseline``).

Fails, after writing the metrics, when a math check (attention parity, causal leak,
padding leak) fails: those are properties of the code. Validation accuracy below its
threshold only clears ``acceptance.passed``: a weak ablation is still a result to compare.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import torch

from scratchformer.analysis import acceptance
from scratchformer.analysis.baseline import read_predictions
from scratchformer.analysis.evaluation import confusion_table, parts, per_class_scores, predict_logits, scores
from scratchformer.analysis.scoring import scored, split_scores, versus_best
from scratchformer.config import Params
from scratchformer.data.ingest import read_column
from scratchformer.data.short_reviews import read_short_reviews
from scratchformer.data.splits import in_train
from scratchformer.data.tokenization import load_saved_tokenizer
from scratchformer.data.tokenized_split import TokenizedSplit, read_class_names, read_tokenized
from scratchformer.device import pick_device
from scratchformer.files import write_json
from scratchformer.model.checkpoint import load_checkpoint
from scratchformer.model.classifier import Classifier
from stages import stage

PARAMS = ("seed", "acceptance", "train.device", "tokenizer.max_len", "short_reviews")


def run(
    params: Params,
    model_path: Path,
    tokenized_dir: Path,
    tokenizer_dir: Path,
    raw_dir: Path,
    baseline_dir: Path,
    metrics_path: Path,
    confusion_dir: Path,
) -> dict:
    """Accuracy/F1 on validation and test, whole and unseen, against the best baseline; confusion data; checks.

    ``raw_dir``: the raw splits, whose texts say which reviews are in train;
    ``baseline_dir``: the baselines' predictions (the baseline stage's); ``tokenizer_dir``:
    the tokenizer that encodes the short reviews (``params.short_reviews``), as the splits were.

    The metrics are written whatever the checks say; then a failed math check raises
    :class:`~scratchformer.analysis.acceptance.AcceptanceError`. Everything runs on the training
    device (``train.device``); the scores are exact counts, the same on any device.
    """
    device = pick_device(params.train.device)
    model, _ = load_checkpoint(model_path, device)
    result: dict = {}
    class_names = read_class_names(tokenized_dir)
    if model.config.num_classes != len(class_names):
        raise ValueError(
            f"{model_path} predicts {model.config.num_classes} classes but {tokenized_dir} has "
            f"{len(class_names)} ({', '.join(class_names)}); run `dvc repro`"
        )
    splits = {name: read_tokenized(tokenized_dir / name) for name in ("validation", "test")}
    seen, baselines = _seen_and_baselines(splits, tokenized_dir, raw_dir, baseline_dir)
    blend_parts = parts(model)  # what carries a blend's number (none without an NB member)
    predictions = {}
    for name, split in splits.items():
        split_result = _score_split(model, split, class_names, seen[name], blend_parts, device)
        result[name] = split_result.metrics
        write_json(confusion_dir / f"{name}.json", split_result.confusion)
        predictions[name] = split_result.predicted
    labels = {name: split.labels.numpy() for name, split in splits.items()}
    for name, comparison in versus_best(predictions, labels, seen, baselines, params.seed).items():
        result[name]["vs_best_baseline"] = comparison
    short = None if params.short_reviews is None else read_short_reviews(params.short_reviews, class_names)
    if short is not None:
        result["short"] = _score_short(short, tokenizer_dir, params.tokenizer.max_len, model, blend_parts, device)
    checks = _acceptance_checks(model, splits["validation"], result["validation"]["accuracy"], params, device)
    result["acceptance"] = checks
    write_json(metrics_path, result)
    failed = acceptance.failures(checks, dataclasses.asdict(params.acceptance))
    if failed:
        raise acceptance.AcceptanceError("; ".join([*failed, f"metrics written to {metrics_path}"]))
    return result


def _seen_and_baselines(
    splits: dict[str, TokenizedSplit], tokenized_dir: Path, raw_dir: Path, baseline_dir: Path
) -> tuple[dict[str, np.ndarray], dict[str, dict[str, np.ndarray]]]:
    """Per split, which reviews are in train (by text) and the baselines' predictions for it.

    The raw split must hold the tokenized split's rows, label for label: the unseen part and
    the comparison with the baselines pair reviews by row.
    """
    train_texts = read_column(raw_dir, "train", "text")
    seen, baselines = {}, {}
    for name, split in splits.items():
        labels = read_column(raw_dir, name, "label").to_numpy()
        if len(labels) != len(split.labels) or (labels != split.labels.numpy()).any():
            raise ValueError(f"{raw_dir}/{name}.parquet and {tokenized_dir}/{name} hold other rows; run `dvc repro`")
        seen[name] = in_train(train_texts, read_column(raw_dir, name, "text"))
        baselines[name] = read_predictions(baseline_dir, name, len(labels))
    return seen, baselines


class ScoredSplit(NamedTuple):
    """One split scored: its metrics, its confusion table and the class the model predicts for each review."""

    metrics: dict
    confusion: dict
    predicted: np.ndarray  # (N,)


def _score_split(
    model: Classifier,
    split: TokenizedSplit,
    class_names: list[str],
    seen: np.ndarray,
    blend_parts: dict[str, torch.nn.Module],
    device: torch.device,
) -> ScoredSplit:
    """Accuracy, F1 and loss; the same on the unseen part with intervals; each blend part on its own.

    The confusion table carries the per-class scores (``per_class``: precision, recall, F1, support).
    """
    logits = predict_logits(model, split, batch_size=256, device=device)
    labels, predicted = split.labels.numpy(), logits.argmax(dim=1).numpy()
    s = scores(logits, split.labels)
    metrics = {"accuracy": s["accuracy"], "f1": s["f1"], "loss": s["loss"]}
    metrics |= split_scores(predicted, labels, seen, len(class_names))
    confusion = confusion_table(logits, split.labels, class_names)
    # Per-class precision, recall and F1 sit beside the counts they come from, not in the metrics:
    # with them every class adds four columns to `dvc exp show`, which then no longer fits a screen.
    confusion["per_class"] = per_class_scores(confusion["counts"], class_names)
    for part, module in blend_parts.items():
        part_logits = predict_logits(module, split, 256, device)
        metrics[part] = split_scores(part_logits.argmax(dim=1).numpy(), labels, seen, len(class_names))
    return ScoredSplit(metrics, confusion, predicted)


def _score_short(
    short: pd.DataFrame,
    tokenizer_dir: Path,
    max_len: int,
    model: Classifier,
    blend_parts: dict[str, torch.nn.Module],
    device: torch.device,
) -> dict:
    """Accuracy (with its interval), F1 and n on the short reviews; each blend part's own beside them."""
    labels = short["label"].to_numpy()
    split = TokenizedSplit.encoded(load_saved_tokenizer(tokenizer_dir), short["text"].tolist(), labels, max_len)
    num_classes = model.config.num_classes

    def score(module: torch.nn.Module) -> dict:
        return scored(predict_logits(module, split, 256, device).argmax(dim=1).numpy(), labels, num_classes)

    return score(model) | {part: score(module) for part, module in blend_parts.items()}


def _acceptance_checks(
    model: Classifier, validation: TokenizedSplit, validation_accuracy: float, params: Params, device: torch.device
) -> dict:
    """The math checks (attention parity, causal and padding leak); ``passed``: all of them and the accuracy bar met."""
    chosen = acceptance.padding_sample(validation.lengths.tolist())
    leak = acceptance.padding_leak(model, [validation.sequence(i) for i in chosen])
    checks = {
        "attention_max_abs_err": acceptance.attention_max_abs_err(seed=params.seed, device=device),
        "causal_mask_leak": acceptance.causal_mask_leak(seed=params.seed, device=device),
        "padding_leak": leak.value,
        "padding_leak_checked": leak.checked,
        "validation_accuracy": validation_accuracy,
    }
    limits = params.acceptance
    checks["passed"] = bool(
        not acceptance.failures(checks, dataclasses.asdict(limits))
        and checks["validation_accuracy"] >= limits.validation_accuracy
    )
    return checks


def say(result: dict) -> str:
    checks = result["acceptance"]
    note = (
        ""
        if checks["passed"]
        else "\nacceptance: validation accuracy is below acceptance.validation_accuracy (passed: false)"
    )
    return json.dumps(result, indent=2) + note


if __name__ == "__main__":
    stage(run, say)
