"""The transfer block: the model and the n-gram baselines on a corpus none was trained on, by text length,
from what ``benchmarks/transfer.py`` last wrote; and the member-length block, the n-gram member fit and read
at the networks' cut or whole, from what ``benchmarks/member_length.py`` last wrote; and the unknown-tokens
block, how much of each corpus the tokenizer reads as [UNK], from ``benchmarks/unknown_tokens.py``."""

from __future__ import annotations

import json
from pathlib import Path

from scratchformer.render import markdown
from tools.docs.corpora import signed_interval

RESULTS = Path("benchmarks/results/transfer.json")
MEMBER_LENGTH = Path("benchmarks/results/member_length.json")
UNKNOWN_TOKENS = Path("benchmarks/results/unknown_tokens.json")


def transfer_block(path: Path = RESULTS) -> str | None:
    """One row per length band: its reviews, each reader's accuracy, the model minus TF-IDF LR with its interval."""
    if not path.is_file():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    readers = list(record["bands"][0]["accuracy"])
    rows = []
    for band in record["bands"]:
        lo, hi = band["chars"]
        versus = band["model_minus_tfidf"]
        interval = signed_interval(versus["delta"], versus["ci95"]["lo"], versus["ci95"]["hi"])
        accuracies = [f"{band['accuracy'][r]:.4f}" for r in readers]
        rows.append([f"{lo}–{hi}", f"{band['n']:,}", *accuracies, interval])
    opening = (
        f"Measured by `benchmarks/transfer.py` at commit `{record['commit']}`: `{record['model']}` and the n-gram "
        f"baselines fit on the pipeline's train split, on the {record['rows']:,} reviews of `{record['corpus']}` "
        f"({record['in_train']} also in train, left out), by length in characters; the last column is the model's "
        "accuracy minus TF-IDF LR's on the same reviews, with its 95% paired bootstrap interval."
    )
    header = ["characters", "reviews", *readers, "model minus TF-IDF LR"]
    return opening + "\n\n" + markdown.table(header, rows)


def member_length_block(path: Path = MEMBER_LENGTH) -> str | None:
    """One row per way the member is fit and reads (cut or whole, with [CLS] and [SEP] or without): its
    accuracy on validation, on the short reviews and in each length band of the other corpus; then whole on
    both sides (with the markers, then without) minus the cut on both, with its interval."""
    if not path.is_file():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    parts = list(record["n"])
    cut, whole = record["lengths"]["cut"], record["lengths"]["whole"]
    words = {"cut": f"cut at {cut}", "whole": f"whole (up to {whole})"}
    marks = {True: "read", False: "padding"}
    rows = [
        [words[r["fit"]], words[r["read"]], marks[r.get("markers", True)], *(f"{r['accuracy'][p]:.4f}" for p in parts)]
        for r in record["readings"]
    ]
    paired = {"whole_minus_cut": "whole minus the cut", "text_minus_cut": "whole, markers as padding, minus the cut"}
    for key, said in paired.items():
        if key in record:
            versus = record[key]
            rows.append([said, "", "", *(signed_interval(versus[p]["delta"], **versus[p]["ci95"]) for p in parts)])
    opening = (
        f"Measured by `benchmarks/member_length.py` at commit `{record['commit']}`: the n-gram member as `nb` in "
        f"params.yaml sets it, fit on the pipeline's train split and read on its validation split "
        f"({record['n'][parts[0]]:,} reviews), on the short reviews of `short_reviews` and on the "
        f"{record['rows']:,} reviews of `{record['corpus']}` by length in characters, each review cut at the "
        "networks' tokens or read whole, the tokenizer's [CLS] and [SEP] read or taken as padding "
        "(`nb.special_tokens`); the last rows' intervals are 95% paired bootstrap intervals over the same reviews."
    )
    named = {"validation": "validation", "short": f"short reviews ({record['n'].get('short', 0):,})"}
    columns = [named.get(p) or f"`{record['corpus']}` {p.replace('-', '–')} ({record['n'][p]:,})" for p in parts]
    header = ["fit on reviews", "reads reviews", "[CLS], [SEP]", *columns]
    return opening + "\n\n" + markdown.table(header, rows)


def unknown_tokens_block(path: Path = UNKNOWN_TOKENS) -> str | None:
    """One row per corpus and casing: the reviews holding an [UNK], the share of tokens that are one, and the
    strings most often read as [UNK], each with its count."""
    if not path.is_file():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    rows = []
    for corpus in record["corpora"]:
        for how, read in corpus["read"].items():
            often = ", ".join(f"{markdown.plain(text)} ({n:,})" for text, n in read["most_often"])
            holding = f"{read['reviews_holding']:,} ({read['reviews_share']:.1%})"
            rows.append(
                [f"`{corpus['corpus']}`", f"{corpus['reviews']:,}", how, holding, f"{read['token_share']:.2%}", often]
            )
    opening = (
        f"Measured by `benchmarks/unknown_tokens.py` at commit `{record['commit']}`: every review of each corpus "
        f"tokenized by `{record['tokenizer']}` as its config says and lowercased (`tokenizer.lowercase: true`)."
    )
    header = [
        "corpus",
        "reviews",
        "casing",
        "reviews holding an [UNK]",
        "tokens that are [UNK]",
        "read as [UNK] most often",
    ]
    return opening + "\n\n" + markdown.table(header, rows)
