"""DVC stage: read the corpus (hub id or local folder in data.source) into data/raw/."""

import argparse
import json
import logging
from pathlib import Path

from scratchformer.config import load_params
from scratchformer.pipeline import download
from stages import run_stage


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--inputs", type=Path, required=True, help="the corpus fingerprint the inputs stage wrote")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--metrics", type=Path, required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    report = download.run(load_params(args.params), args.inputs, args.out, args.metrics)
    print(json.dumps(report, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    run_stage(main)
