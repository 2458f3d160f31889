"""DVC stage: train the classifier from random init; keep the best checkpoint."""

import argparse
import json
import logging
import sys
from pathlib import Path

from scratchformer.config import load_params
from scratchformer.pipeline import train
from scratchformer.training import TrainingDivergedError


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--tokenized", type=Path, required=True)
    parser.add_argument("--tokenizer", type=Path, required=True)
    parser.add_argument("--pretrained", type=Path, required=True)
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--live", type=Path, required=True)
    parser.add_argument("--snapshots", type=Path, required=True)
    parser.add_argument("--metrics", type=Path, required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
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
    except TrainingDivergedError as err:
        sys.exit(f"train: {err}")
    print(json.dumps(metrics, indent=2))


if __name__ == "__main__":
    main()
