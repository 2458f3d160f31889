"""Stage train: fit from random init, log curves with dvclive, record the probe's attention.

With ``train.nproc`` > 1 the stage starts itself again as that many processes through
torchrun (data-parallel, see :mod:`scratchformer.train.distributed`); already under
torchrun (a multi-node launch, for example) it joins the process group it finds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from pathlib import Path

import torch
from torch.distributed.elastic.multiprocessing.errors import record

from dvclive import Live
from scratchformer.config import Params
from scratchformer.data.tokenization import load_tokenizer
from scratchformer.data.tokenized_split import NB_TRAIN, read_class_names, read_tokenized
from scratchformer.device import pick_device
from scratchformer.files import write_json
from scratchformer.model.checkpoint import save_checkpoint
from scratchformer.train.distributed import ALONE, World, run_ranks
from scratchformer.train.ensemble import train_ensemble
from scratchformer.train.recording import Recording
from scratchformer.train.resume import resume_key
from stages import stage, stage_code

log = logging.getLogger(__name__)
PARAMS = ("seed", "model", "train", "nb", "probe", "tokenizer.max_len")  # as dvc.yaml lists them; the resume key's


def run(
    params: Params,
    tokenized_dir: Path,
    tokenizer_dir: Path,
    pretrained_path: Path,
    model_path: Path,
    live_dir: Path,
    snapshots_path: Path,
    metrics_path: Path,
    state_path: Path,
    world: World = ALONE,
) -> dict | None:
    """Train (:func:`~scratchformer.train.ensemble.train_ensemble`); save the model, curves, probe
    snapshots and metrics. A :class:`~scratchformer.train.recording.Recording` keeps the curves
    and, each epoch, the run's state in ``state_path``: a rerun with the same params
    (``PARAMS``), inputs and code continues from there. Every process of a multi-process run
    (``world``) calls this; only rank 0 writes, and returns the metrics (the others None).
    """
    tokenizer = load_tokenizer(str(tokenizer_dir))
    class_names = read_class_names(tokenized_dir)  # the model's output size comes from the data
    device = world.place(pick_device(params.train.device))
    log.info("rank %d of %d, on %s, %d threads", world.rank, world.size, device, torch.get_num_threads())
    key = resume_key(params.select(PARAMS), [tokenized_dir, tokenizer_dir, pretrained_path], stage_code("train"))
    live = partial(Live, str(live_dir), dvcyaml=False, save_dvc_exp=False)
    with Recording(state_path, key, world, live) as recording:
        trained = train_ensemble(
            seed=params.seed,
            model=params.model.for_classes(class_names),
            train=params.train,
            nb=params.nb,
            probe=params.probe,
            tokenizer=tokenizer,
            max_len=params.tokenizer.max_len,
            class_names=class_names,
            train_split=read_tokenized(tokenized_dir / "train"),
            val_split=read_tokenized(tokenized_dir / "validation"),
            nb_train_split=read_tokenized(tokenized_dir / NB_TRAIN) if params.nb_fit_len() else None,
            pretrained_path=pretrained_path,
            device=device,
            recording=recording,
            world=world,
        )
    if trained is None:
        return None
    save_checkpoint(
        model_path,
        trained.model,
        best_epochs=trained.best_epochs,
        class_names=class_names,
        tokenizer_max_len=params.tokenizer.max_len,
    )
    write_json(snapshots_path, trained.snapshots)
    write_json(metrics_path, trained.metrics)
    recording.close()  # the outputs are written: nothing left to resume
    # Wall time and device are facts of the machine, not of code, params and data:
    # logged, never written into a tracked output (a rerun must change no byte).
    log.info("trained in %.1f s on %s", trained.seconds, device)
    return trained.metrics


@record  # a rank's uncaught error reaches torchrun's report with its traceback
def ranks(params: Params, work: Callable[[World], dict | None]) -> dict | None:
    """``work`` on each of ``train.nproc`` processes, relaunched through torchrun; rank 0's result."""
    nproc = params.train.nproc
    return run_ranks(nproc, params.train.device, "stages.train", work)


if __name__ == "__main__":
    stage(run, ranks=ranks)
