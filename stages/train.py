"""DVC stage: train the classifier from random init; keep the best checkpoint.

With ``train.nproc`` > 1 the stage starts itself again as that many processes
through torchrun (data-parallel, see scratchformer.distributed); already under
torchrun (a multi-node launch, for example) it joins the process group it finds.
"""

import argparse
import json
import logging
import sys
from pathlib import Path

from torch.distributed.elastic.multiprocessing.errors import record

from scratchformer import distributed
from scratchformer.config import load_params
from scratchformer.loop import TrainingDivergedError
from scratchformer.pipeline import train
from stages import run_stage


@record  # a rank's uncaught error reaches torchrun's report with its traceback
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--tokenized", type=Path, required=True)
    parser.add_argument("--tokenizer", type=Path, required=True)
    parser.add_argument("--pretrained", type=Path, required=True)
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--live", type=Path, required=True)
    parser.add_argument("--snapshots", type=Path, required=True)
    parser.add_argument("--metrics", type=Path, required=True)
    parser.add_argument("--state", type=Path, required=True, help="resumable state; not a DVC output")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    params = load_params(args.params)
    try:
        metrics = distributed.run_ranks(
            params.train.nproc,
            params.train.device,
            "stages.train",
            lambda world: train.run(
                params,
                args.tokenized,
                args.tokenizer,
                args.pretrained,
                args.model,
                args.live,
                args.snapshots,
                args.metrics,
                args.state,
                world,
            ),
        )
    except TrainingDivergedError as err:
        sys.exit(f"train: {err}")
    if metrics is not None:  # rank 0 (the others, and the launcher, print nothing)
        print(json.dumps(metrics, indent=2))


if __name__ == "__main__":
    run_stage(main)
