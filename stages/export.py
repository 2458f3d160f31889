"""Stage export: the trained model as a folder others can load (safetensors, config.json, tokenizer, card).

The card shows what the model answers to a few example reviews, predicted here, right or wrong.

``Predictor.from_pretrained(folder)`` and ``scratchformer predict --model folder`` read it;
see :mod:`scratchformer.model.export` for what it holds.
"""

from __future__ import annotations

import json
from pathlib import Path

from scratchformer.analysis.predict import Predictor
from scratchformer.config import Params
from scratchformer.model.checkpoint import CorruptFileError, load_checkpoint, restore
from scratchformer.model.export import folder_config, save_folder
from scratchformer.render.model_card import EXAMPLES, model_card
from stages import stage

PARAMS = (
    "seed",
    "data.source",
    "data.revision",
    "tokenizer.name",
    "train",
    "nb",
    "pretrain.epochs",
)  # what the card quotes


def read_metrics(path: Path) -> dict:
    """A metrics file an earlier stage wrote; a missing or damaged one is named with the fix."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no metrics; run `dvc repro` first")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CorruptFileError(f"{path} is not valid JSON ({err}): {restore(path)}") from err


def run(
    params: Params, model_path: Path, tokenizer_dir: Path, eval_path: Path, data_metrics_path: Path, out_dir: Path
) -> dict:
    """Write ``out_dir`` from the checkpoint, the tokenizer and the metrics the card quotes; return its config."""
    model, info = load_checkpoint(model_path)
    config = folder_config(model, info)
    data_report = read_metrics(data_metrics_path).get("data", {})
    answers = [(p.text, p.label, p.probability) for p in Predictor(model_path, tokenizer_dir).predict(EXAMPLES, 0)]
    card = model_card(config, model.num_parameters(), params, read_metrics(eval_path), data_report, answers)
    save_folder(model, out_dir, info, tokenizer_dir, card)
    return {"folder": str(out_dir), "files": sorted(p.name for p in out_dir.iterdir())}


if __name__ == "__main__":
    stage(run)
