"""DVC stage: loss and gradient-norm curves, attention heatmap, evolution pictures and GIF."""

import argparse
from pathlib import Path

from scratchformer.config import load_params
from scratchformer.pipeline import visualize
from stages import run_stage


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--live", type=Path, required=True)
    parser.add_argument("--snapshots", type=Path, required=True)
    parser.add_argument("--confusion", type=Path, required=True)
    parser.add_argument("--images", type=Path, required=True)
    parser.add_argument("--weights", type=Path, required=True)
    args = parser.parse_args()
    visualize.run(load_params(args.params), args.live, args.snapshots, args.confusion, args.images, args.weights)
    print(f"pictures in {args.images}/")


if __name__ == "__main__":
    run_stage(main)
