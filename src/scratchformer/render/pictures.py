"""Pictures of a training run: curves, confusion matrices, token relevance, and the setup they share.

Everything is drawn from files the stages wrote (dvclive curves, confusion counts) or
from predictions; nothing here touches the model. The probe sentence's attention is
drawn by :mod:`scratchformer.render.attention_pictures`, with the setup here. Chinese
tokens are drawn with Noto Sans CJK SC, shipped by the ``mplfonts`` package, so they
render as glyphs on a machine with no CJK system font. Every text is drawn as the
characters it holds (:func:`plain_text`): a class name, token or review that contains
``$`` is not math.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib import font_manager
from matplotlib.figure import Figure

from scratchformer.files import write_atomic

CJK_FONT_FILE = "NotoSansCJKsc-Regular.otf"
F = TypeVar("F", bound=Callable)


def plain_text(draw: F) -> F:
    """Run ``draw`` with matplotlib reading no text as math (mathtext or TeX), then put the setting back.

    Class names, tokens and texts come from the data; matplotlib would read "$...$" in
    them as mathtext and fail on "$$" or "$\\frac{1}$" (after a whole training run, in
    visualize). A text takes the setting when it is made, and tick labels are made when the
    figure is drawn, so saving a figure needs it too; the rest of a notebook keeps its own.
    """

    @functools.wraps(draw)
    def drawn(*args, **kwargs):
        with plt.rc_context({"text.parse_math": False, "text.usetex": False}):
            return draw(*args, **kwargs)

    return drawn  # type: ignore[return-value]


def use_cjk_font() -> str:
    """Register the CJK font shipped with mplfonts and make it the default; return its name."""
    import mplfonts

    path = Path(mplfonts.__file__).parent / "fonts" / CJK_FONT_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path}: CJK font missing; reinstall mplfonts (pip install -r requirements.txt)")
    font_manager.fontManager.addfont(str(path))
    name = font_manager.FontProperties(fname=str(path)).get_name()
    plt.rcParams["font.family"] = [name, "DejaVu Sans"]
    plt.rcParams["axes.unicode_minus"] = False
    return name


@plain_text
def save_figure(fig: Figure, path: Path, dpi: int = 120) -> None:
    write_atomic(path, lambda tmp: fig.savefig(tmp, format="png", dpi=dpi, bbox_inches="tight"))
    plt.close(fig)


def read_curve(live_dir: Path, name: str) -> pd.DataFrame:
    """A dvclive curve, e.g. ``step/loss`` -> columns step, loss."""
    return pd.read_csv(live_dir / "plots" / "metrics" / f"{name}.tsv", sep="\t")


@plain_text
def loss_figure(live_dir: Path, label_smoothing: float = 0.0) -> Figure:
    """Step losses (the training objective) and per-epoch train/validation cross-entropy.

    With label smoothing the objective is not the plain cross-entropy that the
    epoch curves show, and the legend says so.
    """
    steps = read_curve(live_dir, "step/loss")
    fig, ax = plt.subplots(figsize=(8, 4.5))
    objective = f"objective, label smoothing {label_smoothing:g}" if label_smoothing else "train loss"
    ax.plot(steps["step"], steps["loss"], color="0.75", lw=0.6, label=f"{objective} (step)")
    window = max(1, len(steps) // 50)
    ax.plot(
        steps["step"],
        steps["loss"].rolling(window, min_periods=1).mean(),
        lw=1.5,
        label=f"{objective} (mean of {window} steps)",
    )
    steps_per_epoch = len(steps) / max(1, len(read_curve(live_dir, "epoch/val_loss")))
    for key, style in (("train_loss", "o--"), ("val_loss", "s-")):
        epochs = read_curve(live_dir, f"epoch/{key}")
        ax.plot(epochs["step"] * steps_per_epoch, epochs[key], style, label=f"{key.replace('_', ' ')} (epoch)")
    ax.set(xlabel="step", ylabel="cross-entropy", title="Loss")
    ax.legend()
    ax.grid(alpha=0.3)
    return fig


@plain_text
def grad_norm_figure(live_dir: Path, clip: float) -> Figure:
    steps = read_curve(live_dir, "step/grad_norm")
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.plot(steps["step"], steps["grad_norm"], lw=0.7, label="global gradient norm before clipping")
    if clip > 0:
        clipped = (steps["grad_norm"] > clip).mean()
        ax.axhline(clip, color="crimson", ls="--", label=f"clip threshold {clip:g} ({clipped:.0%} of steps clipped)")
    ax.set_yscale("log")
    ax.set(xlabel="step", ylabel="global L2 norm (log scale)", title="Gradient norm")
    ax.legend()
    ax.grid(alpha=0.3, which="both")
    return fig


@plain_text
def diagnostics_figure(live_dir: Path) -> Figure:
    """Left: each layer's gradient norm before clipping over training. Right: every head's attention entropy per epoch.

    The right panel's dashed line is log T, the entropy of a head that spreads
    its weight evenly; a head near 0 has collapsed onto one key.
    """
    metrics = live_dir / "plots" / "metrics"
    groups = sorted((metrics / "step" / "layer_grad_norm").glob("*.tsv"), key=_group_order)
    heads = sorted((metrics / "epoch" / "attention").glob("layer*/head*/entropy.tsv"))
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8))
    window = None
    for path in groups:
        curve = pd.read_csv(path, sep="\t")
        window = window or max(1, len(curve) // 50)
        left.plot(curve["step"], curve.iloc[:, 1].rolling(window, min_periods=1).mean(), lw=1.2, label=path.stem)
    left.set_yscale("log")
    left.set(xlabel="step", ylabel="L2 norm (log scale)", title=f"Gradient norm per layer (mean of {window} steps)")
    left.legend(fontsize=8)
    left.grid(alpha=0.3, which="both")
    cmap = plt.get_cmap("tab10")
    layers = sorted({p.parent.parent.name for p in heads})
    for path in heads:
        curve = pd.read_csv(path, sep="\t")
        layer, head = path.parent.parent.name, path.parent.name
        style = ("-", "--", ":", "-.")[int(head.removeprefix("head")) % 4]
        color = cmap(layers.index(layer) % 10)
        right.plot(curve["step"], curve["entropy"], style, color=color, marker="o", ms=3, label=f"{layer} {head}")
    reference = metrics / "epoch" / "attention" / "max_entropy.tsv"
    if reference.is_file():
        curve = pd.read_csv(reference, sep="\t")
        right.plot(curve["step"], curve["max_entropy"], "k--", marker="_", ms=12, lw=1, label="log T (uniform)")
    right.set(xlabel="epoch (0 = initialisation)", ylabel="entropy, nats", title="Attention entropy per head")
    right.set_ylim(bottom=0)
    right.legend(fontsize=7, ncol=2)
    right.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def _group_order(path: Path) -> tuple[int, int]:
    """embedding, layer0, layer1, …, head: the order data flows through the model."""
    name = path.stem
    if name == "embedding":
        return (0, 0)
    if name.startswith("layer"):
        return (1, int(name.removeprefix("layer")))
    return (2, 0)


@plain_text
def confusion_figure(table: dict, title: str) -> Figure:
    """Counts with the class names on both axes (rows: actual, columns: predicted)."""
    counts = np.array(table["counts"])  # (K, K)
    names = table["classes"]
    K = len(names)
    fig, ax = plt.subplots(figsize=(2.2 + 0.9 * K, 1.8 + 0.8 * K))
    im = ax.imshow(counts, cmap="Blues")
    ax.set_xticks(range(K), names, rotation=45 if K > 4 else 0, ha="right" if K > 4 else "center")
    ax.set_yticks(range(K), names)
    top = counts.max() if counts.size else 0
    for i in range(K):
        for j in range(K):
            color = "white" if counts[i, j] > top / 2 else "black"
            ax.text(j, i, str(counts[i, j]), ha="center", va="center", color=color, fontsize=9)
    ax.set(xlabel="predicted", ylabel="actual", title=title)
    fig.colorbar(im, ax=ax, fraction=0.046)
    fig.tight_layout()
    return fig


CLASS_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:pink", "tab:olive")
AWAY_COLOUR = "tab:gray"  # with more than two classes, a push away from the label names no one class


@plain_text
def relevance_figure(rows: list[tuple[str, list[str], list[float], str]], class_names: list[str]) -> Figure:
    """One bar chart per text: each token's signed relevance, the tokens on the axis in reading order.

    ``rows`` holds ``(title, tokens, relevance, label)`` per text, special tokens already
    left out, so there is one bar per token the text is made of; relevance is toward
    ``label`` (the predicted class), so a bar above 0 pushed toward it and one below
    away from it. A bar takes the colour of the class it pushed toward, the same colour
    for a class in every chart: with two classes a bar below 0 pushed toward the other
    class; with more, it is grey (away from ``label``, toward no one class). Each chart's
    legend names the class of each colour. Titles and tokens are drawn as plain text
    (``parse_math=False``): a review holding ``$`` is not matplotlib mathtext.
    """
    from matplotlib.patches import Patch

    if not rows:
        raise ValueError("no text to draw")
    colour = {name: CLASS_COLOURS[i % len(CLASS_COLOURS)] for i, name in enumerate(class_names)}
    longest = max(len(tokens) for _, tokens, _, _ in rows)
    width = min(40.0, max(6.0, 0.32 * longest + 1.5))  # inches; 40 keeps a 256-token text drawable
    fig, axes = plt.subplots(len(rows), 1, figsize=(width, 2.6 * len(rows)), squeeze=False)
    for ax, (title, tokens, relevance, label) in zip(axes[:, 0], rows, strict=True):
        if label not in colour:
            raise ValueError(f"label {label!r} of {title!r} is not one of the classes {class_names}")
        others = [name for name in class_names if name != label]
        away, away_colour = (
            (f"toward {others[0]}", colour[others[0]]) if len(others) == 1 else (f"away from {label}", AWAY_COLOUR)
        )
        colours = [colour[label] if r >= 0 else away_colour for r in relevance]
        ax.bar(range(len(tokens)), relevance, color=colours)
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_xticks(range(len(tokens)), tokens, fontsize=9 if len(tokens) <= 80 else 6, parse_math=False)
        ax.set_xlim(-0.6, len(tokens) - 0.4)
        ax.set_ylabel(f"relevance toward\n{label} (logits)", parse_math=False)
        ax.set_title(title, loc="left", fontsize=10, parse_math=False)
        legend = [Patch(color=colour[label], label=f"toward {label}"), Patch(color=away_colour, label=away)]
        ax.legend(handles=legend, loc="upper right", fontsize=7, framealpha=0.8)
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig
