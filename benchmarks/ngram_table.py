"""What the hashed n-gram table costs a training step, by table size, same run.

For tables of 65,536, 262,144 and 1,048,576 rows (``model.ngram_buckets``) with
bigrams and trigrams (``model.ngram_max`` 3), one training step of the classifier
at d_model 64 on a batch of 32 texts of 120 tokens, split into its parts:

- forward + backward, with the table read once for all orders (what the model
  does) and once per order (the earlier form: one dense table-sized gradient per
  order, zeroed and then summed);
- the fused AdamW step and the EMA update, which touch every row every step (the
  table decays at ``train.ngram_decay`` 0.3, as in the ``transformer`` recipe);
- and with ``train.sparse_ngrams``: the table's gradient sparse, its rows updated by
  lazy AdamW (only the rows the batch read; ``scratchformer.train.lazy``), the rest by
  AdamW as before.

Prints milliseconds per step and the ratios per-order / one lookup and dense / sparse.
Run from the
repository root:

    python benchmarks/ngram_table.py [--steps 10]

Writes nothing: the ratios are for reading, measured in the same run.
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

from scratchformer.config import ModelConfig
from scratchformer.model.classifier import TransformerClassifier
from scratchformer.model.ngrams import HashedNgramEmbedding, ngram_ids_upto
from scratchformer.train.lazy import LazyAdamW, dense_only, pay_before_reading
from scratchformer.train.optim import adamw, ngram_tables, parameter_groups, sparse_tables

VOCAB = 21128


def per_order(self: HashedNgramEmbedding, input_ids, orders=None):
    """The earlier forward: one lookup, hence one dense gradient, per order."""
    orders = orders if orders is not None else ngram_ids_upto(input_ids, self.max_n, self.buckets, self.pad_id)
    return sum(self.table(ids) for ids in orders[: self.max_n - 1])


def step_ms(buckets: int, steps: int, mode: str) -> dict[str, float]:
    """Milliseconds per step by part; ``mode``: "per order", "one" (lookup) or "sparse"."""
    torch.manual_seed(0)
    config = ModelConfig(dropout=0.2, max_len=256, pooling="attention", ngram_max=3, ngram_buckets=buckets)
    model = TransformerClassifier(config.for_classes(["negative", "positive"]), VOCAB)
    if mode == "per order":
        model.ngrams.forward = per_order.__get__(model.ngrams)
    tables = sparse_tables(model) if mode == "sparse" else []
    optimizers = [adamw(parameter_groups([model], 0.02, exclude=tables, ngram_decay=0.3), 2e-3, "cpu")]
    average = get_ema_multi_avg_fn(0.998)
    ema = AveragedModel(model, multi_avg_fn=dense_only(average, tables) if tables else average)
    if tables:  # the table's rows and their average, as the training loop keeps them
        averages = [t.weight for t in ngram_tables(ema.module)]
        optimizers.append(LazyAdamW(tables, 2e-3, weight_decay=0.3, averages=averages, ema_decay=0.998))
        pay_before_reading(model.ngrams.table, optimizers[-1])
    ids, labels = torch.randint(1, VOCAB, (32, 120)), torch.randint(0, 2, (32,))
    spent = {"forward + backward": 0.0, "optimizer": 0.0, "EMA": 0.0}
    for i in range(steps + 2):  # the first two warm the allocator up
        t0 = time.perf_counter()
        for optimizer in optimizers:
            optimizer.zero_grad()
        F.cross_entropy(model(ids), labels).backward()
        t1 = time.perf_counter()
        for optimizer in optimizers:
            optimizer.step()
        t2 = time.perf_counter()
        ema.update_parameters(model)
        t3 = time.perf_counter()
        if i >= 2:
            for part, seconds in zip(spent, (t1 - t0, t2 - t1, t3 - t2), strict=True):
                spent[part] += seconds * 1000 / steps
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    print(f"{'rows':>9}  {'table':<9}  {'fwd+bwd ms':>10}  {'optim ms':>8}  {'EMA ms':>6}  {'step ms':>7}")
    for buckets in (65_536, 262_144, 1_048_576):
        totals = {}
        for mode in ("per order", "one", "sparse"):
            spent = step_ms(buckets, args.steps, mode)
            totals[mode] = sum(spent.values())
            print(
                f"{buckets:>9,}  {mode:<9}  {spent['forward + backward']:>10.1f}  {spent['optimizer']:>8.1f}"
                f"  {spent['EMA']:>6.1f}  {totals[mode]:>7.1f}"
            )
        print(
            f"{'':>9}  step time: per order / one lookup {totals['per order'] / totals['one']:.2f}x, "
            f"dense / sparse {totals['one'] / totals['sparse']:.2f}x"
        )


if __name__ == "__main__":
    main()
