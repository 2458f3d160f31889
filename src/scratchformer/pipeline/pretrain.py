"""Stage pretrain: optional masked-language-model pretraining of the encoder (pretrain.epochs > 0)."""

from __future__ import annotations

from pathlib import Path

from scratchformer.checkpoint import save_checkpoint, save_no_pretraining
from scratchformer.config import Params
from scratchformer.distributed import ALONE, World, pick_device
from scratchformer.files import write_json
from scratchformer.model import TransformerClassifier
from scratchformer.pretraining import pretrain
from scratchformer.resume import load_state, run_key, save_state, stage_code
from scratchformer.tokenization import load_tokenizer, read_class_names, read_tokenized
from scratchformer.training import seed_everything


def run(
    params: Params,
    tokenized_dir: Path,
    tokenizer_dir: Path,
    model_path: Path,
    metrics_path: Path,
    state_path: Path,
    world: World = ALONE,
) -> dict | None:
    """Pretrain (or record that pretraining is off); only rank 0 writes and returns the metrics.

    As in the train stage, the loop's state goes to ``state_path`` at the end
    of every epoch (see :mod:`scratchformer.resume`): a rerun with the same
    params, inputs and code continues from there; the file is removed at the end.
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
    train_split = read_tokenized(tokenized_dir / "train")
    device = world.place(pick_device(params.train.device))
    loop_params = {k: getattr(params.train, k) for k in ("device", "nproc", "precision", "log_every")}
    read = {"seed": params.seed, "model": params.model, "pretrain": params.pretrain, "train": loop_params}
    key = run_key(read, [tokenized_dir, tokenizer_dir], stage_code("pretrain"))
    metrics = pretrain(
        model,
        train_split,
        params.pretrain,
        tokenizer.all_special_ids,
        tokenizer.mask_token_id,
        params.seed,
        device,
        world,
        params.train,
        resume=load_state(state_path, key),
        on_state=lambda state: save_state(state_path, {**state, "key": key}),
    )
    if not world.main:
        return None
    save_checkpoint(model_path, model.cpu(), pretrained=True)
    write_json(metrics_path, {"pretrain": metrics})
    state_path.unlink(missing_ok=True)
    return metrics
