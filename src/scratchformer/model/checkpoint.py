"""Save and load a trained classifier together with everything needed to rebuild it."""

from __future__ import annotations

import dataclasses
import io
import pickle
import warnings
import zipfile
from pathlib import Path
from typing import Any

import torch

from scratchformer.config import ModelConfig, UserError, section
from scratchformer.files import write_atomic
from scratchformer.model.classifier import Classifier, Ensemble, TransformerClassifier, assemble, nb_record


def save_torch(path: str | Path, obj: Any) -> None:
    """``torch.save`` whose bytes depend on ``obj`` alone, written atomically.

    ``torch.save`` names the records of its zip archive after the file it is
    given, so saving straight to the atomic write's random temporary name would
    put that name into the bytes; a buffer gets the fixed name ``archive``.
    """
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    write_atomic(path, lambda tmp: tmp.write_bytes(buffer.getvalue()))


class CorruptFileError(UserError, ValueError):
    """A file the pipeline wrote cannot be read back (emptied, cut short, overwritten); says what to do."""


def restore(path: str | Path) -> str:
    """What to do about a damaged output of the pipeline."""
    return f"restore it with `dvc checkout {path}`, or rebuild it with `dvc repro`"


def load_torch(path: str | Path, fix: str) -> Any:
    """``torch.load(path, weights_only=True)`` on CPU; a file it cannot read raises CorruptFileError.

    torch reports a damaged file by what broke inside it (a bare EOFError for an empty
    file, the zip reader's RuntimeError, the weights-only unpickler's advice to turn its
    safety off); the one thing to do about any of them is ``fix``.
    """
    path = Path(path)
    if path.stat().st_size == 0:
        raise CorruptFileError(f"{path} is empty: {fix}")
    try:
        with warnings.catch_warnings():
            # Said of a pickle torch.save did not write, just before the error below says more.
            warnings.filterwarnings("ignore", message="Detected pickle protocol")
            return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        raise CorruptFileError(
            f"{path} is not a file this project wrote (torch's safe reader refuses it): {fix}"
        ) from err
    except (EOFError, OSError, RuntimeError, zipfile.BadZipFile, KeyError) as err:
        cause = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise CorruptFileError(f"{path} is truncated or damaged ({cause}): {fix}") from err


def save_checkpoint(path: str | Path, model: Classifier, **info: Any) -> None:
    """Write weights + model config (+ ``info``: epoch, metrics, …) atomically."""
    members = list(model.members) if isinstance(model, Ensemble) else [model]
    state = {
        "model_config": dataclasses.asdict(model.config),
        "vocab_size": members[0].embed.num_embeddings,
        "pad_id": model.pad_id,
        "members": len(members),
        "nb": nb_record(model),
        "state_dict": model.state_dict(),
        **info,
    }
    save_torch(path, state)


RECORDS = ("model_config", "vocab_size", "pad_id", "state_dict")  # what every checkpoint holds


def load_checkpoint(path: str | Path, device: str | torch.device = "cpu") -> tuple[Classifier, dict]:
    """Rebuild the model (or ensemble) from ``path`` in eval mode; also return the checkpoint's info."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no trained model; run `dvc repro` first")
    state = load_torch(path, restore(path))
    missing = [key for key in RECORDS if not isinstance(state, dict) or key not in state]
    if missing:
        raise CorruptFileError(f"{path} is not a trained model's checkpoint (no {', '.join(missing)}): {restore(path)}")
    config = section(ModelConfig, state.pop("model_config"), "model")
    vocab_size, pad_id, k = state.pop("vocab_size"), state.pop("pad_id"), state.pop("members", 1)
    members = [TransformerClassifier(config, vocab_size, pad_id) for _ in range(k)]
    model = assemble(members, state.pop("nb", None), vocab_size)
    model.load_state_dict(state.pop("state_dict"))
    return model.to(device).eval(), state


def save_no_pretraining(path: str | Path) -> None:
    """The pretrain stage's output when pretraining is off: train starts from random init."""
    save_torch(path, {"pretrained": False})


def load_pretrained(model: TransformerClassifier, path: str | Path) -> bool:
    """Copy pretrained weights from ``path`` into ``model`` if it holds any; say whether it did."""
    state = load_torch(path, restore(path))
    if not state.get("pretrained"):
        return False
    saved = section(ModelConfig, state["model_config"], "model")
    if saved != model.config:
        raise ValueError(f"{path}: pretrained with {saved}, but train builds {model.config}; run `dvc repro`")
    model.load_state_dict(state["state_dict"])
    return True


def class_names(info: dict, num_classes: int) -> list[str]:
    """The names of the model's classes, read in one place.

    A checkpoint that stores its class names (``info["class_names"]``, which the
    train stage always writes, from the data) gives them; an older checkpoint
    without them is named by its class ids.
    """
    stored = info.get("class_names")
    if stored:
        if len(stored) != num_classes:
            raise ValueError(f"checkpoint names {len(stored)} classes but the model has {num_classes} outputs")
        return [str(name) for name in stored]
    return [str(k) for k in range(num_classes)]
