"""The short-review check: short, obvious reviews written for the project, scored like a split.

ChnSentiCorp's reviews are long (most run past 64 tokens), and a model that has only
read long reviews can misread the few words a person types first (``服务很差``). The
check is a file of such reviews, none taken from any corpus: ``checks/short_reviews.tsv``
holds 162, hotel, book and laptop, half of each class. The pipeline scores the model and
every baseline on it (``short.*`` in ``metrics/eval.json`` and ``metrics/baseline.json``),
so a recipe that reads long reviews well and short ones badly shows it.

The file is a TSV with a header ``text<TAB>label``, one review per line, read as ingest
reads a TSV (no quoting: a ``"`` is a character); a label is a class *name* (``positive``).
A corpus that has none of the file's classes (three classes named 好评, 中评, 差评, say) is
not what the check is for: it is skipped with a warning that says so, and ``short`` is absent
from the metrics. A file whose labels are partly the corpus's is refused at the first other.
"""

from __future__ import annotations

import csv
import logging
from pathlib import Path

import pandas as pd

from scratchformer.data.labels import DataError

COLUMNS = ["text", "label"]

log = logging.getLogger(__name__)


def read_short_reviews(path: str | Path, class_names: list[str]) -> pd.DataFrame | None:
    """The reviews of ``path``: a ``text`` column and a ``label`` column of class ids (the index of the name).

    Refuses, naming the file and row (the line number, header = 1), a file without
    exactly the two columns, a blank text or a label that is not one of ``class_names``;
    None (with a warning) when no label of the file is one of ``class_names``.
    """
    path = Path(path)
    try:
        frame = pd.read_csv(path, sep="\t", quoting=csv.QUOTE_NONE, dtype=str, keep_default_na=False, encoding="utf-8")
    except FileNotFoundError:
        raise DataError(
            f"{path}: no such file of short reviews (params.yaml short_reviews; null turns the check off)"
        ) from None
    except (pd.errors.ParserError, UnicodeDecodeError) as err:
        raise DataError(f"{path}: not a UTF-8 TSV of text<TAB>label lines ({err})") from None
    if list(frame.columns) != COLUMNS:
        raise DataError(f"{path}: the header must be text<TAB>label, not {'<TAB>'.join(map(str, frame.columns))}")
    if frame.empty:
        raise DataError(f"{path}: no reviews")
    ids = {name: i for i, name in enumerate(class_names)}
    if not set(frame["label"]) & set(ids):
        log.warning(
            "%s: its labels (%s) are none of this corpus's classes (%s): the short-review check is skipped "
            "(short_reviews: null in params.yaml says so without this warning)",
            path,
            ", ".join(sorted(set(frame["label"]))),
            ", ".join(class_names),
        )
        return None
    for row, (text, label) in enumerate(zip(frame["text"], frame["label"], strict=True), start=2):
        if not text.strip():
            raise DataError(f"{path}, line {row}: blank text")
        if label not in ids:
            raise DataError(f"{path}, line {row}: label {label!r} is not a class ({', '.join(class_names)})")
    return pd.DataFrame({"text": frame["text"].str.strip(), "label": frame["label"].map(ids).astype("int64")})
