"""DVC stage: fingerprint data.source and tokenizer.name (folder content hashes or resolved hub commits)."""

import argparse
import json
import logging
from pathlib import Path

from scratchformer.config import load_params
from scratchformer.pipeline import inputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--tokenizer", type=Path, required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    found = inputs.run(load_params(args.params), args.corpus, args.tokenizer)
    print(
        json.dumps(
            {
                k: {"source": v["source"], "files": len(v.get("files", {})) or None, "resolved": v.get("resolved")}
                for k, v in found.items()
            }
        )
    )


if __name__ == "__main__":
    main()
