"""Conclusions that survive a change of seed: experiments that differ only in ``seed``, summarised.

A queued sweep such as ``dvc exp run --queue -S 'seed=42,43,44' -S model.n_layers=4``
gives runs whose params are equal except for ``seed``; their spread is what one run's
accuracy can move by chance. :func:`seed_groups` collects them from the records of
``dvc exp show`` (see :func:`scratchformer.reporting.experiments.experiments`) and
:func:`seed_table` writes mean ± sample standard deviation, min and max.
"""

from __future__ import annotations

import statistics
from typing import Any

from scratchformer.render import markdown

METRICS = {"validation": "eval:validation.accuracy", "test": "eval:test.accuracy"}


def _params(record: dict[str, Any]) -> tuple:
    """The record's params (``dvc exp show`` keys without a ``file:`` prefix), ``seed`` left out."""
    return tuple(sorted((k, repr(v)) for k, v in record.items() if ":" not in k and k not in ("name", "rev", "seed")))


def seed_groups(records: list[dict[str, Any]], min_seeds: int = 2) -> list[dict[str, Any]]:
    """Groups of evaluated experiments equal in every param but ``seed``, with >= ``min_seeds`` seeds.

    Each group: ``names`` and ``seeds`` (one run per seed: the first listed, the
    newest in `dvc exp show`), ``params`` (the shared ones), and per split
    ``mean``, ``std`` (sample, n - 1), ``min``, ``max`` and the ``values``.
    """
    groups: dict[tuple, dict[Any, dict]] = {}
    for record in records:
        if record.get(METRICS["validation"]) is None or record.get("seed") is None:
            continue
        groups.setdefault(_params(record), {}).setdefault(record["seed"], record)
    out = []
    for params, by_seed in groups.items():
        if len(by_seed) < min_seeds:
            continue
        runs = [by_seed[s] for s in sorted(by_seed)]
        group: dict[str, Any] = {"names": [r["name"] for r in runs], "seeds": sorted(by_seed), "params": dict(params)}
        for split, key in METRICS.items():
            values = [r[key] for r in runs if r.get(key) is not None]
            group[split] = {
                "values": values,
                "mean": statistics.fmean(values),
                "std": statistics.stdev(values) if len(values) > 1 else 0.0,
                "min": min(values),
                "max": max(values),
            }
        out.append(group)
    return out


def seed_table(groups: list[dict[str, Any]]) -> str:
    """Markdown: one row per group, accuracy as mean ± std (min–max) over its seeds."""

    def cell(stats: dict[str, float]) -> str:
        return f"{stats['mean']:.4f} ± {stats['std']:.4f} ({stats['min']:.4f}–{stats['max']:.4f})"

    header = ["runs", "seeds", "validation accuracy, mean ± std (min–max)", "test accuracy, mean ± std (min–max)"]
    rows = [
        [
            ", ".join(f"`{n}`" for n in g["names"]),
            ", ".join(str(s) for s in g["seeds"]),
            cell(g["validation"]),
            cell(g["test"]),
        ]
        for g in groups
    ]
    return markdown.table(header, rows)
