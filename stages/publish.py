"""DVC stage: copy pretrain's and train's metrics and curves from the DVC cache to their git-tracked paths."""

import argparse
from pathlib import Path

from scratchformer.pipeline import publish
from stages import run_stage


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--copy",
        nargs=2,
        type=Path,
        action="append",
        required=True,
        metavar=("SOURCE", "TARGET"),
        help="a file or folder to copy, and where; repeat for each",
    )
    args = parser.parse_args()
    publish.run([tuple(pair) for pair in args.copy])
    for source, target in args.copy:
        print(f"{source} -> {target}")


if __name__ == "__main__":
    run_stage(main)
