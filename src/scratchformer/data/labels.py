"""Class labels: what the data calls them, the names people read, the ids the model predicts.

A label column may hold integers (0/1, star ratings 1–5) or text (``positive``,
``体育``). The classes are the distinct labels of the whole corpus, sorted (numbers
by value, text by code point), so the mapping never depends on row order; class id
``i`` is the i-th of them. Integer labels can be given names with
``data.label_names``; text labels are their own names.

Spaces around a label are not part of it (`` pos`` is ``pos``; a warning counts the rows
that had them). Text labels that differ only in case (``pos``, ``POS``) are refused,
naming them: whether they are one class or two is the corpus's to say, and taking them
as two would quietly double the classes.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from scratchformer.config import UserError
from scratchformer.files import write_json

INTEGER = r"^[+-]?[0-9]+$"

log = logging.getLogger(__name__)


class DataError(UserError, ValueError):
    """The corpus cannot be used as it is; the message says where and why."""


def label_keys(
    column: pa.ChunkedArray | pa.Array,
    origin: str,
    rows: np.ndarray | None = None,
    label_names: dict[int, str] | None = None,
) -> pa.Array:
    """The labels of one file as int64 (integers, or text that is all integers) or stripped strings.

    ``rows`` are the file's row numbers (from 1) of the values in ``column``, for
    messages, when some rows were already left out; by default 1, 2, 3, …. With
    ``label_names``, every label must be an integer that it names.
    """
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()

    def row_of(bad: pa.Array) -> int:
        i = pc.index(bad, True).as_py()
        return int(rows[i]) if rows is not None else i + 1

    keys = _keys(column, origin, row_of)
    if label_names is not None:
        named = sorted(label_names)
        if not pa.types.is_integer(keys.type):
            raise DataError(f"{origin}: labels are text, but data.label_names names integer labels ({named})")
        unnamed = pc.invert(pc.is_in(keys, value_set=pa.array(named, pa.int64())))
        if pc.any(unnamed).as_py():
            row = row_of(unnamed)
            value = keys[pc.index(unnamed, True).as_py()].as_py()
            raise DataError(f"{origin}: row {row} has label {value}, which data.label_names does not name ({named})")
    return keys


def _keys(column: pa.Array, origin: str, row_of) -> pa.Array:
    """Integer or text keys of ``column``; a missing or fractional label is an error at ``row_of`` it."""
    kind = column.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        stripped = pc.utf8_trim_whitespace(column)
        missing = pc.fill_null(pc.equal(pc.utf8_length(stripped), 0), True)
        if pc.any(missing).as_py():
            raise DataError(f"{origin}: row {row_of(missing)} has no label")
        spaced = pc.fill_null(pc.not_equal(stripped, column), False)
        if pc.any(spaced).as_py():
            log.warning(
                "%s: %d labels have spaces around them (first at row %d), taken without them",
                origin,
                pc.sum(spaced).as_py(),
                row_of(spaced),
            )
        if pc.all(pc.match_substring_regex(stripped, INTEGER)).as_py():
            return pc.cast(stripped, pa.int64())
        return stripped
    if pa.types.is_integer(kind) or pa.types.is_floating(kind):
        missing = pc.fill_null(pc.is_nan(pc.cast(column, pa.float64())), True)
        if pc.any(missing).as_py():
            raise DataError(f"{origin}: row {row_of(missing)} has no label")
        if pa.types.is_floating(kind):
            fraction = pc.not_equal(column, pc.floor(column))
            if pc.any(fraction).as_py():
                value = column[pc.index(fraction, True).as_py()].as_py()
                raise DataError(f"{origin}: row {row_of(fraction)} has label {value!r}; expected a whole number")
        return pc.cast(column, pa.int64())
    raise DataError(f"{origin}: the label column holds {kind}; expected integers or text")


def _refuse_case_variants(keys: list[str], columns: dict[str, pa.Array]) -> None:
    """Text labels that are one word in different cases (``pos``, ``POS``): stop, naming them and their files."""
    spellings: dict[str, list[str]] = {}
    for key in keys:
        spellings.setdefault(key.casefold(), []).append(key)
    clashes = [group for group in spellings.values() if len(group) > 1]
    if not clashes:
        return
    group = clashes[0]
    where = [o for o, col in columns.items() if pc.any(pc.is_in(col, value_set=pa.array(group))).as_py()]
    more = f" ({len(clashes) - 1} more such groups)" if len(clashes) > 1 else ""
    raise DataError(
        f"data.label_column: labels {', '.join(map(repr, group))} differ only in case{more} (in {', '.join(where)}); "
        "fix the corpus so that each class is spelled one way"
    )


@dataclass(frozen=True)
class Classes:
    """Class id ``i`` is ``keys[i]`` in the data and is called ``names[i]``."""

    keys: list  # ints or strs, sorted
    names: list[str]

    def __len__(self) -> int:
        return len(self.names)

    @classmethod
    def from_keys(cls, columns: dict[str, pa.Array], label_names: dict[int, str] | None = None) -> Classes:
        """The sorted distinct labels of every file (``columns``: origin -> keys from :func:`label_keys`)."""
        kinds = {origin: pa.types.is_integer(col.type) for origin, col in columns.items()}
        if len(set(kinds.values())) > 1:
            ints = [o for o, k in kinds.items() if k]
            texts = [o for o, k in kinds.items() if not k]
            raise DataError(f"labels are integers in {', '.join(ints)} but text in {', '.join(texts)}")
        keys = sorted({k for col in columns.values() for k in pc.unique(col.drop_null()).to_pylist()})
        if not all(kinds.values()):
            _refuse_case_variants(keys, columns)
        if label_names is None:
            names = [str(k) for k in keys]
        else:  # label_keys has checked that every label is named
            unused = sorted(set(label_names) - set(keys))
            if unused:
                raise DataError(f"data.label_names.{unused[0]}: no row has label {unused[0]} (labels: {keys})")
            names = [label_names[k] for k in keys]
        if len(keys) < 2:
            raise DataError(f"only one class ({keys}) in {', '.join(columns)}: a classifier needs at least two")
        return cls(keys, names)

    def ids(self, keys: pa.Array) -> pa.Array:
        """Class ids (int64) of ``keys``; nulls stay null."""
        return pc.cast(pc.index_in(keys, value_set=pa.array(self.keys)), pa.int64())

    def counts(self, ids) -> dict[str, int]:
        """Rows per class name for an array of class ids."""
        per_id = np.bincount(np.asarray(ids, dtype=np.int64), minlength=len(self.names))
        return {name: int(n) for name, n in zip(self.names, per_id, strict=True)}

    def write(self, path: str | Path) -> None:
        write_json(path, {"names": self.names, "labels": self.keys})

    @classmethod
    def read(cls, path: str | Path) -> Classes:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
        return cls(raw["labels"], raw["names"])
