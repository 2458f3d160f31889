"""How the n-gram member reads by the length of review it is fit on and the length it reads, and without markers.

The train stage's member (``nb`` in params.yaml, :mod:`scratchformer.model.naive_bayes`) reads
the networks' ids, each review cut at ``tokenizer.max_len`` tokens, where TF-IDF LR reads the
whole review. This fits the member as the train stage fits it on the train split of the
pipeline (``data/raw/train.parquet``) with each review cut there or read whole (up to
``--whole`` tokens), and scores it on the validation split and on every review of another
corpus (as ``benchmarks/transfer.py`` reads it), read cut or whole, in bands of text length
(in characters): fit on the cut and reading it, as the member does; fit whole and reading the
cut, as ``nb.fit_len`` does; whole on both sides; and whole on both sides with the tokenizer's
[CLS] and [SEP] read as padding (``nb.special_tokens`` false: no n-gram marks where a review
starts or ends). Each is also scored on the short reviews of ``short_reviews`` in params.yaml.
The last rows pair whole on both sides, with the markers and without, with the cut on both, on
the same reviews (paired bootstrap). Writes ``benchmarks/results/member_length.json``.

    python benchmarks/member_length.py [--corpus online-shopping] [--whole 512] [--bands 16 60]
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np
import torch
from transfer import length_bands, other_corpus

from scratchformer.analysis.evaluation import predict_logits
from scratchformer.analysis.scoring import paired_bootstrap
from scratchformer.config import load_params
from scratchformer.data.ingest import read_split
from scratchformer.data.labels import Classes
from scratchformer.data.short_reviews import read_short_reviews
from scratchformer.data.tokenization import load_saved_tokenizer
from scratchformer.data.tokenized_split import TokenizedSplit
from scratchformer.files import write_json
from scratchformer.reporting import commands
from scratchformer.train.ensemble import fit_nb

OUT = "benchmarks/results/member_length.json"
# (the fit's reviews, the reviews it reads, whether it reads [CLS] and [SEP])
READINGS = (("cut", "cut", True), ("whole", "cut", True), ("whole", "whole", True), ("whole", "whole", False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="online-shopping", help="a folder (or hub id) as data.source takes it")
    parser.add_argument("--whole", type=int, default=512, help="tokens of a review read whole ([CLS], [SEP] included)")
    parser.add_argument("--bands", type=int, nargs="+", default=[16, 60], help="upper ends of the length bands")
    parser.add_argument("--tokenizer", default="data/tokenizer")
    args = parser.parse_args()
    params = load_params("params.yaml")
    tokenizer = load_saved_tokenizer(args.tokenizer)
    classes = Classes.read("data/raw/classes.json").names
    train, validation = read_split("data/raw", "train"), read_split("data/raw", "validation")
    other, in_train = other_corpus(args.corpus, set(train["text"]), classes, params.data)
    lengths = {"cut": params.tokenizer.max_len, "whole": args.whole}
    if params.short_reviews is None:
        parser.error("params.yaml short_reviews is null: this benchmark also scores the member on those reviews")
    short = read_short_reviews(params.short_reviews, classes)
    frames = {"train": train, "validation": validation, "short": short, "other": other}
    split = {  # each frame tokenized once at each length
        (name, length): TokenizedSplit.encoded(tokenizer, f["text"].tolist(), f["label"].to_numpy(), cut)
        for name, f in frames.items()
        for length, cut in lengths.items()
    }
    fitted = {  # as the train stage fits the member (folds and validation at the cut)
        (length, markers): fit_nb(
            dataclasses.replace(params.nb, special_tokens=markers),
            len(classes),
            tokenizer,
            train_split=split["train", "cut"],
            val_split=split["validation", "cut"],
            fit_split=split["train", length],
        ).model
        for length, markers in dict.fromkeys((fit, markers) for fit, _, markers in READINGS)
    }
    scored = ("validation", "short", "other")
    right = {}
    for fit, read, markers in READINGS:
        with torch.no_grad():
            answers = {n: predict_logits(fitted[fit, markers], split[n, read], 512).argmax(1) for n in scored}
        right[fit, read, markers] = [answers[name].numpy() == frames[name]["label"].to_numpy() for name in answers]

    chars = other["text"].str.len().to_numpy()
    parts = {"validation": (0, np.ones(len(validation), dtype=bool)), "short": (1, np.ones(len(short), dtype=bool))}
    parts |= {f"{first}-{last}": (2, rows) for (first, last), rows in length_bands(chars, args.bands)}
    readings = []
    for (fit, read, markers), sides in right.items():
        scores = {name: float(sides[which][rows].mean()) for name, (which, rows) in parts.items()}
        readings.append({"fit": fit, "read": read, "markers": markers, "accuracy": scores})
        print(f"fit {fit}, reads {read}, markers {markers}: " + ", ".join(f"{n} {a:.4f}" for n, a in scores.items()))
    cut = right["cut", "cut", True]
    versus = {}
    for key, markers in (("whole_minus_cut", True), ("text_minus_cut", False)):
        whole = right["whole", "whole", markers]
        versus[key] = {n: paired_bootstrap(whole[w][rows], cut[w][rows], params.seed) for n, (w, rows) in parts.items()}
        print(f"{key}: " + ", ".join(f"{n} {v['delta']:+.4f}" for n, v in versus[key].items()))
    commit = commands.run("git", "rev-parse", "--short", "HEAD").strip()  # a failure says so, not an empty commit
    record = {"commit": commit, "corpus": args.corpus, "rows": len(other), "in_train": in_train, "lengths": lengths}
    record |= {"nb": dataclasses.asdict(params.nb), "n": {name: int(rows.sum()) for name, (_, rows) in parts.items()}}
    write_json(OUT, {**record, "readings": readings, **versus})
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
