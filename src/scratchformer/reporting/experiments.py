"""``dvc metrics show`` and ``dvc exp show`` output as flat records, for the docs and the benchmarks, and as
the table ``scratchformer report experiments`` prints."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from pathlib import Path
from typing import Any

from scratchformer.config import Params


def flat_params(params: Params) -> dict[str, Any]:
    """``params`` as a flat record holds them: dotted keys, and a list where the config keeps a tuple.

    params.yaml and ``dvc exp show`` give lists (``data.split``, ``pretrain.corpora``); a tuple
    would never compare equal to one.
    """
    flat = flatten(dataclasses.asdict(params))
    return {k: list(v) if isinstance(v, tuple) else v for k, v in flat.items()}


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


RECORD_KEYS = ("name", "rev", "baseline")  # which run a record is; the rest are params and "file:metric" keys
ACCURACY = {"validation": "eval:validation.accuracy", "test": "eval:test.accuracy"}
NO_EXPERIMENTS = "no experiments"  # how the report of none begins
NAME_WIDTH = 24  # longer experiment names are cut with "…"


def params(record: dict[str, Any]) -> dict[str, Any]:
    """The params of ``record``: its keys that are neither ``name``/``rev``/``baseline`` nor ``file:metric``."""
    return {k: v for k, v in record.items() if ":" not in k and k not in RECORD_KEYS}


def short_keys(keys: set[str]) -> dict[str, str]:
    """Each dotted key to its last part where no other key ends the same (``model.n_layers`` -> ``n_layers``).

    ``train.epochs`` and ``pretrain.epochs`` keep their sections: either alone would be ambiguous.
    """
    last = [k.rsplit(".", 1)[-1] for k in keys]
    return {k: k.rsplit(".", 1)[-1] if last.count(k.rsplit(".", 1)[-1]) == 1 else k for k in keys}


def changed_params(record: dict[str, Any], baseline: dict[str, Any]) -> dict[str, Any]:
    """The params of ``record`` that differ from ``baseline``'s, in key order (a param it lacks reads None)."""
    mine, theirs = params(record), params(baseline)
    return {k: mine.get(k) for k in sorted(mine.keys() | theirs.keys()) if mine.get(k) != theirs.get(k)}


def _cell(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return json.dumps(value)  # as params.yaml and `-S` spell them: true, false, null
    return str(value)


def experiments_table(records: list[dict[str, Any]], width: int = 120) -> str | None:
    """One line per experiment of ``records`` (:func:`experiments`): validation and test accuracy, changed params.

    A param is listed as ``key=value`` when it differs from the params of the commit the
    experiment ran on; the list wraps under its column so that no line is wider than ``width``.
    None when ``records`` holds no experiment, only commits.
    """
    commits = {r["rev"]: r for r in records if r["rev"] == r["baseline"]}
    runs = [r for r in records if r["rev"] != r["baseline"]]
    if not runs:
        return None
    changes = [changed_params(r, commits.get(r["baseline"], {})) for r in runs]
    short = short_keys({k for r in records for k in params(r)})
    names = [r["name"] if len(r["name"]) <= NAME_WIDTH else r["name"][: NAME_WIDTH - 1] + "…" for r in runs]
    name_width = max(len("experiment"), *map(len, names))
    header = f"{'experiment':<{name_width}}  validation    test  "
    indent = " " * len(header)
    lines = [header + "changed params (vs the commit it ran on)"]
    for name, record, changed in zip(names, runs, changes, strict=True):
        scores = [record.get(key) for key in ACCURACY.values()]
        cells = [f"{s:.4f}" if isinstance(s, int | float) else "-" for s in scores]
        listed = " ".join(f"{short[k]}={_cell(v)}" for k, v in changed.items()) or "(none)"
        wrapped = textwrap.wrap(listed, width - len(indent), break_on_hyphens=False) or [""]
        lines.append(f"{name:<{name_width}}  {cells[0]:>10}  {cells[1]:>6}  {wrapped[0]}".rstrip())
        lines += [indent + more for more in wrapped[1:]]
    return "\n".join(lines)
