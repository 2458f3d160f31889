"""docs/labels.md's generated blocks, from the download stage's outputs: the most suspect labels
of each split (plots/label_issues/<split>.csv) and the contradiction counts (metrics/data.json).

Two corpora, each with blocks of its own. ChnSentiCorp's are made from the pipeline's outputs;
run from the repository root after `dvc repro download`:

    python -m tools.docs.labels [--page docs/labels.md] [--top 10]

The product reviews (online-shopping/products.csv) are not the pipeline's corpus, so
``--download`` runs the download stage on them first, with params.yaml's settings but for
:data:`PRODUCTS`, into a folder of its own laid out as the repository (DIR/plots/label_issues,
DIR/metrics/data.json, DIR/data/raw): the committed outputs stay as they are.

    python -m tools.docs.labels --corpus products --download --from DIR
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
from pathlib import Path

import pandas as pd

from scratchformer.config import Params, load_params
from scratchformer.data.fingerprints import fingerprint
from scratchformer.files import write_json, write_text
from scratchformer.render import markdown

SPLITS = ("train", "validation", "test")
CORPORA = {"chnsenticorp": "", "products": "products-"}  # corpus -> the prefix of its blocks' names
COMMANDS = {
    "chnsenticorp": "python -m tools.docs.labels",
    "products": "python -m tools.docs.labels --corpus products --download --from DIR",
}
# The product reviews are one file: divided here, the one blank review dropped (data.drop_empty).
PRODUCTS = {"source": "online-shopping", "split": (0.8, 0.1, 0.1), "drop_empty": True}
TEXT_CHARS = 80  # a long review is cut here, with an ellipsis


def blocks(corpus: str) -> tuple[str, ...]:
    """The names of ``corpus``'s blocks: ``<prefix>label-issues-<split>`` and ``<prefix>contradictions``."""
    prefix = CORPORA[corpus]
    return (*(f"{prefix}label-issues-{s}" for s in SPLITS), f"{prefix}contradictions")


BLOCKS = {name: COMMANDS[corpus] for corpus in CORPORA for name in blocks(corpus)}  # block -> what writes it


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
    return f"{table}\n\nLabels cleanlab flags (`label_issues.<split>`): {flagged}." + copies_sentence(counts)


def copies_sentence(counts: dict) -> str:
    """``contradictions.copies`` as a sentence: pairs of copies that disagree, and the flip rate they imply.

    Empty for metrics written before the stage counted it, or for a corpus without copies.
    """
    copies = counts.get("copies")
    if not copies or copies["flip_rate"] is None:
        return ""
    ci = copies["flip_rate_ci95"]
    return (
        f"\n\nOf the {copies['texts']:,} texts that two rows or more hold (near copies, every split pooled), "
        f"{copies['disagreeing_pairs']:,} of their {copies['pairs']:,} pairs of rows disagree: if each label "
        f"were flipped with one chance, independently of every other (`contradictions.copies.flip_rate`), "
        f"that chance would be **{copies['flip_rate']:.1%}** (95% bootstrap over the texts: "
        f"{ci['lo']:.1%}–{ci['hi']:.1%})."
    )


def update(page: Path, root: Path, top: int, corpus: str = "chnsenticorp") -> bool:
    """Fill ``corpus``'s blocks of ``page`` from the outputs under ``root``; whether the page changed.

    The other corpus's blocks are left as they are.
    """
    issues, contradictions = blocks(corpus)[:-1], blocks(corpus)[-1]
    before = text = page.read_text(encoding="utf-8")
    for split, name in zip(SPLITS, issues, strict=True):
        text = markdown.replace_block(text, name, suspects_table(root / "plots/label_issues" / f"{split}.csv", top))
    metrics = json.loads((root / "metrics/data.json").read_text(encoding="utf-8"))
    text = markdown.replace_block(text, contradictions, contradictions_table(metrics))
    if text != before:
        write_text(page, text)
    return text != before


def products_params(params: Params) -> Params:
    """``params`` with the data settings of :data:`PRODUCTS`; every other setting as given."""
    return dataclasses.replace(params, data=dataclasses.replace(params.data, **PRODUCTS))


def run_download(params: Params, out: Path) -> dict:
    """The download stage on ``params``, writing under ``out`` where the pipeline writes under the repository.

    The corpus fingerprint the inputs stage would record goes to out/data/inputs/corpus.json
    first (the stage reads the hub revision from it; a folder has none).
    """
    from stages import download  # here: the stage's imports (scikit-learn, cleanlab) only when it runs

    inputs = out / "data/inputs/corpus.json"
    write_json(inputs, fingerprint(params.data.source, params.data.revision, "data.source", "dataset"))
    return download.run(params, inputs, out / "data/raw", out / "metrics/data.json", out / "plots/label_issues")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--page", type=Path, default=Path("docs/labels.md"))
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--corpus", choices=sorted(CORPORA), default="chnsenticorp", help="whose blocks to fill")
    parser.add_argument("--from", dest="root", type=Path, help="the outputs' root (default: . for chnsenticorp)")
    parser.add_argument("--download", action="store_true", help="products: run the download stage into --from first")
    parser.add_argument("--params", type=Path, default=Path("params.yaml"), help="the settings --download starts from")
    args = parser.parse_args()
    if args.corpus == "products" and args.root is None:
        parser.error("--corpus products needs --from DIR: its outputs are not the pipeline's")
    if args.download and args.corpus != "products":
        parser.error("--download is for --corpus products; ChnSentiCorp's outputs come from `dvc repro download`")
    root = args.root or Path(".")
    if args.download:
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
        run_download(products_params(load_params(args.params)), root)
    changed = update(args.page, root, args.top, args.corpus)
    print(f"{args.page}: {'updated' if changed else 'unchanged'}")


if __name__ == "__main__":
    main()
