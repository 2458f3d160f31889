"""Training and prediction throughput of this project's classifier against its peers, same batches, same run.

The peers are what a user would otherwise pick, built at the same sizes (width d_model,
depth, heads, feed-forward size, vocabulary, positions, classes, dropout), from random
initialisation:

- ``bert``: ``transformers.BertForSequenceClassification`` from a ``BertConfig`` (learned
  positions, Post-LN, the [CLS] pooler), called with the non-PAD attention mask;
- ``torch``: token embedding + sinusoidal positions + ``nn.TransformerEncoder`` (Pre-LN,
  GELU) + mean pooling over the non-PAD tokens + a linear head.

``ours`` is :class:`~scratchformer.model.classifier.TransformerClassifier` built from the
model section of params.yaml (``default``) or with a recipe's overrides on top
(``transformer``: max_len 128, attention pooling, a 1,048,576-row hashed n-gram table, …). The
peers have no n-gram table: at the recipe's sizes ours carries that table's lookups and
updates and they do not.

The batches are real: the train split of ``data.source`` (ChnSentiCorp) read and
tokenized by the project's own code (``tokenizer.name``, ``tokenizer.max_len``), shuffled
and batched as training batches them (``train.batch_size``, ``train.bucket_by_length``:
each batch padded to its own longest text). Every model sees the same batches.

- train samples/s: forward + cross-entropy + backward + the optimizer step (the
  project's parameter groups, weight decay and fused AdamW, for every model alike; ours updates its
  n-gram table as the recipe trains it: with ``train.sparse_ngrams``, lazy AdamW on the
  rows a batch used, else dense AdamW on every row);
- predict texts/s: the forward pass in eval mode under ``torch.no_grad()``.

Each mode (``eager``; ``compiled``: ``torch.compile`` of the model with Inductor's defaults;
``compiled-aten-random``: the same with Inductor's ``fallback_random``, so that every model's
dropout draws its numbers with ATen's generator, as ours does in both compiled modes) builds the three
models afresh, warms each up, then times passes over the same batches in turn, model after
model, ``--repeats`` times; a rate is the median pass's. A compiled model's
``compile_seconds`` is what its warm-up took beyond the same steps at its measured rates.
A model whose compilation fails is reported with its error instead of rates.

On a machine that other work shares, set ``OMP_WAIT_POLICY=PASSIVE``: OpenMP threads that
spin while they wait for each other lose their cores to the other work, and a 2-thread step
then takes up to ten times as long, in bursts that no median hides. The record says
which policy was in force.

Run from the repository root (the data and tokenizer reachable, as for ``dvc repro``):

    python benchmarks/peers.py [--recipes default transformer] [--modes eager compiled …] [--threads 2]
    python benchmarks/peers.py --tiny          # 2 steps of 4 texts: checks that it runs

Prints the rates and the ratios ours / peer (of the median passes, and their range over the
passes, each pass of ours paired with the peer's pass beside it); writes
benchmarks/results/peers.json.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import torch
import torch.nn.functional as F
import transformers
from torch import Tensor, nn

from scratchformer.config import ModelConfig, Params, TrainConfig, load_params
from scratchformer.data.ingest import load_corpus
from scratchformer.data.tokenization import encode_flat, load_tokenizer
from scratchformer.data.tokenized_split import TokenizedSplit, batches
from scratchformer.files import write_json
from scratchformer.model.classifier import TransformerClassifier, eval_mode
from scratchformer.model.positional import SinusoidalPositionalEncoding
from scratchformer.reporting import recipes
from scratchformer.train.objective import Classification
from scratchformer.train.optim import Settings, optimizers_and_average

OUT = Path("benchmarks/results/peers.json")
MODES = {  # mode -> the Inductor settings it compiles with (None: eager)
    "eager": None,
    "compiled": {},
    "compiled-aten-random": {"fallback_random": True},
}
MODELS = ("ours", "bert", "torch")
PEERS = MODELS[1:]


class TorchEncoderClassifier(nn.Module):
    """Embedding + sinusoidal positions + ``nn.TransformerEncoder`` + masked mean pooling + linear head."""

    def __init__(self, config: ModelConfig, vocab_size: int, pad_id: int) -> None:
        super().__init__()
        C = config.d_model
        self.pad_id = pad_id
        self.embed = nn.Embedding(vocab_size, C, padding_idx=pad_id)
        self.position = SinusoidalPositionalEncoding(C, config.max_len)
        self.dropout = nn.Dropout(config.dropout)
        layer = nn.TransformerEncoderLayer(
            C, config.n_heads, config.ff_dim, config.dropout, activation="gelu", batch_first=True, norm_first=True
        )
        # Nested tensors apply only to Post-LN layers; saying so keeps PyTorch from warning.
        self.encoder = nn.TransformerEncoder(layer, config.n_layers, norm=nn.LayerNorm(C), enable_nested_tensor=False)
        self.head = nn.Linear(C, config.num_classes)

    def forward(self, input_ids: Tensor) -> Tensor:
        pad = input_ids == self.pad_id  # (B, T), True = PAD
        x = self.dropout(self.position(self.embed(input_ids)))  # (B, T, C)
        x = self.encoder(x, src_key_padding_mask=pad)  # (B, T, C)
        keep = (~pad).unsqueeze(-1).to(x.dtype)  # (B, T, 1)
        pooled = (x * keep).sum(1) / keep.sum(1).clamp(min=1)  # (B, C)
        return self.head(pooled)  # (B, K)


class BertClassifier(nn.Module):
    """``BertForSequenceClassification`` at our sizes, called as ours is: ids (B, T) in, logits (B, K) out."""

    def __init__(self, config: ModelConfig, vocab_size: int, pad_id: int) -> None:
        super().__init__()
        self.pad_id = pad_id
        bert_config = transformers.BertConfig(
            vocab_size=vocab_size,
            hidden_size=config.d_model,
            num_hidden_layers=config.n_layers,
            num_attention_heads=config.n_heads,
            intermediate_size=config.ff_dim,
            hidden_act="gelu",
            hidden_dropout_prob=config.dropout,
            attention_probs_dropout_prob=config.dropout,
            max_position_embeddings=config.max_len,
            num_labels=config.num_classes,
            pad_token_id=pad_id,
        )
        self.bert = transformers.BertForSequenceClassification(bert_config)

    def forward(self, input_ids: Tensor) -> Tensor:
        return self.bert(input_ids=input_ids, attention_mask=(input_ids != self.pad_id).long()).logits


BUILDERS = {"ours": TransformerClassifier, "bert": BertClassifier, "torch": TorchEncoderClassifier}


def real_batches(params: Params, n: int) -> tuple[list[tuple[Tensor, Tensor]], int, int, list[str]]:
    """The first ``n`` training batches of the train split, as training shuffles and pads them.

    Returns the batches, the vocabulary size, the PAD id and the class names.
    """
    corpus = load_corpus(params.data, params.seed)
    train = corpus.splits[0].table
    tokenizer = load_tokenizer(params.tokenizer.name, params.tokenizer.revision, params.tokenizer.lowercase)
    flat = encode_flat(tokenizer, train["text"], params.tokenizer.max_len)
    split = TokenizedSplit(flat.tokens, flat.offsets, torch.tensor(train["label"].to_numpy()))
    generator = torch.Generator().manual_seed(params.seed)
    pad_id = tokenizer.pad_token_id
    shuffled = batches(split, params.train.batch_size, pad_id, generator, bucket=params.train.bucket_by_length)
    found = [b for _, b in zip(range(n), shuffled, strict=False)]
    if len(found) < n:
        raise SystemExit(f"{params.data.source}: {len(found)} training batches, {n} needed (fewer --steps)")
    return found, len(tokenizer), pad_id, corpus.classes.names


class Contender:
    """One model under test, its optimizer, and the seconds its timed passes took."""

    def __init__(self, name: str, model: nn.Module, optimizers: list[torch.optim.Optimizer]) -> None:
        self.name, self.model, self.optimizers = name, model, optimizers
        self.train_seconds: list[float] = []
        self.predict_seconds: list[float] = []
        self.warmup_seconds = 0.0
        self.error: str | None = None  # why its warm-up (a compilation) failed

    def train_pass(self, data: list[tuple[Tensor, Tensor]]) -> float:
        """Seconds for one training step on each batch of ``data``."""
        self.model.train()
        start = time.perf_counter()
        for ids, labels in data:
            loss = F.cross_entropy(self.model(ids), labels)
            for optimizer in self.optimizers:
                optimizer.zero_grad(set_to_none=True)
            loss.backward()
            for optimizer in self.optimizers:
                optimizer.step()
        return time.perf_counter() - start

    def predict_pass(self, data: list[tuple[Tensor, Tensor]]) -> float:
        """Seconds for the eval-mode forward pass on each batch of ``data``."""
        with eval_mode(self.model), torch.no_grad():
            start = time.perf_counter()
            for ids, _ in data:
                self.model(ids)
            return time.perf_counter() - start


def optimizers(model: nn.Module, train: TrainConfig) -> list[torch.optim.Optimizer]:
    """The optimizers training gives ``model`` (:func:`~scratchformer.train.optim.optimizers_and_average`), no EMA.

    AdamW over the project's parameter groups; with ``train.sparse_ngrams``, lazy AdamW on the
    rows of ours' n-gram table a batch used, else the table is one more dense parameter of
    AdamW's. The peers have no table: AdamW alone.
    """
    settings = dataclasses.replace(Settings.training(train), ema_decay=0.0)
    found, _ = optimizers_and_average(Classification(model), settings, torch.device("cpu"))
    return found


def contenders(
    config: ModelConfig, vocab_size: int, pad_id: int, compiled: bool, train: TrainConfig
) -> list[Contender]:
    """The three models, each from seed 0, compiled if asked, with the optimizers training uses."""
    if compiled:
        torch._dynamo.reset()  # no compiled code or recompile count carried over from an earlier run
    found = []
    for name in MODELS:
        torch.manual_seed(0)
        model = BUILDERS[name](config, vocab_size, pad_id)
        found.append(Contender(name, torch.compile(model) if compiled else model, optimizers(model, train)))
    return found


def measure(models: list[Contender], warm: list, timed: list, repeats: int) -> dict[str, dict[str, float | str | None]]:
    """Warm every model up on ``warm``, then time ``repeats`` interleaved passes over ``timed``.

    A model whose warm-up raises (a compilation that fails) is reported with its error and
    left out of the timed passes.
    """
    for c in models:
        start = time.perf_counter()
        try:
            c.train_pass(warm)
            c.predict_pass(warm)
        except Exception as err:  # any failure to compile is a result to report, not a reason to stop
            first_line = (str(err).strip().splitlines() or [""])[0]
            c.error = f"{type(err).__name__}: {first_line}"
        c.warmup_seconds = time.perf_counter() - start
    live = [c for c in models if c.error is None]
    for _ in range(repeats):
        for c in live:
            c.train_seconds.append(c.train_pass(timed))
        for c in live:
            c.predict_seconds.append(c.predict_pass(timed))
    n_timed, n_warm = sum(len(y) for _, y in timed), sum(len(y) for _, y in warm)
    results = {}
    for c in models:
        if c.error is not None:
            results[c.name] = {"train_samples_per_s": None, "predict_texts_per_s": None, "error": c.error}
            continue
        train = n_timed / statistics.median(c.train_seconds)
        predict = n_timed / statistics.median(c.predict_seconds)
        beyond = c.warmup_seconds - n_warm / train - n_warm / predict  # the warm-up's extra: tracing, compiling
        results[c.name] = {
            # significant digits, not decimals: the ratios are taken from these, and a slow tiny pass
            # (a few samples a second on a busy machine) would lose a percent to rounding at 0.1
            "train_samples_per_s": float(f"{train:.5g}"),
            "predict_texts_per_s": float(f"{predict:.5g}"),
            "compile_seconds": round(max(beyond, 0.0), 1),
            "error": None,
            "train_seconds": [float(f"{s:.6g}") for s in c.train_seconds],
            "predict_seconds": [float(f"{s:.6g}") for s in c.predict_seconds],
        }
    return results


SECONDS = {"train_samples_per_s": "train_seconds", "predict_texts_per_s": "predict_seconds"}


def ratios(rates: dict[str, dict]) -> dict[str, dict[str, float | None]]:
    """ours / peer for training and prediction, from the rates as written (None where either is missing)."""
    out = {}
    for what in SECONDS:
        ours = rates["ours"][what]
        out[what] = {peer: round(ours / rates[peer][what], 3) if ours and rates[peer][what] else None for peer in PEERS}
    return out


def ratio_ranges(rates: dict[str, dict]) -> dict[str, dict[str, list[float] | None]]:
    """The lowest and highest ours / peer over the timed passes, each pass's ratio from adjacent passes.

    The passes of the models interleave, so pass i of ours and pass i of a peer ran moments
    apart: their ratio is one paired measurement, and the range over the passes is how far
    the machine moved a ratio that the medians give as one number.
    """
    out = {}
    for what, seconds in SECONDS.items():
        ours = rates["ours"].get(seconds)
        out[what] = {}
        for peer in PEERS:
            theirs = rates[peer].get(seconds)
            paired = [t / o for o, t in zip(ours, theirs, strict=True)] if ours and theirs else []
            out[what][peer] = [round(min(paired), 3), round(max(paired), 3)] if paired else None
    return out


def sizes(config: ModelConfig, params: Params) -> dict:
    """What a run's three models share, and what only ours has."""
    keys = ("d_model", "n_heads", "n_layers", "ff_dim", "max_len", "dropout", "pooling", "ngram_max", "ngram_buckets")
    return {
        **{k: getattr(config, k) for k in keys},
        "batch_size": params.train.batch_size,
        "bucket_by_length": params.train.bucket_by_length,
        "sparse_ngrams": params.train.sparse_ngrams,
        "ngram_decay": params.train.ngram_decay,
    }


