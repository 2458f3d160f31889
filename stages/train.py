"""DVC stage: train the classifier from random init; keep the best checkpoint."""

import argparse
import json
import logging
from pathlib import Path

from scratchformer.config import load_params
from scratchformer.pipeline import train


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--tokenized", type=Path, default=Path("data/tokenized"))
    parser.add_argument("--tokenizer", type=Path, default=Path("data/tokenizer"))
    parser.add_argument("--pretrained", type=Path, default=Path("models/pretrained.pt"))
    parser.add_argument("--model", type=Path, default=Path("models/model.pt"))
    parser.add_argument("--live", type=Path, default=Path("dvclive"))
    parser.add_argument("--snapshots", type=Path, default=Path("plots/probe/snapshots.json"))
    parser.add_argument("--metrics", type=Path, default=Path("metrics/train.json"))
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    metrics = train.run(
        load_params(args.params),
        args.tokenized,
        args.tokenizer,
        args.pretrained,
        args.model,
        args.live,
        args.snapshots,
        args.metrics,
    )
    print(json.dumps(metrics, indent=2))


if __name__ == "__main__":
    main()
