"""DVC stage: masked-language-model pretraining of the encoder (off when pretrain.epochs is 0)."""

import argparse
import json
import logging
from pathlib import Path

from scratchformer.config import load_params
from scratchformer.pipeline import pretrain


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--tokenized", type=Path, required=True)
    parser.add_argument("--tokenizer", type=Path, required=True)
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--metrics", type=Path, required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    metrics = pretrain.run(load_params(args.params), args.tokenized, args.tokenizer, args.model, args.metrics)
    print(json.dumps(metrics, indent=2))


if __name__ == "__main__":
    main()
