"""DVC stage: the classical reference, char n-gram TF-IDF + logistic regression."""

import argparse
import json
from pathlib import Path

from scratchformer.config import load_params
from scratchformer.pipeline import baseline
from stages import run_stage


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--raw", type=Path, required=True)
    parser.add_argument("--metrics", type=Path, required=True)
    args = parser.parse_args()
    print(json.dumps(baseline.run(load_params(args.params), args.raw, args.metrics), indent=2))


if __name__ == "__main__":
    run_stage(main)
