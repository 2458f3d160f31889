"""Where a training epoch's time goes: one epoch of a recipe under ``torch.profiler``, grouped by purpose.

For each recipe asked for (``default``: params.yaml as it is; ``transformer``: with
``recipes/transformer.yaml`` on top), the train split and the validation split are read and
tokenized by the project's own code (timed: the work before training), the model is built as
the train stage builds it, and the training loop (:class:`~scratchformer.train.loop.Loop`, the
one every training stage uses) runs one epoch followed by the validation that ends every epoch
of ``fit``: first unprofiled, for the epoch's wall time, then a second time under the profiler.
The profiled epoch's time is split into:

- data and collation: gathering and padding each batch (``TokenizedSplit.batch``);
- token dropout: the step's corruption of the batch (``train.token_dropout``);
- embedding and n-gram lookup: token embedding, hashing the n-grams and reading their table,
  positions;
- attention, feed-forward: the blocks' two halves, forward only;
- rest of forward: LayerNorms, pooling, head and loss;
- backward into the embedding tables, and the rest of backward (the autograd engine's own
  events, grouped by the function they run);
- optimizer: AdamW's ``zero_grad`` and ``step``;
- EMA: the moving average's update (``train.ema_decay``);
- rest of the step: gradient norms and clipping, the logged values, the lr schedule;
- validation: scoring the validation split and the attention diagnostics, once per epoch.

The profiler adds a few microseconds to every operation it records, so the profiled epoch is
slower than the unprofiled one; the shares are what to read. The stages that run around
training (download, baseline, evaluate, render) are not measured here:
``benchmarks/pipeline_time.py`` times the whole pipeline.

On a machine that other work shares, set ``OMP_WAIT_POLICY=PASSIVE`` (see benchmarks/peers.py).

    python benchmarks/profile_epoch.py [--recipes default transformer] [--threads 2]

Prints the table; writes benchmarks/results/profile_epoch.json.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import torch
from torch import Tensor, nn
from torch.autograd.profiler import record_function

from scratchformer.analysis.evaluation import predict_logits, scores
from scratchformer.config import Params, load_params
from scratchformer.data.ingest import load_corpus
from scratchformer.data.tokenization import encode_flat, load_tokenizer
from scratchformer.data.tokenized_split import TokenizedSplit, batches
from scratchformer.files import write_json
from scratchformer.model.classifier import TransformerClassifier
from scratchformer.reporting import recipes
from scratchformer.train.classify import seed_everything
from scratchformer.train.diagnostics import attention_diagnostics
from scratchformer.train.loop import Loop
from scratchformer.train.objective import Classification
from scratchformer.train.optim import Settings

OUT = Path("benchmarks/results/profile_epoch.json")
EMBEDDING, ATTENTION, FEED_FORWARD, FORWARD = "embedding and n-gram lookup", "attention", "feed-forward", "forward"
DATA, DROPOUT, EMA, VALIDATION = "data and collation", "token dropout", "EMA", "validation"
CATEGORIES = (
    DATA,
    DROPOUT,
    EMBEDDING,
    ATTENTION,
    FEED_FORWARD,
    "rest of forward (norms, pooling, head, loss)",
    "backward into the embedding tables",
    "rest of backward",
    "optimizer",
    EMA,
    "rest of the step (clipping, logged values, lr schedule)",
    VALIDATION,
)
# Random draws for dropout masks (nn.Dropout's bernoulli_, model/dropout.py's uniform_), inside
# the parts above (attention, embedding, rest of forward): a share of the epoch, not a part of it.
DRAWS, DRAW_OPS = "dropout masks drawn (within the parts above)", ("aten::bernoulli_", "aten::uniform_")
BACKWARD = "autograd::engine::evaluate_function: "  # the profiler's name for each backward function run


class ProfiledSplit(TokenizedSplit):
    """A split whose batch gathering shows in the profile as "data and collation"."""

    def batch(self, index, pad_id: int) -> Tensor:
        with record_function(DATA):
            return super().batch(index, pad_id)


def traced(function: Callable, name: str) -> Callable:
    """``function``, each call of it a range named ``name`` in the profile."""

    def call(*args, **kwargs):
        with record_function(name):
            return function(*args, **kwargs)

    return call


def annotate(module: nn.Module, name: str) -> list:
    """Make every forward call of ``module`` a range named ``name``; the hook handles, to remove them."""
    open_ranges = []

    def enter(*_):
        open_ranges.append(record_function(name).__enter__())

    def leave(*_):
        open_ranges.pop().__exit__(None, None, None)

    return [module.register_forward_pre_hook(enter), module.register_forward_hook(leave)]


def prepared(params: Params, source: str | None, tokenizer_name: str | None):
    """The train and validation splits, tokenized; the model as the train stage builds it; seconds taken.

    Returns ``(train, validation, model, {"read and check the corpus": s, "tokenize": s})``.
    """
    start = time.perf_counter()
    corpus = load_corpus(params.data if source is None else replace(params.data, source=source), params.seed)
    read = time.perf_counter() - start
    tokenizer = load_tokenizer(tokenizer_name or params.tokenizer.name, params.tokenizer.revision)
    splits = []
    for split, kind in zip(corpus.splits[:2], (ProfiledSplit, TokenizedSplit), strict=True):
        flat = encode_flat(tokenizer, split.table["text"], params.tokenizer.max_len)
        splits.append(kind(flat.tokens, flat.offsets, torch.tensor(split.table["label"].to_numpy())))
    tokenize = time.perf_counter() - start - read
    seed_everything(params.seed)
    model = TransformerClassifier(
        params.model.for_classes(corpus.classes.names), len(tokenizer), tokenizer.pad_token_id
    )
    return *splits, model, {"read and check the corpus": read, "tokenize": tokenize}


def validate(model: TransformerClassifier, validation: TokenizedSplit, batch_size: int) -> None:
    """What ends every epoch of ``fit``: the validation scores and the attention diagnostics."""
    scores(predict_logits(model, validation, batch_size * 4), validation.labels)
    sample, _ = next(iter(batches(validation, 64, model.pad_id)))
    attention_diagnostics(model, sample)


def profile(params: Params, source: str | None, tokenizer_name: str | None) -> dict:
    """One recipe: the epoch unprofiled, then profiled and split into :data:`CATEGORIES` (seconds)."""
    train, validation, model, before = prepared(params, source, tokenizer_name)
    objective = Classification(model, params.train.label_smoothing, params.train.token_dropout)
    objective.prepare = traced(objective.prepare, DROPOUT)
    steps = -(-len(train) // params.train.batch_size)
    loop = Loop(objective, Settings.training(params.train), params.seed, steps, torch.device("cpu"))
    if loop.ema is not None:
        loop.ema.update_parameters = traced(loop.ema.update_parameters, EMA)

    start = time.perf_counter()
    loop.run_epoch(train)
    epoch = time.perf_counter() - start
    validate(loop.evaluated, validation, params.train.batch_size)
    validation_seconds = time.perf_counter() - start - epoch

    hooks = annotate(objective, FORWARD)
    for module in (model.embed, model.ngrams, model.position):
        hooks += annotate(module, EMBEDDING) if module is not None else []
    model.ngram_orders = traced(model.ngram_orders, EMBEDDING)  # hashing the n-grams, before the lookup
    for block in model.blocks:
        hooks += annotate(block.attn, ATTENTION) + annotate(block.ffn, FEED_FORWARD)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profiler:
        start = time.perf_counter()
        loop.run_epoch(train)
        profiled = time.perf_counter() - start
        for hook in hooks:  # validation's forward passes are validation's
            hook.remove()
        del model.ngram_orders
        with record_function(VALIDATION):
            validate(loop.evaluated, validation, params.train.batch_size)
    seconds = grouped(profiler.key_averages(), profiled)
    return {
        "steps": steps,
        "epoch_seconds": round(epoch, 1),
        "validation_seconds": round(validation_seconds, 1),
        "profiled_epoch_seconds": round(profiled, 1),
        "before_training": {name: round(s, 1) for name, s in before.items()},
        "categories": {name: round(seconds[name], 3) for name in CATEGORIES},
        "within": {DRAWS: round(seconds[DRAWS], 3)},
    }


def grouped(events, epoch: float) -> dict[str, float]:
    """Seconds per category from the profiler's totals by name; the rests by difference."""
    total: dict[str, float] = {}
    for event in events:
        total[event.key] = total.get(event.key, 0.0) + event.cpu_time_total / 1e6  # µs -> s
    backward = {k: v for k, v in total.items() if k.startswith(BACKWARD)}
    tables = sum(v for k, v in backward.items() if "EmbeddingBackward" in k)
    optimizer = sum(v for k, v in total.items() if k.startswith("Optimizer."))  # zero_grad and step
    named = {name: total.get(name, 0.0) for name in (DATA, DROPOUT, EMBEDDING, ATTENTION, FEED_FORWARD, EMA)}
    forward = total.get(FORWARD, 0.0)
    out = {
        **named,
        "rest of forward (norms, pooling, head, loss)": forward
        - named[EMBEDDING]
        - named[ATTENTION]
        - named[FEED_FORWARD],
        "backward into the embedding tables": tables,
        "rest of backward": sum(backward.values()) - tables,
        "optimizer": optimizer,
        VALIDATION: total.get(VALIDATION, 0.0),
    }
    step = sum(named[k] for k in (DATA, DROPOUT, EMA)) + forward + sum(backward.values()) + optimizer
    out["rest of the step (clipping, logged values, lr schedule)"] = epoch - step
    out[DRAWS] = sum(total.get(op, 0.0) for op in DRAW_OPS)  # already counted in the parts above
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipes", nargs="+", default=["default", "transformer"], help="default: params.yaml")
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default: %(default)s)")
    parser.add_argument("--params", type=Path, default=Path("params.yaml"))
    parser.add_argument("--source", help="instead of data.source (a hub id or a folder)")
    parser.add_argument("--tokenizer", help="instead of tokenizer.name")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    record = {
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "runs": [],
    }
    base = load_params(args.params)
    for name in args.recipes:
        run = {"recipe": name, **profile(recipes.applied(base, name), args.source, args.tokenizer)}
        record["runs"].append(run)
        write_json(args.out, record)
        print(
            f"{name}: {run['steps']} steps, epoch {run['epoch_seconds']} s unprofiled, "
            f"{run['profiled_epoch_seconds']} s profiled; validation {run['validation_seconds']} s"
        )
        for category, seconds in run["categories"].items():
            print(f"  {category:58s} {seconds:7.2f} s")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
