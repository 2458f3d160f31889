"""Who reads the short reviews: each member's network alone, its wide branch alone, their sum, the ensemble.

The default's logits are a network's plus its wide branch's (a linear model over the bag of
n-grams), and the prediction averages its members' probabilities. On the short-review check
(``checks/short_reviews.tsv``) this splits each member into its two readers and counts the
reviews each reads right, so what costs reviews on short texts is visible. It reads the
committed model (``models/model.pt``) and the tokenizer of the tokenize stage.

    python benchmarks/short_parts.py [--model models/model.pt]
"""

from __future__ import annotations

import argparse

import torch
from transformers import AutoTokenizer

from scratchformer.config import load_params
from scratchformer.data.short_reviews import read_short_reviews
from scratchformer.model.checkpoint import class_names, load_checkpoint


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="models/model.pt")
    parser.add_argument("--tokenizer", default="data/tokenizer")
    args = parser.parse_args()
    params = load_params("params.yaml")
    model, info = load_checkpoint(args.model)
    model.eval()
    reviews = read_short_reviews(params.short_reviews, class_names(info, model.config.num_classes))
    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    ids = tokenizer(list(reviews.text), padding=True, truncation=True, max_length=params.tokenizer.max_len)
    ids = torch.tensor(ids["input_ids"])  # (B, T)
    labels = torch.tensor(reviews.label.to_numpy())  # (B,)
    members = list(getattr(model, "members", [model]))

    def right(logits: torch.Tensor) -> int:
        return int((logits.argmax(dim=1) == labels).sum())

    print(f"{len(labels)} short reviews ({params.short_reviews}), read right by:")
    with torch.no_grad():
        for i, member in enumerate(members):
            orders = member.ngram_orders(ids)
            h, pad, _ = member.encode(ids, -1, orders)
            network = member.head(member.pool(h, pad)[0])  # (B, K)
            wide = member.wide(ids, orders) if member.wide is not None else torch.zeros_like(network)
            parts = {"network alone": network, "wide branch alone": wide, "their sum": network + wide}
            print(f"  member {i}: " + ", ".join(f"{name} {right(x)}" for name, x in parts.items()))
        print(f"  the model: {right(model(ids))}")


if __name__ == "__main__":
    main()
