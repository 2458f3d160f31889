"""How the committed model and the n-gram baselines read a corpus none of them was trained on, by length.

The short-review check (``checks/short_reviews.tsv``) holds 162 reviews: one review is 0.6
points there, and a model's count moves by a few reviews with its seed. This scores the
thousands of reviews of another labelled corpus (default ``online-shopping``, whose product
reviews share no text with ChnSentiCorp) with the committed model (``models/model.pt``) and
with TF-IDF LR, SVM and NB-LR fit on the train split of the pipeline
(``data/raw/train.parquet``) as the baseline stage fits them, in bands of text length (in
characters), and compares the model with TF-IDF LR on the same reviews (paired bootstrap).
The corpus is read as ``data.source`` would read it, every row (blank ones dropped); a text
that is also in train is left out and counted. Writes ``benchmarks/results/transfer.json``
(``transfer-NAME.json`` with ``--name``: a record kept beside the last one).

    python benchmarks/transfer.py [--corpus online-shopping] [--bands 16 60] [--name NAME]
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools

import numpy as np
import pandas as pd

from scratchformer.analysis.baseline import make_baseline
from scratchformer.analysis.evaluation import predict_logits
from scratchformer.analysis.scoring import paired_bootstrap
from scratchformer.config import DataConfig, load_params
from scratchformer.data.ingest import load_corpus, read_split
from scratchformer.data.tokenization import load_saved_tokenizer
from scratchformer.data.tokenized_split import TokenizedSplit
from scratchformer.files import write_json
from scratchformer.model.checkpoint import class_names, load_checkpoint
from scratchformer.reporting import commands

OUT = "benchmarks/results/transfer.json"
READERS = {"TF-IDF LR": "logistic", "SVM": "svm", "NB-LR": "nblr"}  # the baseline stage's three, by classifier


def every_row(source: str, data: DataConfig) -> tuple[pd.DataFrame, list[str]]:
    """Every row of ``source`` as ``data.source`` would read it (its splits pooled, blank texts dropped),
    with its labels as indices into the class names, which come second."""
    config = dataclasses.replace(data, source=source, split=(0.8, 0.1, 0.1), resplit=True, drop_empty=True)
    corpus = load_corpus(config)
    return pd.concat([s.frame for s in corpus.splits], ignore_index=True), corpus.classes.names


def other_corpus(source: str, train_texts: set[str], classes: list[str], data: DataConfig) -> tuple[pd.DataFrame, int]:
    """Every row of ``source`` (text, label as an index into ``classes``) not in train; and how many were."""
    frame, names = every_row(source, data)
    frame["label"] = [classes.index(names[i]) for i in frame["label"]]  # by class name
    seen = frame["text"].isin(train_texts)
    return frame[~seen].reset_index(drop=True), int(seen.sum())


def model_answers(texts: list[str], labels: np.ndarray, model, tokenizer_dir: str, max_len: int) -> np.ndarray:
    """The committed model's class for each text, encoded and batched as the evaluate stage does."""
    split = TokenizedSplit.encoded(load_saved_tokenizer(tokenizer_dir), texts, labels, max_len)
    return predict_logits(model, split, 512).argmax(dim=1).numpy()


def length_bands(length: np.ndarray, ends: list[int]) -> list[tuple[tuple[int, int], np.ndarray]]:
    """The bands of ``length`` (characters, up to each of ``ends``, then the rest): (first, last) and its rows;
    a band no review falls in (an end at or past the longest review) is left out."""
    edges = itertools.pairwise([0, *ends, int(length.max())])
    bands = [((lo + 1, hi), (length > lo) & (length <= hi)) for lo, hi in edges]
    return [(band, rows) for band, rows in bands if rows.any()]


def band_scores(length: np.ndarray, right: dict[str, np.ndarray], ends: list[int], seed: int) -> list[dict]:
    """Per band of ``length`` (:func:`length_bands`): every reader's accuracy, and the model's minus
    TF-IDF LR's on the same reviews with its paired bootstrap interval."""
    bands = []
    for (first, last), rows in length_bands(length, ends):
        versus = paired_bootstrap(right["model"][rows], right["TF-IDF LR"][rows], seed)
        accuracy = {name: float(r[rows].mean()) for name, r in right.items()}
        bands.append({"chars": [first, last], "n": int(rows.sum()), "accuracy": accuracy, "model_minus_tfidf": versus})
        shown = ", ".join(f"{name} {a:.4f}" for name, a in accuracy.items())
        d, ci = versus["delta"], versus["ci95"]
        print(
            f"{first}-{last} chars, {rows.sum()} reviews: {shown}; model - TF-IDF LR {d:+.4f} "
            f"[{ci['lo']:+.4f}, {ci['hi']:+.4f}]"
        )
    return bands


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="online-shopping", help="a folder (or hub id) as data.source takes it")
    parser.add_argument("--bands", type=int, nargs="+", default=[16, 60], help="upper ends of the length bands")
    parser.add_argument("--model", default="models/model.pt")
    parser.add_argument("--tokenizer", default="data/tokenizer")
    parser.add_argument("--name", default=None, help="write transfer-NAME.json, kept beside transfer.json")
    args = parser.parse_args()
    out = OUT if args.name is None else OUT.replace("transfer.json", f"transfer-{args.name}.json")
    params = load_params("params.yaml")
    model, info = load_checkpoint(args.model)
    classes = class_names(info, model.config.num_classes)
    train = read_split("data/raw", "train")
    frame, in_train = other_corpus(args.corpus, set(train["text"]), classes, params.data)
    labels = frame["label"].to_numpy()
    answers = {"model": model_answers(frame["text"].tolist(), labels, model, args.tokenizer, params.tokenizer.max_len)}
    for name, kind in READERS.items():
        fitted = make_baseline(params.baseline, params.seed, kind).fit(train["text"], train["label"])
        answers[name] = np.asarray(fitted.predict(frame["text"]), dtype=np.int64)
    right = {name: a == labels for name, a in answers.items()}

    bands = band_scores(frame["text"].str.len().to_numpy(), right, args.bands, params.seed)
    commit = commands.run("git", "rev-parse", "--short", "HEAD").strip()  # a failure says so, not an empty commit
    record = {"commit": commit, "corpus": args.corpus, "model": args.model, "rows": len(frame), "in_train": in_train}
    write_json(out, {**record, "bands": bands})
    print(f"{len(frame)} reviews of {args.corpus} ({in_train} also in train, left out); wrote {out}")


if __name__ == "__main__":
    main()
