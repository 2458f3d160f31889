"""Who reads the short reviews: each member's network alone, its wide branch alone, their sum, the ensemble.

The default's logits are a network's plus its wide branch's (a linear model over the bag of
n-grams), and the prediction averages its members' probabilities. On the short-review check
(``checks/short_reviews.tsv``) this splits each member into its two readers and counts the
reviews each reads right, so what costs reviews on short texts is visible. It reads the
committed model (``models/model.pt``) and the tokenizer of the tokenize stage.

    python benchmarks/short_parts.py [--model models/model.pt] [--reviews FILE]
"""

from __future__ import annotations

import argparse

import torch

from scratchformer.analysis.evaluation import predict_logits
from scratchformer.config import load_params
from scratchformer.data.short_reviews import read_short_reviews
from scratchformer.data.tokenization import load_saved_tokenizer
from scratchformer.data.tokenized_split import TokenizedSplit
from scratchformer.model.checkpoint import class_names, load_checkpoint


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="models/model.pt")
    parser.add_argument("--tokenizer", default="data/tokenizer")
    parser.add_argument("--reviews", default=None, help="short reviews (default: params' short_reviews)")
    args = parser.parse_args()
    params = load_params("params.yaml")
    path = args.reviews or params.short_reviews
    model, info = load_checkpoint(args.model)
    reviews = read_short_reviews(path, class_names(info, model.config.num_classes))
    # Encoded and batched as the evaluate stage scores them.
    tokenizer = load_saved_tokenizer(args.tokenizer)
    split = TokenizedSplit.encoded(
        tokenizer, reviews["text"].tolist(), reviews["label"].to_numpy(), params.tokenizer.max_len
    )
    labels = split.labels  # (N,)

    def right(logits: torch.Tensor) -> int:
        return int((logits.argmax(dim=1) == labels).sum())

    print(f"{len(labels)} short reviews ({path}), read right by:")
    for i, member in enumerate(getattr(model, "members", [model])):
        whole = predict_logits(member, split, 256)  # (N, K): the network's logits plus the wide branch's
        wide = predict_logits(member.wide, split, 256) if member.wide is not None else torch.zeros_like(whole)
        parts = {"network alone": whole - wide, "wide branch alone": wide, "their sum": whole}
        print(f"  member {i}: " + ", ".join(f"{name} {right(x)}" for name, x in parts.items()))
    print(f"  the model: {right(predict_logits(model, split, 256))}")


if __name__ == "__main__":
    main()
