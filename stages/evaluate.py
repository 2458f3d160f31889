"""DVC stage: validation/test accuracy and F1, confusion data, acceptance checks."""

import argparse
import json
import logging
from pathlib import Path

from scratchformer.config import load_params
from scratchformer.pipeline import evaluate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--model", type=Path, default=Path("models/model.pt"))
    parser.add_argument("--tokenized", type=Path, default=Path("data/tokenized"))
    parser.add_argument("--metrics", type=Path, default=Path("metrics/eval.json"))
    parser.add_argument("--confusion", type=Path, default=Path("plots/confusion"))
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    result = evaluate.run(load_params(args.params), args.model, args.tokenized, args.metrics, args.confusion)
    print(json.dumps(result, indent=2))
    if not result["acceptance"]["passed"]:
        print("acceptance: NOT passed (see metrics/eval.json)")


if __name__ == "__main__":
    main()
