"""Stage train: fit from random init, log curves with dvclive, record the probe's attention.

With ``train.nproc`` > 1 the stage starts itself again as that many processes through
torchrun (data-parallel, see :mod:`scratchformer.train.distributed`); already under
torchrun (a multi-node launch, for example) it joins the process group it finds.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from functools import partial
from pathlib import Path

import torch
from torch.distributed.elastic.multiprocessing.errors import record

from dvclive import Live
from scratchformer.analysis.probe import make_probe
from scratchformer.config import Params
from scratchformer.data.tokenization import load_tokenizer, read_class_names, read_tokenized
from scratchformer.files import write_json
from scratchformer.model.checkpoint import save_checkpoint
from scratchformer.model.classifier import Ensemble
from scratchformer.train.classify import grad_norm_summary
from scratchformer.train.distributed import ALONE, World, pick_device, run_ranks
from scratchformer.train.ensemble import fit_nb, train_member
from scratchformer.train.resume import run_key, stage_code
from scratchformer.train.run import Run
from stages import stage

log = logging.getLogger(__name__)
PARAMS = ("seed", "model", "train", "probe", "tokenizer.max_len")  # as dvc.yaml lists them; the resume key's


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
    """Train from random init; save the best checkpoint, curves, probe snapshots, metrics.

    With ``train.ensemble`` = K > 1, K members are trained one after another from
    seeds seed, seed+1, …, each keeping its own best epoch; the checkpoint holds
    the ensemble. Member 0's curves and probe snapshots are the plotted ones; the
    others' curves are logged under ``member<k>/``.

    With ``train.nb_ngrams`` > 0 an NB-weighted n-gram model is fit first, on the
    train split: it joins the ensemble (``train.nb_role`` member), or it only
    teaches (teacher): with ``train.distill`` > 0 every member's targets mix in
    its probabilities, and the saved model is the Transformers alone. With
    ``train.distill_folds`` = k > 1 the teacher is k models fit out of fold, and
    its train accuracy in the metrics is out of fold too.

    The :class:`~scratchformer.train.run.Run` records it all: at the end of every
    epoch the state of the run goes to ``state_path``; a rerun with the same
    params (``PARAMS``), inputs and code continues from there, and the file is
    removed once the outputs are written.

    Every process of a multi-process run (``world``) calls this; only rank 0
    writes anything, and only rank 0 returns the metrics (the others None).
    """
    tokenizer = load_tokenizer(str(tokenizer_dir))
    class_names = read_class_names(tokenized_dir)  # the model's output size comes from the data
    params = dataclasses.replace(params, model=params.model.for_classes(class_names))
    train_split = read_tokenized(tokenized_dir / "train")
    val_split = read_tokenized(tokenized_dir / "validation")
    device = world.place(pick_device(params.train.device))
    log.info("rank %d of %d, on %s, %d threads", world.rank, world.size, device, torch.get_num_threads())
    probe = make_probe(params.probe, tokenizer, params.tokenizer.max_len)
    nb = fit_nb(params, train_split, val_split, tokenizer) if params.train.nb_ngrams else None
    teacher = nb[0] if nb and params.train.distill else None
    key = run_key(params.select(PARAMS), [tokenized_dir, tokenizer_dir, pretrained_path], stage_code("train"))
    members = []
    with Run(state_path, key, world, partial(Live, str(live_dir), dvcyaml=False, save_dvc_exp=False)) as recorded:
        for k in range(params.train.ensemble):
            shown = probe if k == 0 else None  # member 0's snapshots are the plotted ones
            args = (params, tokenizer, train_split, val_split, pretrained_path, device, recorded, shown, world)
            members.append(train_member(k, *args, teacher=teacher))
    if not world.main:
        return None
    histories = [m.history for m in members]
    transformers = [m.model for m in members]
    member = nb[0] if nb and params.train.nb_role == "member" else None  # a teacher stays out of the model
    final = transformers[0] if len(members) == 1 and member is None else Ensemble(transformers, member)
    save_checkpoint(
        model_path,
        final,
        best_epochs=[h.best_epoch for h in histories],
        class_names=class_names,
        tokenizer_max_len=params.tokenizer.max_len,
    )
    history = histories[0]
    best, last = history.best, history.epochs[-1]
    metrics = {
        "best_epoch": history.best_epoch,
        "best_val_accuracy": best["val_accuracy"],
        "best_val_loss": best["val_loss"],
        "final_train_loss": last["train_loss"],
        "final_train_accuracy": last["train_accuracy"],
        "epochs": params.train.epochs,
        "ensemble": len(members),
        "parameters": final.num_parameters(),
        "pretrained": members[0].pretrained,
        **grad_norm_summary([r["grad_norm"] for r in history.steps], params.train.grad_clip),
    }
    if len(members) > 1:  # each member's own best validation accuracy, beside the ensemble's in eval
        metrics["member_val_accuracy"] = {str(k): h.best["val_accuracy"] for k, h in enumerate(histories)}
    if nb:  # the NB model alone (member or teacher), beside the ensemble's in eval
        metrics["nb_train_accuracy"], metrics["nb_val_accuracy"] = nb[1], nb[2]
    write_json(
        snapshots_path,
        {
            "text": params.probe.text,
            "tokens": probe.tokens,
            "query_index": probe.query_index,
            "query_token": params.probe.query_token,
            "layer": probe.layer if probe.layer >= 0 else params.model.n_layers + probe.layer,
            "head": probe.head,
            "class_names": class_names,
            "snapshots": members[0].snapshots,
        },
    )
    write_json(metrics_path, metrics)
    recorded.close()  # the outputs are written: nothing left to resume
    # Wall time and device are facts of the machine, not of code, params and data:
    # logged, never written into a tracked output (a rerun must change no byte).
    log.info("trained in %.1f s on %s", sum(h.seconds for h in histories), device)
    return metrics


@record  # a rank's uncaught error reaches torchrun's report with its traceback
def ranks(params: Params, work: Callable[[World], dict | None]) -> dict | None:
    """``work`` on each of ``train.nproc`` processes, relaunched through torchrun; rank 0's result."""
    nproc = params.train.nproc
    return run_ranks(nproc, params.train.device, "stages.train", work)


if __name__ == "__main__":
    stage(run, ranks=ranks)
