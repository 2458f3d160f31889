"""docs/labels.md's generated blocks, from the download stage's outputs: the most suspect labels
of each split (plots/label_issues/<split>.csv) and the contradiction counts (metrics/data.json).

Run from the repository root after `dvc repro download`:

    python -m tools.docs.labels [--page docs/labels.md] [--top 10]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from scratchformer.files import write_text
from scratchformer.render import markdown

SPLITS = ("train", "validation", "test")
BLOCKS = (*(f"label-issues-{s}" for s in SPLITS), "contradictions")
TEXT_CHARS = 80  # a long review is cut here, with an ellipsis


def suspects_table(path: Path, top: int) -> str:
    """The ``top`` most suspect rows of one ranking CSV, and how many cleanlab flags."""
    frame = pd.read_csv(path, dtype={"text": str, "label": str, "suggested": str}, keep_default_na=False)
    flagged = int((frame["issue"].astype(str) == "True").sum())
    rows = []
    for rank, r in enumerate(frame.head(top).itertuples(index=False), start=1):
        text = r.text if len(r.text) <= TEXT_CHARS else r.text[:TEXT_CHARS] + "…"
        rows.append([rank, r.row, r.label, r.suggested, f"{float(r.score):.6f}", markdown.escape(text)])
    head = f"cleanlab flags {flagged} labels of {path.stem}; the {len(rows)} most suspect:\n\n"
    return head + markdown.table(["#", "row", "label", "suggested", "score", "text"], rows)


def contradictions_table(metrics: dict) -> str:
    """Exact and near counts side by side (see scratchformer.analysis.duplicates)."""
    counts = metrics["contradictions"]
    rows = [[f"`{key}`", counts["exact"][key], counts["near"][key]] for key in counts["exact"]]
    issues = metrics["label_issues"]
    flagged = ", ".join(f"{s} {issues[s]}" for s in SPLITS)
    table = markdown.table(["count", "exact", "near"], rows)
    return f"{table}\n\nLabels cleanlab flags (`label_issues.<split>`): {flagged}."


def update(page: Path, root: Path, top: int) -> bool:
    """Fill ``page``'s blocks from the outputs under ``root``; whether the page changed."""
    before = text = page.read_text(encoding="utf-8")
    for split in SPLITS:
        text = markdown.replace_block(
            text, f"label-issues-{split}", suspects_table(root / "plots/label_issues" / f"{split}.csv", top)
        )
    metrics = json.loads((root / "metrics/data.json").read_text(encoding="utf-8"))
    text = markdown.replace_block(text, "contradictions", contradictions_table(metrics))
    if text != before:
        write_text(page, text)
    return text != before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--page", type=Path, default=Path("docs/labels.md"))
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args()
    print(f"{args.page}: {'updated' if update(args.page, Path('.'), args.top) else 'unchanged'}")


if __name__ == "__main__":
    main()
