"""Stage pretrain: optional pretraining of the encoder (pretrain.epochs > 0), by pretrain.objective.

Reads the train texts and every text of ``pretrain.corpora``, never a validation or test
text of the corpus being scored (:mod:`scratchformer.data.pretraining`; the counts go to the
metrics). Runs on the training loop of the train stage, with its device, precision and
``train.nproc`` processes (started through torchrun, as the train stage is).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import torch
from torch.distributed.elastic.multiprocessing.errors import record

from scratchformer.config import Params
from scratchformer.data.ingest import read_column
from scratchformer.data.labels import DataError
from scratchformer.data.pretraining import corpus_texts, pretraining_texts
from scratchformer.data.tokenization import encode_flat, load_tokenizer
from scratchformer.data.tokenized_split import TokenizedSplit, read_class_names
from scratchformer.device import pick_device
from scratchformer.files import write_json
from scratchformer.model.checkpoint import save_checkpoint, save_no_pretraining
from scratchformer.model.classifier import TransformerClassifier
from scratchformer.train.classify import seed_everything
from scratchformer.train.distributed import ALONE, World, run_ranks
from scratchformer.train.pretraining import pretrain
from scratchformer.train.recording import Recording
from scratchformer.train.resume import resume_key
from stages import stage, stage_code

# As dvc.yaml lists them, and what the resume key digests: the loop's device, processes,
# precision and logging interval are the train section's.
PARAMS = (
    "seed",
    "model",
    "pretrain",
    "tokenizer.max_len",
    "data.encoding",
    "train.device",
    "train.nproc",
    "train.precision",
    "train.log_every",
)


def texts_to_read(params: Params, raw_dir: Path, corpora_path: Path, tokenizer) -> tuple[TokenizedSplit, dict]:
    """The pretraining set, tokenized as the tokenize stage does, and its counts (see data/pretraining.py).

    ``corpora_path`` is the inputs stage's list of fingerprints, one per ``pretrain.corpora``
    entry: a hub corpus is read at the commit recorded there, as the download stage reads
    ``data.source``.
    """
    found = json.loads(corpora_path.read_text(encoding="utf-8"))
    sources = [f["source"] for f in found]
    if sources != list(params.pretrain.corpora):
        raise DataError(
            f"{corpora_path} fingerprints {sources}, but pretrain.corpora is {list(params.pretrain.corpora)}: "
            "run the inputs stage (dvc repro runs it first)"
        )
    split = {name: read_column(raw_dir, name, "text") for name in ("train", "validation", "test")}
    corpora = [(f["source"], corpus_texts(f["source"], params.data.encoding, f.get("resolved"))) for f in found]
    texts, counts = pretraining_texts(split["train"], split["validation"], split["test"], corpora)
    flat = encode_flat(tokenizer, texts, min(params.tokenizer.max_len, params.model.max_len))  # what a network reads
    return TokenizedSplit(flat.tokens, flat.offsets, torch.zeros(len(texts), dtype=torch.long)), counts


def run(
    params: Params,
    raw_dir: Path,
    corpora_path: Path,
    tokenized_dir: Path,
    tokenizer_dir: Path,
    model_path: Path,
    metrics_path: Path,
    state_path: Path,
    world: World = ALONE,
) -> dict | None:
    """Pretrain (or record that pretraining is off); only rank 0 writes and returns the metrics.

    As in the train stage, a :class:`~scratchformer.train.recording.Recording` saves the loop's
    state to ``state_path`` at the end of every epoch: a rerun with the same params
    (``PARAMS``), inputs and code continues from there; the file is removed at the end.
    """
    if params.pretrain.epochs == 0:
        if world.main:
            save_no_pretraining(model_path)
            write_json(metrics_path, {"pretrain": {"epochs": 0}})
        return {"epochs": 0} if world.main else None
    seed_everything(params.seed)
    tokenizer = load_tokenizer(str(tokenizer_dir))
    config = params.model.for_classes(read_class_names(tokenized_dir))
    model = TransformerClassifier(config, len(tokenizer), tokenizer.pad_token_id)
    train_split, counts = texts_to_read(params, raw_dir, corpora_path, tokenizer)
    device = world.place(pick_device(params.train.device))
    inputs = [raw_dir, corpora_path, tokenized_dir, tokenizer_dir]
    key = resume_key(params.select(PARAMS), inputs, stage_code("pretrain"))
    recording = Recording(state_path, key, world)  # no curves: the metrics say how pretraining went
    recorder = recording.member()
    metrics = pretrain(
        model,
        train_split,
        params.pretrain,
        special_ids=tokenizer.all_special_ids,
        mask_id=tokenizer.mask_token_id,
        seed=params.seed,
        device=device,
        world=world,
        train_config=params.train,
        recorder=recorder,
        resume=recorder.resume,
    )
    if not world.main:
        return None
    metrics["texts"] = counts
    save_checkpoint(model_path, model.cpu(), pretrained=True)
    write_json(metrics_path, {"pretrain": metrics})
    recording.close()  # the outputs are written: nothing left to resume
    return metrics


@record  # a rank's uncaught error reaches torchrun's report with its traceback
def ranks(params: Params, work: Callable[[World], dict | None]) -> dict | None:
    """``work`` on each of ``train.nproc`` processes, relaunched through torchrun; rank 0's result."""
    nproc = params.train.nproc if params.pretrain.epochs else 1  # nothing to spread when off
    return run_ranks(nproc, params.train.device, "stages.pretrain", work)


if __name__ == "__main__":
    stage(run, ranks=ranks)
