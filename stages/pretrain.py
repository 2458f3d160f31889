"""DVC stage: masked-language-model pretraining of the encoder (off when pretrain.epochs is 0).

Runs on the training loop of the train stage, with its device, precision and
``train.nproc`` processes (started through torchrun, as in stages/train.py).
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
from scratchformer.pipeline import pretrain
from stages import run_stage


@record
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--tokenized", type=Path, required=True)
    parser.add_argument("--tokenizer", type=Path, required=True)
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--metrics", type=Path, required=True)
    parser.add_argument("--state", type=Path, required=True, help="resumable state; not a DVC output")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    params = load_params(args.params)
    nproc = params.train.nproc if params.pretrain.epochs else 1  # nothing to spread when pretraining is off
    try:
        metrics = distributed.run_ranks(
            nproc,
            params.train.device,
            "stages.pretrain",
            lambda world: pretrain.run(
                params, args.tokenized, args.tokenizer, args.model, args.metrics, args.state, world
            ),
        )
    except TrainingDivergedError as err:
        sys.exit(f"pretrain: {err}")
    if metrics is not None:
        print(json.dumps(metrics, indent=2))


if __name__ == "__main__":
    run_stage(main)
