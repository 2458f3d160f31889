"""DVC stage: the most confident validation mistakes, their relevant tokens, and the tokens mistakes share."""

import argparse
import logging
from pathlib import Path

from scratchformer.config import load_params
from scratchformer.pipeline import errors
from stages import run_stage


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--tokenized", type=Path, required=True)
    parser.add_argument("--tokenizer", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    report = errors.run(load_params(args.params), args.model, args.tokenized, args.tokenizer, args.out)
    print(
        f"{report.n_mistakes} of {report.total} {report.split} reviews wrong; "
        f"the {len(report.mistakes)} most confident in {args.out}/validation.md and validation.html"
    )


if __name__ == "__main__":
    run_stage(main)
