"""Command line: ``scratchformer predict`` and ``scratchformer review`` (also ``python -m scratchformer …``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scratchformer.predict import Prediction


def _format(p: Prediction) -> str:
    tokens = " ".join(f"{t['token']}({t['relevance']:.2f})" for t in p.top_tokens)
    line = f"{p.label}\t{p.probability:.3f}\t{p.text}\n\tdriven by: {tokens}"
    if p.truncated:
        line += f"\n\ttruncated: the model read the first {p.read_tokens} of {p.n_tokens} tokens"
    return line


def predict_main(args: argparse.Namespace) -> int:
    from scratchformer.predict import Predictor

    texts = args.texts or [line for line in sys.stdin.read().splitlines() if line.strip()]
    try:
        predictor = Predictor(args.model, args.tokenizer)
        predictions = predictor.predict(texts, top_k=args.top)
    except (FileNotFoundError, ValueError) as err:
        print(f"scratchformer predict: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([p.as_dict() for p in predictions], ensure_ascii=False, indent=2))
    else:
        print("\n".join(_format(p) for p in predictions))
    return 0


def review_main(args: argparse.Namespace) -> int:
    from scratchformer.reporting.commands import ReportError
    from scratchformer.reporting.review import write_review

    try:
        report = write_review(args.base, args.head, args.out)
    except ReportError as err:
        print(f"scratchformer review: {err}", file=sys.stderr)
        return 2
    for warning in report.warnings:
        print(f"scratchformer review: {warning}", file=sys.stderr)
    print(f"wrote {args.out / 'report.md'} and {args.out / 'report.html'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scratchformer", description="The scratch Transformer's tools.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("predict", help="classify texts (arguments, or one per line on stdin)")
    p.add_argument("texts", nargs="*", help="texts to classify; none = read stdin")
    p.add_argument("--model", default="models/model.pt")
    p.add_argument("--tokenizer", default="data/tokenizer")
    p.add_argument("--top", type=int, default=5, help="how many driving tokens to show")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    r = sub.add_parser(
        "review",
        help="compare two revisions: params, metrics, acceptance, curves, attention, confusion",
        description="Write OUT/report.md and a self-contained OUT/report.html comparing BASE with HEAD.",
    )
    r.add_argument("base", nargs="?", default="main", help="git revision or experiment name (default: main)")
    r.add_argument("head", nargs="?", help="git revision or experiment name (default: the workspace)")
    r.add_argument("--out", type=Path, default=Path("review"), help="output folder (default: review)")
    args = parser.parse_args(argv)
    return review_main(args) if args.command == "review" else predict_main(args)


if __name__ == "__main__":
    sys.exit(main())
