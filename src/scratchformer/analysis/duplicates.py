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
"""

from __future__ import annotations

import unicodedata

import pandas as pd

PAIRS = (("validation", "train"), ("test", "train"), ("test", "validation"))
DROPPED = ("P", "Z", "Cc")  # Unicode categories (or their first letter) that normalise drops


def normalise(text: str) -> str:
    """NFKC, case-folded, with punctuation, spaces and control characters dropped (module docstring)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return "".join(c for c in folded if not unicodedata.category(c).startswith(DROPPED))


def _pooled(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Every row of every split: split, row (0-based position in it), text, label (class id)."""
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


def contradictions(frames: dict[str, pd.DataFrame], names: list[str]) -> tuple[dict, pd.DataFrame]:
    """Counts ``{"exact": {...}, "near": {...}}`` (module docstring) and the list of contradicting rows.

    The list has one line per row of a near-copy group that holds two labels (every exact
    group is one): ``group`` (1, 2, … in order of first appearance), ``match`` (``exact`` when
    two identical texts of the group disagree, else ``near``), split, row, label, text.
    """
    pooled = _pooled(frames)
    splits = list(frames)
    counts = {"exact": _count(pooled, "text", splits), "near": _count(pooled, "near", splits)}
    torn = pooled.groupby("near")["label"].transform("nunique") > 1
    listed = pooled[torn].copy()
    exact = listed.groupby("text")["label"].transform("nunique") > 1
    listed["match"] = exact.groupby(listed["near"]).transform("any").map({True: "exact", False: "near"})
    listed["group"] = pd.factorize(listed["near"])[0] + 1
    listed = listed.sort_values(["group", "label"], kind="stable")
    listed["label"] = [names[i] for i in listed["label"]]
    return counts, listed[["group", "match", "split", "row", "label", "text"]].reset_index(drop=True)
