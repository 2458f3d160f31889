"""``dvc metrics show`` and ``dvc exp show`` output as flat records, for the docs and the benchmarks."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def flatten(data: dict, prefix: str = "") -> dict[str, Any]:
    """{"a": {"b": 1}} -> {"a.b": 1}."""
    flat = {}
    for key, value in data.items():
        if isinstance(value, dict):
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def workspace_metrics(metrics_show: dict) -> dict[str, Any]:
    """Flatten ``dvc metrics show --json`` of the workspace into {"eval:test.accuracy": …}."""
    (files,) = [rev["data"] for rev in metrics_show.values()]
    return {
        f"{Path(path).stem}:{key}": value
        for path, content in files.items()
        for key, value in flatten(content.get("data", {})).items()
    }


def experiments(exp_show: list[dict]) -> list[dict[str, Any]]:
    """One flat record per experiment (and the commit it ran on) of ``dvc exp show --json``.

    Params keep their dotted keys (``model.n_layers``); metrics are prefixed by their
    file's stem (``eval:test.accuracy``); ``name``, ``rev`` and ``baseline`` (the commit
    an experiment ran on) say which run it is.
    """
    records = []

    def add(entry: dict, name: str, baseline: str | None) -> None:
        data = entry.get("data") or {}
        record = {"name": name, "rev": entry.get("rev"), "baseline": baseline}
        for kind in ("params", "metrics"):
            for path, content in (data.get(kind) or {}).items():
                prefix = "" if kind == "params" else f"{Path(path).stem}:"
                record.update({f"{prefix}{k}": v for k, v in flatten(content.get("data", {})).items()})
        records.append(record)

    for rev in exp_show:
        if rev.get("rev") == "workspace":
            continue
        add(rev, rev.get("name") or rev.get("rev", "")[:7], rev.get("rev"))
        for branch in rev.get("experiments") or []:
            for exp in branch.get("revs", []):
                add(exp, exp.get("name") or exp.get("rev", "")[:7], rev.get("rev"))
    return records
