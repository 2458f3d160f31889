"""DVC stage: validation/test accuracy and F1, confusion data, acceptance checks.

Exits non-zero, after writing the metrics, when a math check (attention parity,
causal leak, padding leak) fails: those are properties of the code. Validation
accuracy below its threshold only clears ``acceptance.passed``: a weak ablation
is still a result to compare.
"""

import argparse
import dataclasses
import json
import logging
import sys
from pathlib import Path

from scratchformer.acceptance import failures
from scratchformer.config import load_params
from scratchformer.pipeline import evaluate
from stages import run_stage


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--tokenized", type=Path, required=True)
    parser.add_argument("--metrics", type=Path, required=True)
    parser.add_argument("--confusion", type=Path, required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    params = load_params(args.params)
    result = evaluate.run(params, args.model, args.tokenized, args.metrics, args.confusion)
    print(json.dumps(result, indent=2))
    checks = result["acceptance"]
    if not checks["passed"] and checks["validation_accuracy"] < params.acceptance.validation_accuracy:
        print(
            f"acceptance: validation accuracy {checks['validation_accuracy']} is below "
            f"acceptance.validation_accuracy={params.acceptance.validation_accuracy} (passed: false)"
        )
    failed = failures(checks, dataclasses.asdict(params.acceptance))
    if failed:
        sys.exit("\n".join([*failed, f"(metrics written to {args.metrics})"]))


if __name__ == "__main__":
    run_stage(main)
