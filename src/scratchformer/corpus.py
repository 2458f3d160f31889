"""Dividing a one-file corpus, and finding texts that leak from train into evaluation."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

SPLIT_NAMES = ("train", "validation", "test")


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


def leakage(train: pa.ChunkedArray, others: list[pa.ChunkedArray]) -> dict:
    """How many evaluation texts also occur in train (exact match after stripping).

    ``validation_in_train`` / ``test_in_train``: rows of that split whose text is a
    train text (a model can score them by memory); ``train_in_validation_or_test``:
    train rows whose text occurs in either, the rows ``data.dedupe`` removes;
    ``train_mask`` marks them.
    """
    validation, test = others
    # Hash only the (small) evaluation texts, then only the train texts they share.
    mask = pc.is_in(train, value_set=pa.concat_arrays([_flat(validation), _flat(test)]))
    shared = pc.unique(_flat(train.filter(mask)))
    return {
        "validation_in_train": pc.sum(pc.is_in(validation, value_set=shared)).as_py() or 0,
        "test_in_train": pc.sum(pc.is_in(test, value_set=shared)).as_py() or 0,
        "train_in_validation_or_test": pc.sum(mask).as_py() or 0,
        "train_mask": mask,
    }


def _flat(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
