"""Pictures of the probe sentence's attention: the last heatmap, and how it moved over training.

Drawn from the probe snapshots the train stage wrote (``plots/probe/snapshots.json``):
the probe layer's attention in every head after each epoch, the query token's row of
it, and the model's class probabilities. The drawing setup (plain text, the CJK font,
saving a figure) is :mod:`scratchformer.render.pictures`'.
"""

from __future__ import annotations

import io
from pathlib import Path

import imageio.v3 as iio
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from scratchformer.files import write_atomic
from scratchformer.render.pictures import plain_text


@plain_text
def heatmap_figure(probe: dict) -> Figure:
    """Every head of the probe layer after training: T x T attention, query rows, key columns."""
    final = np.array(probe["snapshots"][-1]["attention"])  # (H, T, T)
    tokens = probe["tokens"]
    H = final.shape[0]
    cols = min(H, 2)
    rows = int(np.ceil(H / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(6.5 * cols, 6 * rows), squeeze=False)
    for h, ax in enumerate(axes.flat):
        if h >= H:
            ax.axis("off")
            continue
        im = ax.imshow(final[h], cmap="viridis", vmin=0, vmax=final[h].max())
        ax.set_xticks(range(len(tokens)), tokens, rotation=90, fontsize=8)
        ax.set_yticks(range(len(tokens)), tokens, fontsize=8)
        ax.set_title(f"head {h}")
        ax.set_xlabel("key")
        ax.set_ylabel("query")
        fig.colorbar(im, ax=ax, fraction=0.046)
    epoch = probe["snapshots"][-1]["epoch"]
    fig.suptitle(f"Layer {probe['layer']} attention after epoch {epoch}: {probe['text']}")
    fig.tight_layout()
    return fig


def _n_heads(probe: dict) -> int:
    return len(probe["snapshots"][0]["attention"])


def evolution_matrix(probe: dict, head: int) -> np.ndarray:
    """(epochs incl. init, T): the query token's attention in ``head`` at each snapshot."""
    q = probe["query_index"]
    return np.array([s["attention"][head][q] for s in probe["snapshots"]])


def _evolution_axes(ax, probe: dict, head: int):
    matrix = evolution_matrix(probe, head)
    im = ax.imshow(matrix, cmap="magma", aspect="auto", vmin=0, vmax=matrix.max())
    ax.set_xticks(range(len(probe["tokens"])), probe["tokens"], fontsize=9)
    ax.set_yticks(
        range(len(matrix)), ["init" if s["epoch"] == 0 else f"epoch {s['epoch']}" for s in probe["snapshots"]]
    )
    q = probe["query_index"]
    ax.get_xticklabels()[q].set_color("crimson")
    ax.set_title(f"head {head}")
    return im


@plain_text
def evolution_figure(probe: dict, head: int) -> Figure:
    fig, ax = plt.subplots(figsize=(max(8, 0.45 * len(probe["tokens"])), 3.5))
    im = _evolution_axes(ax, probe, head)
    fig.colorbar(im, ax=ax, fraction=0.03)
    ax.set_title(f"How 「{probe['query_token']}」 attends, layer {probe['layer']} head {head}, as training goes on")
    ax.set_xlabel("key token")
    return fig


@plain_text
def all_heads_evolution_figure(probe: dict) -> Figure:
    H = _n_heads(probe)
    fig, axes = plt.subplots(H, 1, figsize=(max(8, 0.45 * len(probe["tokens"])), 2.6 * H), squeeze=False)
    for h, ax in enumerate(axes[:, 0]):
        im = _evolution_axes(ax, probe, h)
        fig.colorbar(im, ax=ax, fraction=0.03)
    fig.suptitle(f"Attention of 「{probe['query_token']}」 in every head of layer {probe['layer']}")
    fig.tight_layout()
    return fig


@plain_text
def evolution_frames(probe: dict, head: int) -> list[np.ndarray]:
    """One RGB frame per snapshot: the query's attention over the tokens as bars."""
    tokens = probe["tokens"]
    rows = evolution_matrix(probe, head)  # (snapshots, T)
    top = rows.max()
    frames = []
    for s, row in zip(probe["snapshots"], rows, strict=True):
        fig, ax = plt.subplots(figsize=(max(8, 0.45 * len(tokens)), 3.6))
        colors = ["crimson" if i == probe["query_index"] else "steelblue" for i in range(len(tokens))]
        ax.bar(range(len(tokens)), row, color=colors)
        ax.set_xticks(range(len(tokens)), tokens)
        ax.set_ylim(0, top * 1.1)
        label = "initialisation" if s["epoch"] == 0 else f"epoch {s['epoch']}"
        k = int(np.argmax(s["probabilities"]))
        ax.set_title(
            f"「{probe['query_token']}」 attention, head {head}, {label} — "
            f"predicted {probe['class_names'][k]} (P={s['probabilities'][k]:.2f})"
        )
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=100)
        plt.close(fig)
        frames.append(iio.imread(buf.getvalue())[..., :3])
    return frames


def write_gif(frames: list[np.ndarray], path: Path, seconds_per_frame: float = 1.0) -> None:
    write_atomic(
        path,
        lambda tmp: iio.imwrite(tmp, frames, extension=".gif", duration=int(seconds_per_frame * 1000), loop=0),
    )


def plotted_weights(probe: dict, head: int) -> dict:
    """The numbers behind the attention pictures, for anyone who wants to re-plot them."""
    return {
        "tokens": probe["tokens"],
        "query_token": probe["query_token"],
        "query_index": probe["query_index"],
        "layer": probe["layer"],
        "head": head,
        "epochs": [s["epoch"] for s in probe["snapshots"]],
        "query_attention": {f"head_{h}": evolution_matrix(probe, h).round(6).tolist() for h in range(_n_heads(probe))},
        "probabilities": [s["probabilities"] for s in probe["snapshots"]],
    }
