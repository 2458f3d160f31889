"""Stage pretrain: optional masked-language-model pretraining of the encoder (pretrain.epochs > 0)."""

from __future__ import annotations

from pathlib import Path

from scratchformer.checkpoint import save_checkpoint, save_no_pretraining
from scratchformer.config import Params
from scratchformer.files import write_json
from scratchformer.model import TransformerClassifier
from scratchformer.pretraining import pretrain
from scratchformer.tokenization import load_tokenizer, read_class_names, read_tokenized
from scratchformer.training import pick_device, seed_everything


def run(params: Params, tokenized_dir: Path, tokenizer_dir: Path, model_path: Path, metrics_path: Path) -> dict:
    if params.pretrain.epochs == 0:
        save_no_pretraining(model_path)
        metrics = {"epochs": 0}
    else:
        seed_everything(params.seed)
        tokenizer = load_tokenizer(str(tokenizer_dir))
        config = params.model.for_classes(read_class_names(tokenized_dir))
        model = TransformerClassifier(config, len(tokenizer), tokenizer.pad_token_id)
        train_split = read_tokenized(tokenized_dir / "train")
        device = pick_device(params.train.device)
        metrics = pretrain(
            model, train_split, params.pretrain, tokenizer.all_special_ids, tokenizer.mask_token_id, params.seed, device
        )
        save_checkpoint(model_path, model.cpu(), pretrained=True)
    write_json(metrics_path, {"pretrain": metrics})
    return metrics
