"""Dividing a one-file corpus, finding texts that leak from train into evaluation, checking splits can measure."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from scratchformer.data.labels import DataError

SPLIT_NAMES = ("train", "validation", "test")

# Whitespace at either end of a text, Unicode's included (the ideographic space U+3000
# pads many Chinese reviews): RE2's \s alone is ASCII only. The same set as Arrow's
# utf8_trim_whitespace, which does the stripping.
_SPACE = r"[\s\x{0B}\x{1C}-\x{1F}\x{85}\p{Z}]"
EDGE_SPACE = f"^{_SPACE}|{_SPACE}$"

Texts = pa.Array | pa.ChunkedArray | Sequence[str]


def stratified_split(labels: np.ndarray, fractions: tuple[float, ...], seed: int) -> dict[str, np.ndarray]:
    """Row indices of train / validation / test, each class divided in ``fractions``.

    Within each class (in class-id order) the rows are shuffled by one generator
    seeded with ``seed``; validation and test take round(n_c * fraction) of them and
    train the rest, so every class's count is within one row of its expected share.
    Indices come back sorted: a split keeps the file's order. Same labels, fractions
    and seed, same split.
    """
    rng = np.random.default_rng(seed)
    chosen: dict[str, list[np.ndarray]] = {name: [] for name in SPLIT_NAMES}
    for c in np.unique(labels):
        rows = rng.permutation(np.flatnonzero(labels == c))
        n_val = round(len(rows) * fractions[1])
        n_test = round(len(rows) * fractions[2])
        n_train = len(rows) - n_val - n_test
        chosen["train"].append(rows[:n_train])
        chosen["validation"].append(rows[n_train : n_train + n_val])
        chosen["test"].append(rows[n_train + n_val :])
    return {name: np.sort(np.concatenate(parts)) for name, parts in chosen.items()}


def stratified_share(labels: np.ndarray, share: float, seed: int) -> np.ndarray:
    """Row indices of the ``share`` of ``labels`` kept, round(n_c * share) of each class, at least one.

    For a learning curve: train reduced while validation and test stay as they are. Each
    class's rows are shuffled by one generator seeded with ``seed`` and the first of them
    kept, so with one seed a smaller share keeps a subset of a larger one's rows: a curve's
    points differ only by the reviews added. Indices come back sorted (the file's order).
    """
    rng = np.random.default_rng([seed, 1])  # not the split's own stream: which rows are kept is a second draw
    kept = [
        rng.permutation(rows)[: max(1, round(len(rows) * share))]
        for rows in (np.flatnonzero(labels == c) for c in np.unique(labels))
    ]
    return np.sort(np.concatenate(kept))


def strip_edges(texts: Texts) -> pa.Array | pa.ChunkedArray:
    """``texts`` without the whitespace at either end (Unicode's: U+3000, NBSP, line breaks); inside kept.

    The one normalisation of texts: ingest applies it to every text it reads, and
    :func:`in_train` compares texts under it. Texts are copied only if some need it;
    Arrow stays Arrow (chunked or not), anything else becomes a string array.
    """
    if not isinstance(texts, pa.Array | pa.ChunkedArray):
        texts = pa.array(texts, pa.string())
    if pc.any(pc.match_substring_regex(texts, EDGE_SPACE)).as_py():
        return pc.utf8_trim_whitespace(texts)
    return texts


def stripped(texts: Texts) -> pa.Array:
    """``texts`` as one Arrow string array, edges stripped (:func:`strip_edges`): the form texts are compared in."""
    return _flat(strip_edges(texts))


def in_train(train: Texts, texts: Texts) -> np.ndarray:
    """Which of ``texts`` occur in ``train``: a boolean mask, exact match after :func:`strip_edges`.

    The mask of the evaluation rows a model may score by memory; the rest (``~mask``)
    is a split's *unseen* part. Both sides are stripped of edge whitespace and then
    compared code point for code point: no case folding, no Unicode normalisation, no
    change inside a text. :func:`leakage` counts with this mask; the baseline and
    evaluate stages score the unseen part with it.
    """
    train, texts = stripped(train), stripped(texts)
    # Hash only ``texts`` (an evaluation split, small), then only the train texts they share.
    shared = pc.unique(train.filter(pc.is_in(train, value_set=texts)))
    return pc.is_in(texts, value_set=shared).to_numpy(zero_copy_only=False).astype(bool)


def leakage(train: Texts, others: list[Texts]) -> dict:
    """How many evaluation texts also occur in train, as :func:`in_train` matches them.

    ``validation_in_train`` / ``test_in_train``: rows of that split whose text is a
    train text (a model can score them by memory); ``train_in_validation_or_test``:
    train rows whose text occurs in either, the rows ``data.dedupe`` removes;
    ``train_mask`` (an Arrow boolean array) marks them.
    """
    validation, test = others
    evaluation = pa.concat_arrays([stripped(validation), stripped(test)])
    train_mask = pa.array(in_train(evaluation, train))
    return {
        "validation_in_train": int(in_train(train, validation).sum()),
        "test_in_train": int(in_train(train, test).sum()),
        "train_in_validation_or_test": int(train_mask.to_numpy(zero_copy_only=False).sum()),
        "train_mask": train_mask,
    }


def _flat(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


# Rows every class needs in train and in validation. One validation row moves accuracy
# by 1/n and a class's recall by 1/n_c: below 10 rows a single review shifts that class's
# recall, and its F1, by more than 10 points, far beyond the differences the pipeline
# compares (ablations differ by a point or two), and a model that guesses can pass
# acceptance.validation_accuracy by luck (two rows of two classes: one guess in four).
# Ten rows of a class are also the fewest a model could be said to learn it from.
MIN_CLASS_ROWS = 10


def check_splits(class_rows: dict[str, dict[str, int]], origins: dict[str, str]) -> list[str]:
    """Stop if a split cannot measure what the pipeline reports; return the warnings to record.

    ``class_rows``: split -> class name -> rows. Every class needs ``MIN_CLASS_ROWS`` rows
    in train (to learn it) and in validation (to select and accept on it): fewer is an
    error naming the split, the class and the fix. A class with fewer in test is a
    warning: test scores then say little or nothing about it.
    """
    warnings = []
    for split in SPLIT_NAMES:
        for name, n in class_rows[split].items():
            if n >= MIN_CLASS_ROWS:
                continue
            elsewhere = ", ".join(f"{other} {rows[name]}" for other, rows in class_rows.items() if other != split)
            what = f"class {name!r} has {n} {split} row{'' if n == 1 else 's'} ({elsewhere})"
            if split == "test":  # recorded in a tracked output: no path in it
                measure = "do not measure it" if n == 0 else "hardly measure it"
                warnings.append(f"{what}: test scores {measure} (at least {MIN_CLASS_ROWS} rows wanted)")
                continue
            what = f"{origins[split]}: {what}"
            if split == "train":
                why = "a model cannot learn it" if n == 0 else f"too few to learn it from (at least {MIN_CLASS_ROWS})"
                raise DataError(f"{what}: {why}; add train rows of it, or remove the class from every split")
            else:
                why = (
                    "its validation F1 would be a meaningless 0"
                    if n == 0
                    else f"one row moves its validation recall by 1/{n} (at least {MIN_CLASS_ROWS} rows needed)"
                )
                raise DataError(f"{what}: {why}; add validation rows of it, or set data.split to divide the corpus")
    return warnings
