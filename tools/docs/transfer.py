"""The transfer block: the model and the n-gram baselines on a corpus none was trained on, by text length,
from what ``benchmarks/transfer.py`` last wrote."""

from __future__ import annotations

import json
from pathlib import Path

from scratchformer.render import markdown
from tools.docs.corpora import signed_interval

RESULTS = Path("benchmarks/results/transfer.json")


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
