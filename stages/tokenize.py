"""DVC stage: tokenize data/raw/ with tokenizer.name; save ids and the tokenizer."""

import argparse
import logging
from pathlib import Path

from scratchformer.config import load_params
from scratchformer.pipeline import tokenize


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--raw", type=Path, default=Path("data/raw"))
    parser.add_argument("--out", type=Path, default=Path("data/tokenized"))
    parser.add_argument("--tokenizer-out", type=Path, default=Path("data/tokenizer"))
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    meta = tokenize.run(load_params(args.params), args.raw, args.out, args.tokenizer_out)
    print(f"vocab {meta['vocab_size']}, max_len {meta['max_len']}")


if __name__ == "__main__":
    main()
