"""Command line: ``scratchformer predict`` (also ``python -m scratchformer predict``)."""

from __future__ import annotations

import argparse
import json
import sys

from scratchformer.predict import Prediction, Predictor


def _format(p: Prediction) -> str:
    tokens = " ".join(f"{t['token']}({t['relevance']:.2f})" for t in p.top_tokens)
    line = f"{p.label}\t{p.probability:.3f}\t{p.text}\n\tdriven by: {tokens}"
    if p.truncated:
        line += f"\n\ttruncated: the model read the first {p.read_tokens} of {p.n_tokens} tokens"
    return line


def predict_main(args: argparse.Namespace) -> int:
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scratchformer", description="The scratch Transformer's tools.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("predict", help="classify texts (arguments, or one per line on stdin)")
    p.add_argument("texts", nargs="*", help="texts to classify; none = read stdin")
    p.add_argument("--model", default="models/model.pt")
    p.add_argument("--tokenizer", default="data/tokenizer")
    p.add_argument("--top", type=int, default=5, help="how many driving tokens to show")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args(argv)
    return predict_main(args)


if __name__ == "__main__":
    sys.exit(main())
