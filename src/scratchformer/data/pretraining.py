"""The texts masked-language-model pretraining reads: the train texts, and more unlabeled text.

Pretraining needs no labels, so it can read more than the corpus being scored: every text
of the corpora listed in ``pretrain.corpora`` (hub ids or local folders, read as
``data.source`` is; every split, labels ignored). One rule holds whatever is listed: the
pretraining set never holds a validation or test text of the corpus being scored, compared
as the leakage count and the unseen scores compare texts (:func:`~scratchformer.data.splits.in_train`:
exact, after stripping the whitespace at either end). A model that had read a test review,
even unlabelled, would score it partly by memory, which is what the unseen scores exist to
leave out. So the set is built in three steps, each counted:

1. the train texts, without those that also occur in validation or test (ChnSentiCorp has
   hundreds: the train stage still learns their labels; pretraining does not read them);
2. each listed corpus in turn, without its texts that occur in the scored validation or
   test, and without those the set already holds (a train text, an earlier corpus's, a
   repeat within the corpus): a text is read once however often it occurs;
3. a check over the whole set against validation and test, independent of the filtering
   above: its count (``evaluation_texts_in_pretraining``) must be 0, or nothing is written.

The same ``pretrain.corpora`` can therefore serve every corpus: listed as one of them, the
scored corpus's own validation and test texts are removed and its train texts are repeats.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from scratchformer.data.ingest import text_column
from scratchformer.data.labels import DataError
from scratchformer.data.sources import read_source
from scratchformer.data.splits import in_train, stripped

log = logging.getLogger(__name__)


def corpus_texts(source: str, encoding: str = "utf-8", revision: str | None = None) -> pa.Array:
    """Every non-blank text of every split of ``source``, edges stripped; its text column found as ingest finds it."""
    parts = []
    for ds, origin in read_source(source, revision, encoding).values():
        column = text_column(ds.column_names, origin, hint="pretrain.corpora reads a corpus by one of those names")
        text = stripped(ds.data.table.column(column))
        parts.append(text.filter(pc.fill_null(pc.greater(pc.utf8_length(text), 0), False)))
    return pa.concat_arrays(parts) if parts else pa.array([], pa.string())


def pretraining_texts(
    train: pa.Array, validation: pa.Array, test: pa.Array, corpora: Sequence[tuple[str, pa.Array]]
) -> tuple[pa.Array, dict]:
    """The pretraining set (train texts, then each corpus's new texts) and what each step kept and removed.

    ``corpora`` pairs a name with its texts (:func:`corpus_texts`). Raises :class:`DataError`
    if the final check finds a validation or test text in the set.
    """
    evaluation = pa.concat_arrays([stripped(validation), stripped(test)])
    found, report = _gathered(stripped(train), evaluation, corpora)
    leaked = int(in_train(evaluation, found).sum())  # the check, apart from the filtering it checks
    report["evaluation_texts_in_pretraining"] = leaked
    if leaked:
        raise DataError(f"the pretraining set holds {leaked} validation or test texts of the corpus being scored")
    return found, report


def _gathered(train: pa.Array, evaluation: pa.Array, corpora: Sequence[tuple[str, pa.Array]]) -> tuple[pa.Array, dict]:
    """Steps 1 and 2: the train texts not in ``evaluation``, then each corpus's texts neither there nor held."""
    shared = in_train(evaluation, train)  # train texts that validation or test also holds
    kept = [train.filter(pa.array(~shared))]
    report: dict = {"train": {"texts": len(train), "in_validation_or_test": int(shared.sum()), "used": len(kept[0])}}
    extra = []
    for name, texts in corpora:
        texts = stripped(texts)
        scored = in_train(evaluation, texts)
        new = texts.filter(pa.array(~scored))
        fresh = pc.unique(new.filter(pa.array(~in_train(pa.concat_arrays(kept), new))))  # first of each, in order
        kept.append(fresh)
        extra.append(
            {
                "corpus": name,
                "texts": len(texts),
                "in_validation_or_test": int(scored.sum()),
                "already_held": len(new) - len(fresh),
                "used": len(fresh),
            }
        )
    found = pa.concat_arrays(kept)
    return found, report | {"corpora": extra, "texts": len(found)}
