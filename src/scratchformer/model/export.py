"""The trained classifier as a folder others can load, with no pickle in it.

    model.safetensors   every tensor of the state dict (an ensemble's members and NB member too)
    config.json         what rebuilds the network around them: model config, vocab size, PAD id,
                        members, NB member, class names, the tokenizer's max_len, format version
    tokenizer files     the tokenizer the model was trained with (vocab.txt, tokenizer.json, …)
    README.md           the model card

Loading reads JSON and safetensors only, so opening a folder from someone else runs
none of their code (a ``.pt`` checkpoint is a pickle: safe only under torch's
weights-only reader). The bytes are a pure function of the model and its inputs:
safetensors orders its tensors itself, the JSON is written with sorted keys.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import safetensors
import safetensors.torch
import torch

from scratchformer.config import ModelConfig
from scratchformer.data.tokenization import refuse_code
from scratchformer.files import atomic_dir
from scratchformer.model.checkpoint import CorruptFileError, class_names, restore
from scratchformer.model.classifier import Classifier, Ensemble, TransformerClassifier, assemble, nb_record
from scratchformer.model.folder_checks import (
    MODEL_TYPE,
    check_config,
    check_counts,
    check_shapes,
    weight_shapes,
)

FORMAT = "scratchformer-classifier"
FORMAT_VERSION = 1  # raise it when config.json or the tensors' names change meaning
CONFIG = "config.json"
WEIGHTS = "model.safetensors"
CARD = "README.md"
TOKENIZER_CONFIG = "tokenizer_config.json"  # every saved tokenizer has one
REQUIRED = ("format_version", "model", "vocab_size", "pad_id", "members", "nb", "class_names", "tokenizer_max_len")


def folder_config(model: Classifier, info: dict) -> dict:
    """config.json of ``model``; ``info`` is the checkpoint's (class names, the tokenizer's max_len)."""
    members = list(model.members) if isinstance(model, Ensemble) else [model]
    names = class_names(info, model.config.num_classes)
    return {
        # The Hub's keys: what the model is and its labels, in the words other tools read.
        "model_type": MODEL_TYPE,
        "architectures": [type(model).__name__],
        "id2label": {str(i): name for i, name in enumerate(names)},
        "label2id": {name: i for i, name in enumerate(names)},
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "model": dataclasses.asdict(model.config),
        "vocab_size": members[0].embed.num_embeddings,
        "pad_id": model.pad_id,
        "members": len(members),
        "nb": nb_record(model),
        "class_names": names,
        # Texts longer than this were cut when the model was trained and evaluated; predict cuts them the same.
        "tokenizer_max_len": info.get("tokenizer_max_len", model.config.max_len),
    }


def save_folder(model: Classifier, out_dir: str | Path, info: dict, tokenizer_dir: str | Path, card: str) -> None:
    """Write the folder (see the module docstring) atomically: it replaces ``out_dir`` whole, or not at all."""
    tokenizer_dir = Path(tokenizer_dir)
    if not (tokenizer_dir / TOKENIZER_CONFIG).is_file():
        raise FileNotFoundError(f"{tokenizer_dir}: no saved tokenizer; run `dvc repro` first")
    tokenizer_files = sorted(p for p in tokenizer_dir.iterdir() if p.is_file())
    clash = sorted({p.name for p in tokenizer_files} & {CONFIG, WEIGHTS, CARD})
    if clash:
        raise ValueError(f"{tokenizer_dir} holds {', '.join(clash)}, a name the model folder uses for its own file")
    tensors = {name: t.detach().cpu().contiguous() for name, t in model.state_dict().items()}
    with atomic_dir(out_dir) as tmp:
        (tmp / WEIGHTS).write_bytes(safetensors.torch.save(tensors, metadata={"format": "pt"}))
        text = json.dumps(folder_config(model, info), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        (tmp / CONFIG).write_text(text, encoding="utf-8")
        for file in tokenizer_files:
            shutil.copyfile(file, tmp / file.name)  # bytes only: no times or modes carried over
        (tmp / CARD).write_text(card, encoding="utf-8")


def read_config(folder: Path) -> dict:
    """config.json of ``folder``, checked; a missing or damaged one raises CorruptFileError naming it."""
    path = folder / CONFIG
    if not path.is_file():
        raise CorruptFileError(f"{path} is missing: {restore(folder)}")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CorruptFileError(f"{path} is not valid JSON ({err}): {restore(folder)}") from err
    if not isinstance(config, dict) or config.get("format") != FORMAT:
        raise CorruptFileError(f"{path} is not a scratchformer model's config (format {FORMAT!r}): {restore(folder)}")
    refuse_code(path, config)
    missing = [key for key in REQUIRED if key not in config]
    if missing:
        raise CorruptFileError(f"{path} lacks {', '.join(missing)}: {restore(folder)}")
    if config["format_version"] != FORMAT_VERSION:
        raise CorruptFileError(
            f"{path} is format version {config['format_version']}, this scratchformer reads {FORMAT_VERSION}: "
            "load it with the scratchformer that wrote it, or re-export it with `dvc repro`"
        )
    return config


def build(config: dict, model_config: ModelConfig) -> Classifier:
    """The untrained network config.json describes (its sizes already checked by :func:`check_config`)."""
    vocab_size, pad_id, k, nb = config["vocab_size"], config["pad_id"], config["members"], config["nb"]
    members = [TransformerClassifier(model_config, vocab_size, pad_id) for _ in range(k)]
    return assemble(members, nb, vocab_size)


def load_folder(folder: str | Path, device: str | torch.device = "cpu") -> tuple[Classifier, dict[str, Any]]:
    """Rebuild the model from a folder :func:`save_folder` wrote, in eval mode; also its info.

    The info holds what :func:`~scratchformer.model.checkpoint.load_checkpoint` gives
    for a ``.pt``: ``class_names`` and ``tokenizer_max_len``. Nothing
    is allocated before config.json and the weights' header agree (see
    :mod:`~scratchformer.model.folder_checks`).
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no model folder; run `dvc repro` first (the export stage writes it)")
    config = read_config(folder)
    model_config = check_config(config, folder / CONFIG)
    path = folder / WEIGHTS
    if not path.is_file():
        raise CorruptFileError(f"{path} is missing: {restore(folder)}")
    try:
        shapes = weight_shapes(path)
    except safetensors.SafetensorError as err:
        raise CorruptFileError(f"{path} is truncated or damaged ({err}): {restore(folder)}") from err
    check_counts(config, model_config, shapes, path, folder / CONFIG)
    with torch.device("meta"):  # names and shapes only: no memory behind them
        why = check_shapes(build(config, model_config), shapes)
    if why is not None:
        raise CorruptFileError(f"{path} does not match {folder / CONFIG} ({why}): {restore(folder)}")
    model = build(config, model_config)
    try:
        model.load_state_dict(safetensors.torch.load_file(path, device="cpu"))
    except (safetensors.SafetensorError, RuntimeError) as err:  # damaged past the header; a dtype torch refuses
        cause = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise CorruptFileError(f"{path} is truncated or damaged ({cause}): {restore(folder)}") from err
    info = {
        "class_names": list(config["class_names"]),
        "tokenizer_max_len": config["tokenizer_max_len"],
    }
    return model.to(device).eval(), info
