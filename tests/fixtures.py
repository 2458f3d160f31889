"""Small corpora and a small tokenizer that the tests write themselves (no network)."""

from __future__ import annotations

import dataclasses
import json
import random
import subprocess
from pathlib import Path

from scratchformer.config import ModelConfig

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
SUBJECTS = ["房间", "服务", "酒店", "早餐", "位置", "电脑", "屏幕", "键盘", "这本书", "价格"]
POSITIVE = ["很好", "不错", "干净", "满意", "喜欢", "方便", "漂亮"]
NEGATIVE = ["很差", "太脏", "失望", "糟糕", "太吵", "难用", "太贵"]
FILLERS = ["也", "真的", "确实", "总体", "感觉", "还是"]
NEUTRAL = ["一般", "还行", "凑合", "普通"]
LABEL_NAMES = {0: "negative", 1: "positive"}  # ChnSentiCorp's names, given as data.label_names
STARS = {"差评": NEGATIVE, "中评": NEUTRAL, "好评": POSITIVE}  # three classes with text labels


def write_tokenizer(folder: Path) -> Path:
    """A BERT-style WordPiece tokenizer over the characters the fixture corpus uses."""
    chars = sorted({c for w in SUBJECTS + POSITIVE + NEGATIVE + NEUTRAL + FILLERS + ["，。但是"] for c in w})
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(SPECIAL + chars) + "\n", encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"tokenizer_class": "BertTokenizer", "do_lower_case": False}), encoding="utf-8"
    )
    (folder / "config.json").write_text(json.dumps({"model_type": "bert"}), encoding="utf-8")
    return folder


def sentences(n: int, seed: int) -> list[tuple[int, str]]:
    """``n`` (label, text) pairs: one or two clauses whose sentiment words decide the label."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        label = i % 2
        words = POSITIVE if label else NEGATIVE
        text = f"{rng.choice(SUBJECTS)}{rng.choice(FILLERS)}{rng.choice(words)}"
        if rng.random() < 0.5:
            text += f"，{rng.choice(SUBJECTS)}{rng.choice(words)}"
        rows.append((label, text + "。"))
    return rows


def write_corpus(folder: Path, sizes=(240, 60, 60), fmt: str = "tsv", dev_name: str = "dev") -> Path:
    """train/dev/test files in ``fmt``; TSV mimics ChnSentiCorp (``label<TAB>text_a``)."""
    folder.mkdir(parents=True, exist_ok=True)
    for (name, n), seed in zip(zip(("train", dev_name, "test"), sizes, strict=True), (1, 2, 3), strict=True):
        rows = sentences(n, seed)
        if name == "train":
            rows[0] = (1, '"引号开头的评论，房间很好。')  # a quote opens the text: must stay one row
            rows[1] = (0, '他说"很差"，服务太吵。')
        write_rows(folder / f"{name}.{fmt}", rows, fmt)
    return folder


def write_rows(path: Path, rows: list[tuple], fmt: str, text_column: str = "text_a") -> None:
    import pandas as pd

    frame = pd.DataFrame(rows, columns=["label", text_column])
    if fmt == "tsv":
        lines = [f"label\t{text_column}"] + [f"{label}\t{text}" for label, text in rows]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    elif fmt == "csv":
        frame.to_csv(path, index=False)
    elif fmt == "parquet":
        frame.to_parquet(path, index=False)
    elif fmt == "jsonl":
        frame.to_json(path, orient="records", lines=True, force_ascii=False)
    else:
        raise ValueError(fmt)


def write_one_file_corpus(path: Path, n: int = 450, blank_rows: tuple[int, ...] = (), seed: int = 7) -> Path:
    """One ``label,review`` CSV with the text labels of :data:`STARS`, in turn; ``blank_rows`` (from 1) empty."""
    rng = random.Random(seed)
    names = list(STARS)
    rows = []
    for i in range(n):
        label = names[i % len(names)]
        words = STARS[label]
        text = f"{rng.choice(SUBJECTS)}{rng.choice(FILLERS)}{rng.choice(words)}"
        if rng.random() < 0.5:
            text += f"，{rng.choice(SUBJECTS)}{rng.choice(words)}"
        rows.append((label, text + "。"))
    for row in blank_rows:
        rows[row - 1] = (rows[row - 1][0], "  ")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_rows(path, rows, "csv", text_column="review")
    return path


TINY = ModelConfig(
    num_classes=2, d_model=16, n_heads=2, n_layers=1, ff_dim=32, max_len=16, dropout=0.0, ngram_max=1, wide_ngrams=0
)


def tiny_config(**overrides) -> ModelConfig:
    """The small model the tests build (2 classes, d_model 16, 2 heads, 1 layer, max_len 16, no
    dropout, tokens only: no n-gram table, no wide branch), with ``overrides``: one definition
    instead of a literal in every test file."""
    return dataclasses.replace(TINY, **overrides)


ROOT = Path(__file__).parents[1]


def committed(relative: str, into: Path) -> Path:
    """``relative`` (a path in the project) as committed at HEAD, written into the folder ``into``.

    Tests that pin the project's own files (params.yaml and what is generated from it) read
    the commit, not the workspace: ``dvc exp run`` applies an experiment's params and outputs
    to the workspace, and the tests must still pass after one. Outside a git checkout (a
    source archive) the workspace file is the commit.
    """
    target = into / Path(relative).name
    shown = subprocess.run(["git", "show", f"HEAD:{relative}"], cwd=ROOT, capture_output=True)
    target.write_bytes(shown.stdout if shown.returncode == 0 else (ROOT / relative).read_bytes())
    return target


def table_rows(table: str) -> list[list[str]]:
    """The body rows of a markdown table (after the header and the rule), each a list of stripped cells."""
    return [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()[2:]]


def block_rows(block: str) -> list[list[str]]:
    """The body rows of the one table in a docs block of prose and a table."""
    return table_rows("\n".join(line for line in block.splitlines() if line.startswith("|")))
