"""DVC stage: fetch ChnSentiCorp (hub id or local folder in data.source) into data/raw/."""

import argparse
import logging
from pathlib import Path

from scratchformer.config import load_params
from scratchformer.pipeline import download


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--out", type=Path, default=Path("data/raw"))
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    counts = download.run(load_params(args.params), args.out)
    print(f"rows: {counts}")


if __name__ == "__main__":
    main()
