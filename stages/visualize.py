"""Stage visualize: curves and attention pictures from what train wrote."""

from __future__ import annotations

import json
from pathlib import Path

from scratchformer.config import Params
from scratchformer.files import write_json
from scratchformer.render import attention_pictures as attention
from scratchformer.render import pictures as plots
from stages import stage

PARAMS = ("probe", "train.grad_clip", "train.label_smoothing")


def run(
    params: Params, live_dir: Path, snapshots_path: Path, confusion_dir: Path, images_dir: Path, weights_path: Path
) -> Path:
    """Curves and attention pictures from what train wrote; confusion matrices from evaluate's counts."""
    plots.use_cjk_font()
    probe = json.loads(snapshots_path.read_text(encoding="utf-8"))
    head = params.probe.head
    plots.save_figure(plots.loss_figure(live_dir, params.train.label_smoothing), images_dir / "loss.png")
    plots.save_figure(plots.grad_norm_figure(live_dir, params.train.grad_clip), images_dir / "grad_norm.png")
    plots.save_figure(plots.diagnostics_figure(live_dir), images_dir / "diagnostics.png")
    plots.save_figure(attention.heatmap_figure(probe), images_dir / "attention_heatmap.png")
    plots.save_figure(attention.evolution_figure(probe, head), images_dir / "attention_evolution.png")
    plots.save_figure(attention.all_heads_evolution_figure(probe), images_dir / "attention_evolution_heads.png")
    attention.write_gif(attention.evolution_frames(probe, head), images_dir / "attention_evolution.gif")
    write_json(weights_path, attention.plotted_weights(probe, head))
    for split in ("validation", "test"):
        table = json.loads((confusion_dir / f"{split}.json").read_text(encoding="utf-8"))
        figure = plots.confusion_figure(table, f"Confusion matrix ({split})")
        plots.save_figure(figure, images_dir / f"confusion_{split}.png")
    return images_dir


if __name__ == "__main__":
    stage(run, lambda images_dir: f"pictures in {images_dir}/")