@contextlib.contextmanager
def cold_compile_cache() -> Iterator[None]:
    """Compile into an empty Inductor cache, so ``compile_seconds`` is a first run's, not a cache hit's."""
    before = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    with tempfile.TemporaryDirectory() as folder:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = folder
        try:
            yield
        finally:
            if before is None:
                del os.environ["TORCHINDUCTOR_CACHE_DIR"]
            else:
                os.environ["TORCHINDUCTOR_CACHE_DIR"] = before


def run(args: argparse.Namespace, say: Callable[[str], None] = print) -> dict:
    """Every recipe x mode asked for; the record written to ``args.out``."""
    torch.set_num_threads(args.threads)
    base = load_params(args.params)
    record = {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "threads": torch.get_num_threads(),
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "steps": args.steps,
        "warmup": args.warmup,
        "repeats": args.repeats,
        "batches": f"the train split of {args.source or base.data.source}, tokenized by "
        f"{args.tokenizer or base.tokenizer.name}, batched as in training",
        "runs": [],
    }
    for recipe in args.recipes:
        params = recipe_params(base, recipe, args)
        data, vocab_size, pad_id, classes = real_batches(params, args.warmup + args.steps)
        config = params.model.for_classes(classes)
        warm, timed = data[: args.warmup], data[args.warmup :]
        tokens = sum(int((ids != pad_id).sum()) for ids, _ in timed) / sum(len(y) for _, y in timed)
        say(f"{recipe}: {sizes(config, params)}, {tokens:.0f} tokens per text on average")
        for mode in args.modes:
            inductor = MODES[mode]
            models = contenders(config, vocab_size, pad_id, inductor is not None, params.train)
            with torch._inductor.config.patch(inductor or {}):  # compiling happens in the warm-up
                rates = measure(models, warm, timed, args.repeats)
            entry = {"recipe": recipe, "mode": mode, "sizes": sizes(config, params), "models": rates}
            entry["ratios"] = ratios(rates)
            entry["ratio_ranges"] = ratio_ranges(rates)
            entry["mean_tokens"] = round(tokens, 1)
            record["runs"].append(entry)
            write_json(args.out, record)  # after every run: a long benchmark stopped early keeps what it measured
            for name, r in rates.items():
                shown = r["error"] or (
                    f"train {r['train_samples_per_s']:8.1f} samples/s  predict {r['predict_texts_per_s']:8.1f} texts/s"
                    + (f"  compile {r['compile_seconds']:.1f} s" if inductor is not None else "")
                )
                say(f"  {mode:20s} {name:5s} {shown}")
            for what, label in (("train_samples_per_s", "train"), ("predict_texts_per_s", "predict")):
                line = "  ".join(
                    f"ours/{p} {entry['ratios'][what][p] or float('nan'):.2f}x"
                    + (
                        "  (passes {:.2f}-{:.2f})".format(*entry["ratio_ranges"][what][p])
                        if entry["ratio_ranges"][what][p]
                        else ""
                    )
                    for p in PEERS
                )
                say(f"  {mode:20s} {label:7s} {line}")
    say(f"wrote {args.out}")
    return record


