"""How many deliberately flipped train labels the label-issue ranking finds.

Flips ``--flips`` train labels of data/raw/train.parquet (chosen with ``--seed``; two
classes: to the other one, more: to a random other class), ranks every train review as
the download stage does (NB-LR out of fold, cleanlab's label quality score;
:mod:`scratchformer.analysis.label_issues`) and prints how many of the flipped rows are
among the ``--top`` first, and how many cleanlab flags. Also the time the ranking took.

Run from the repository root after `dvc repro download`:

    python benchmarks/label_noise_recall.py [--flips 300] [--top 600] [--seed 0]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from scratchformer.analysis.label_issues import out_of_fold, rank
from scratchformer.config import load_params
from scratchformer.data.labels import Classes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--flips", type=int, default=300)
    parser.add_argument("--top", type=int, default=600)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--raw", default="data/raw")
    args = parser.parse_args()
    params = load_params("params.yaml")
    names = Classes.read(f"{args.raw}/classes.json").names
    train = pd.read_parquet(f"{args.raw}/train.parquet")
    rng = np.random.default_rng(args.seed)
    flipped = rng.choice(len(train), size=args.flips, replace=False)
    labels = train["label"].to_numpy().copy()
    k = len(names)
    labels[flipped] = (labels[flipped] + rng.integers(1, k, size=args.flips)) % k
    noisy = train.assign(label=labels)
    start = time.perf_counter()
    probs = out_of_fold(noisy["text"], labels, k, params.baseline, params.seed)
    ranking = rank("train", noisy, probs, names)
    seconds = time.perf_counter() - start
    top = set(ranking.frame["row"].to_numpy()[: args.top])
    found = len(top & set(flipped.tolist()))
    flagged = set(ranking.frame.loc[ranking.frame["issue"], "row"])
    print(f"{len(train)} train reviews, {args.flips} labels flipped (seed {args.seed})")
    print(f"flipped among the {args.top} ranked first: {found} ({found / args.flips:.1%})")
    print(f"cleanlab flags {len(flagged)}; of them flipped: {len(flagged & set(flipped.tolist()))}")
    print(f"ranking took {seconds:.1f} s")


if __name__ == "__main__":
    main()
