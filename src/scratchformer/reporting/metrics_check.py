"""``scratchformer metrics check [REV]``: do the metrics here hold against those committed at REV?

Two kinds of number live in ``metrics/``, and they travel differently between machines:

* **exact**: counts, and the fractions made of counts (accuracy, F1, per-class scores,
  supports, row counts, epochs, best epoch, parameters, flags), and what is computed from
  the predictions alone: the unseen part's scores and ``n``, the Wilson intervals
  (``accuracy_ci95.lo``/``.hi``, a closed form of the counts) and ``vs_best_baseline``
  (its baseline's name, the difference and its bootstrap interval: the same predictions
  resampled with a fixed seed by numpy's platform-independent generator). A prediction
  is an argmax, so these are identical on any machine unless a prediction flips, and a
  flip is a real difference worth stopping for.
* **measured**: floats that sum thousands of rounded products (losses, gradient norms,
  entropies, the acceptance errors). Another CPU runs other kernels (AVX-512 vs AVX2),
  another thread count splits the sums differently, and the last bits move. They are
  compared within the tolerance of their kind, stated once in :data:`TOLERANCES`.

On the same machine the numbers are byte-identical anyway (``.ci/run`` checks that by
forcing a second ``dvc repro``); this check is what holds across machines.
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scratchformer.reporting.commands import dvc_json, resolve_revision


@dataclass(frozen=True)
class Tolerance:
    """How far a measured float may move: ``rel`` of the committed value, or ``abs`` outright.

    ``below`` names the params key whose threshold the new value must also stay under
    (the acceptance errors: "below the threshold" is what they mean; their digits don't).
    """

    kind: str
    rel: float = 0.0
    abs: float = 0.0
    below: str | None = None

    def holds(self, old: float, new: float) -> bool:
        return abs(new - old) <= max(self.rel * abs(old), self.abs)

    def describe(self) -> str:
        parts = [f"rel {self.rel:g}"] if self.rel else []
        parts += [f"abs {self.abs:g}"] if self.abs else []
        parts += [f"below {self.below}"] if self.below else []
        return f"{self.kind}: " + ", ".join(parts)


# The one place tolerances are stated. Keys are dotted metric names as `dvc metrics show`
# prints them; the first pattern that matches wins; a metric no pattern matches is exact.
TOLERANCES: list[tuple[str, Tolerance]] = [
    # The acceptance errors are differences of two float32 computations of the same
    # thing: near the float32 ulp of O(1) values (1.2e-7), with no stable digits. They
    # must stay under their threshold, and move by less than a few ulps of 1.
    *[
        (f"acceptance.{name}", Tolerance("acceptance error", abs=1e-6, below=f"acceptance.{name}"))
        for name in ("attention_max_abs_err", "causal_mask_leak", "padding_leak")
    ],
    # Means and norms of many float32 terms after a few hundred optimiser steps: other
    # kernels move the 5th-6th significant digit (grad_norm_median 0.66563 -> 0.66564).
    ("*loss*", Tolerance("loss", rel=1e-3)),
    ("*grad_norm*", Tolerance("gradient norm", rel=1e-3)),
    ("*entropy*", Tolerance("entropy", rel=1e-3)),
    # The share of steps whose gradient norm passed the clip threshold: a count, but of a
    # comparison of a measured float with 1.0, so a norm within 1e-3 of the threshold may
    # land on the other side. 0.01 is 1 step in 100.
    ("*clipped_fraction", Tolerance("clipped share", abs=0.01)),
]


def tolerance_for(key: str) -> Tolerance | None:
    """The tolerance of metric ``key``, or None when it is exact."""
    for pattern, tolerance in TOLERANCES:
        if fnmatch.fnmatchcase(key, pattern):
            return tolerance
    return None


@dataclass(frozen=True)
class Violation:
    path: str
    key: str
    old: Any
    new: Any
    rule: str

    def __str__(self) -> str:
        return f"{self.path}  {self.key}  {self.old!r} -> {self.new!r}  ({self.rule})"


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def compare(diff: dict[str, dict[str, dict[str, Any]]], thresholds: dict[str, float]) -> tuple[list[Violation], int]:
    """Judge a ``dvc metrics diff --all --json`` result; returns (violations, metrics compared).

    ``thresholds`` maps params keys (``acceptance.padding_leak``) to their values, for the
    tolerances that require a value to stay below one.
    """
    violations, compared = [], 0
    for path, metrics in sorted(diff.items()):
        for key, change in sorted(metrics.items()):
            compared += 1
            old, new = change.get("old"), change.get("new")
            if old is None or new is None:
                side = "committed" if new is None else "new"
                violations.append(Violation(path, key, old, new, f"only in the {side} metrics"))
                continue
            tolerance = tolerance_for(key)
            if tolerance is None or not (_number(old) and _number(new)):
                if old != new or type(old) is not type(new):
                    violations.append(Violation(path, key, old, new, "exact: must be identical"))
                continue
            if not (math.isfinite(new) and tolerance.holds(old, new)):
                violations.append(Violation(path, key, old, new, tolerance.describe()))
            elif tolerance.below is not None and not new < thresholds[tolerance.below]:
                rule = f"{tolerance.kind}: must stay below {tolerance.below}={thresholds[tolerance.below]:g}"
                violations.append(Violation(path, key, old, new, rule))
    return violations, compared


def check(
    rev: str = "HEAD", params: Path = Path("params.yaml"), cwd: Path | None = None
) -> tuple[list[Violation], int]:
    """Compare the workspace's metrics with those committed at ``rev``."""
    from scratchformer.config import load_params

    commit = resolve_revision(rev, cwd=cwd)
    diff = dvc_json("metrics", "diff", commit, "--all", cwd=cwd)
    acceptance = load_params((cwd or Path()) / params).acceptance
    thresholds = {f"acceptance.{k}": v for k, v in vars(acceptance).items()}
    return compare(diff, thresholds)
