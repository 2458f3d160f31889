"""DVC stage: tokenize data/raw/ with tokenizer.name; save flat ids and the tokenizer."""

import argparse
import logging
from pathlib import Path

from scratchformer.config import load_params
from scratchformer.inputs import resolved_revision
from scratchformer.pipeline import tokenize
from stages import run_stage


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--inputs", type=Path, required=True, help="the tokenizer fingerprint the inputs stage wrote")
    parser.add_argument("--raw", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--tokenizer-out", type=Path, required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    params = load_params(args.params)
    revision = resolved_revision(args.inputs) or params.tokenizer.revision
    meta = tokenize.run(params, args.raw, args.out, args.tokenizer_out, revision)
    print(f"vocab {meta['vocab_size']} ({meta['token_dtype']} ids), max_len {meta['max_len']}")


if __name__ == "__main__":
    run_stage(main)