def recipe_params(base: Params, recipe: str, args: argparse.Namespace) -> Params:
    """``recipe`` applied to ``base``, then the command line's --source, --tokenizer and --batch-size."""
    params = recipes.applied(base, recipe)
    if args.source:
        params = dataclasses.replace(params, data=dataclasses.replace(params.data, source=args.source))
    if args.tokenizer:
        params = dataclasses.replace(params, tokenizer=dataclasses.replace(params.tokenizer, name=args.tokenizer))
    if args.batch_size:
        params = dataclasses.replace(params, train=dataclasses.replace(params.train, batch_size=args.batch_size))
    return params


def add_shared_arguments(parser: argparse.ArgumentParser, out: Path, repeats: int) -> None:
    """The flags this benchmark shares with benchmarks/compile_cost.py: threads, batches, inputs, output."""
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default: %(default)s)")
    parser.add_argument("--steps", type=int, default=20, help="batches per timed pass (default: %(default)s)")
    parser.add_argument("--warmup", type=int, default=3, help="batches to warm up (and compile) on")
    parser.add_argument("--repeats", type=int, default=repeats, help="timed passes per model; the median counts")
    parser.add_argument("--batch-size", type=int, help="instead of train.batch_size")
    parser.add_argument("--tiny", action="store_true", help="2 steps of 4 texts, 1 repeat: checks that it runs")
    parser.add_argument("--params", type=Path, default=Path("params.yaml"))
    parser.add_argument("--source", help="instead of data.source (a hub id or a folder)")
    parser.add_argument("--tokenizer", help="instead of tokenizer.name")
    parser.add_argument("--out", type=Path, default=out)


def parsed(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """The arguments, with --tiny's sizes put in."""
    args = parser.parse_args(argv)
    if args.tiny:
        args.steps, args.warmup, args.repeats, args.batch_size = 2, 1, 1, 4
    return args


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipes", nargs="+", default=["default", "transformer"], help="default: params.yaml")
    parser.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES))
    add_shared_arguments(parser, OUT, repeats=5)
    return parsed(parser, argv)


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    with cold_compile_cache() if any(MODES[m] is not None for m in args.modes) else contextlib.nullcontext():
        run(args)


if __name__ == "__main__":
    main()
