"""Texts that contradict each other: one review, two labels, within a split or across splits.

Two kinds of copy are counted:

- exact: the very same text (as ingest keeps it: whitespace at either end trimmed);
- near: the same text after :func:`normalise` — Unicode NFKC (full-width ``！`` is ``!``,
  ``１`` is ``1``), case folding, and every punctuation mark (Unicode categories P*),
  separator (Z*: spaces, the ideographic space) and control character (Cc: tabs, line
  breaks) dropped. Symbols (S*: emoji, ``～``) and letters stay.

A copy with the same label is harmless; a copy with another label means one of the two
is wrong, and a model trained on both learns neither. Counts (``count``):

- ``<split>``: texts (distinct keys) that occur in that split with two or more labels;
- ``<a>_vs_<b>``: rows of split ``a`` whose text occurs in split ``b`` with another label
  (a validation review that contradicts its own train copy).

The copies also measure the labels' noise without any model (:func:`copy_agreement`): two
rows of one text should carry one label, so the share of copy pairs that disagree says how
often a label is flipped, wherever the text occurs only once too, if flips strike copies as
they strike other reviews.
"""

from __future__ import annotations

import unicodedata

import numpy as np
import pandas as pd

from scratchformer.analysis.scoring import DRAWS_PER_CHUNK, RESAMPLES

PAIRS = (("validation", "train"), ("test", "train"), ("test", "validation"))
DROPPED = ("P", "Z", "Cc")  # Unicode categories (or their first letter) that normalise drops


def normalise(text: str) -> str:
    """NFKC, case-folded, with punctuation, spaces and control characters dropped (module docstring)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return "".join(c for c in folded if not unicodedata.category(c).startswith(DROPPED))


def pool(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Every row of every split: split, row (0-based position in it), text, label (class id), near (normalised)."""
    parts = [
        pd.DataFrame({"split": name, "row": range(len(f)), "text": f["text"].to_numpy(), "label": f["label"]})
        for name, f in frames.items()
    ]
    pooled = pd.concat(parts, ignore_index=True)
    pooled["near"] = pooled["text"].map(normalise)
    return pooled


def _count(pooled: pd.DataFrame, key: str, splits: list[str]) -> dict[str, int]:
    counts = {}
    for split in splits:
        own = pooled[pooled["split"] == split]
        counts[split] = int((own.groupby(key)["label"].nunique() > 1).sum())
    for a, b in PAIRS:
        if a not in splits or b not in splits:
            continue
        rows = pooled[pooled["split"] == a][[key, "label"]]
        other = pooled[pooled["split"] == b][[key, "label"]].drop_duplicates()
        pairs = rows.reset_index().merge(other, on=key, suffixes=("", "_other"))
        counts[f"{a}_vs_{b}"] = int(pairs.loc[pairs["label"] != pairs["label_other"], "index"].nunique())
    return counts


def contradictions(frames: dict[str, pd.DataFrame], names: list[str], seed: int) -> tuple[dict, pd.DataFrame]:
    """Counts ``{"exact": {...}, "near": {...}, "copies": {...}}`` and the list of contradicting rows.

    ``exact`` and ``near`` as in the module docstring; ``copies``: :func:`copy_agreement`, its
    bootstrap seeded with ``seed``.

    The list has one line per row of a near-copy group that holds two labels (every exact
    group is one): ``group`` (1, 2, … in order of first appearance), ``match`` (``exact`` when
    two identical texts of the group disagree, else ``near``), split, row, label, text.
    """
    pooled = pool(frames)
    splits = list(frames)
    counts = {"exact": _count(pooled, "text", splits), "near": _count(pooled, "near", splits)}
    counts["copies"] = copy_agreement(pooled, len(names), seed)
    torn = pooled.groupby("near")["label"].transform("nunique") > 1
    listed = pooled[torn].copy()
    exact = listed.groupby("text")["label"].transform("nunique") > 1
    listed["match"] = exact.groupby(listed["near"]).transform("any").map({True: "exact", False: "near"})
    listed["group"] = pd.factorize(listed["near"])[0] + 1
    listed = listed.sort_values(["group", "label"], kind="stable")
    listed["label"] = [names[i] for i in listed["label"]]
    return counts, listed[["group", "match", "split", "row", "label", "text"]].reset_index(drop=True)


def flip_rate(disagreement: float, num_classes: int) -> float:
    """The chance ε that a label is flipped, from the share of copy pairs whose labels differ.

    Each row's label is its text's true label, replaced with chance ε by one of the other
    K - 1 classes at random, independently of every other row. Two copies then agree with
    chance (1 - ε)² + ε² / (K - 1), so disagreement d = 1 - that, and
    ε = (K - 1) / K · (1 - √(1 - d·K / (K - 1))): for two classes, d = 2ε(1 - ε). Labels that
    agree no better than chance (d ≥ (K - 1) / K) give ε = (K - 1) / K.
    """
    k = num_classes
    return (k - 1) / k * (1 - float(np.sqrt(max(0.0, 1 - disagreement * k / (k - 1)))))


def copy_agreement(pooled: pd.DataFrame, num_classes: int, seed: int) -> dict:
    """How often two rows of one text (near copies, every split pooled) disagree, and the flip rate it implies.

    ``pooled``: every split's rows, as :func:`pool` gives them.

    ``texts``: the normalised texts held by two rows or more; ``pairs``: the pairs of rows
    that share one (a text of c rows has c(c - 1)/2); ``disagreeing_pairs``: those whose
    labels differ; ``flip_rate``: :func:`flip_rate` of their share, with ``flip_rate_ci95``,
    the 2.5th and 97.5th percentiles over bootstrap resamples of the texts, as many as every
    other interval here draws (:data:`~scratchformer.analysis.scoring.RESAMPLES`;
    ``numpy.random.default_rng(seed)``: the same inputs and seed give the same bytes). None
    of the rates when no text has a copy.
    """
    per_label = pooled.groupby(["near", "label"]).size().unstack(fill_value=0).to_numpy()  # (texts, labels)
    per_label = per_label[per_label.sum(axis=1) > 1].astype(np.int64)
    rows = per_label.sum(axis=1)
    pairs = rows * (rows - 1) // 2
    disagreeing = pairs - (per_label * (per_label - 1) // 2).sum(axis=1)
    out: dict = {"texts": len(rows), "pairs": int(pairs.sum()), "disagreeing_pairs": int(disagreeing.sum())}
    if not len(rows):
        return out | {"flip_rate": None, "flip_rate_ci95": None}
    rng = np.random.default_rng(seed)
    per_chunk = max(1, DRAWS_PER_CHUNK // len(rows))  # bounds memory on a corpus of many copies
    shares = np.empty(RESAMPLES)
    for start in range(0, RESAMPLES, per_chunk):
        drawn = rng.integers(0, len(rows), size=(min(per_chunk, RESAMPLES - start), len(rows)))
        shares[start : start + len(drawn)] = disagreeing[drawn].sum(axis=1) / pairs[drawn].sum(axis=1)
    lo, hi = (flip_rate(float(q), num_classes) for q in np.quantile(shares, [0.025, 0.975]))  # ε grows with d
    rate = flip_rate(out["disagreeing_pairs"] / out["pairs"], num_classes)
    return out | {"flip_rate": rate, "flip_rate_ci95": {"lo": lo, "hi": hi}}
