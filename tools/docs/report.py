"""Rewrite the generated blocks of README.md and docs/ from ``dvc metrics show`` / ``dvc exp show``.

Numbers in the docs are never typed by hand: ``python -m tools.docs.report readme`` asks
DVC for them and rewrites the blocks between ``<!-- name:start -->`` and
``<!-- name:end -->`` in README.md and every page of docs/ (see :mod:`tools.docs.pages`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from scratchformer.files import write_text
from scratchformer.render import markdown
from scratchformer.reporting.commands import dvc_json
from scratchformer.reporting.experiments import experiments
from tools.docs import ablations, levers, pages, results
from tools.docs.seeds import seed_groups, seed_table


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.docs.report", description=__doc__)
    parser.add_argument(
        "what",
        choices=["readme", "review", "ablations", "layers", "levers", "seeds"],
        help="readme: every block of README.md and docs/; review: only the example review (docs/review.md); "
        "ablations: docs/ablations.md; layers: only its Pre-LN vs Post-LN layer table; "
        "levers: its one-Transformer levers and re-split check (kept in docs/levers.json); "
        "seeds: print experiments that differ only in seed as mean ± std",
    )
    parser.add_argument("--file", type=Path, help="only this page (default: README.md and docs/*.md)")
    args = parser.parse_args(argv)
    if args.what == "seeds":
        print(seed_table(seed_groups(experiments(dvc_json("exp", "show", "--all-commits")))))
        return
    if args.what == "levers":
        path = args.file or Path("docs/ablations.md")
        levers.update_levers(path, dvc_json("exp", "show", "--all-commits"))
        print(f"updated {path} and {levers.RECORD}")
        return
    if args.what in ("ablations", "layers"):
        path = args.file or Path("docs/ablations.md")
        ablations.update_ablations(path, tables=args.what == "ablations")
        print(f"updated {path}")
        return
    src = pages.Sources()
    if args.what == "review":
        path = args.file or Path("docs/review.md")
        text = path.read_text(encoding="utf-8")
        write_text(path, markdown.replace_block(text, "review", pages.review_block(text)))
        print(f"updated {path}")
        return
    for name in results.recipe_drift(src.records, "best") if src.has_best else []:
        print(f"warning: the `best` experiment and recipes/best.yaml disagree on {name}")
    changed = pages.update([args.file] if args.file else pages.pages(), src)
    print("updated " + (", ".join(map(str, changed)) if changed else "nothing: every block is current"))


if __name__ == "__main__":
    main()
