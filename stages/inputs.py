"""DVC stage: fingerprint data.source and tokenizer.name (folder content hashes or resolved hub commits)."""

import argparse
import logging
from pathlib import Path

from scratchformer.config import load_params
from scratchformer.pipeline import inputs
from stages import run_stage


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--tokenizer", type=Path, required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    for key, found in inputs.run(load_params(args.params), args.corpus, args.tokenizer).items():
        what = f"{len(found['files'])} files hashed" if "files" in found else f"commit {found['resolved']}"
        print(f"{key}: {found['source']} ({what})")


if __name__ == "__main__":
    run_stage(main)
