"""``scratchformer review [BASE] [HEAD]``: what moved between two revisions, on one page.

Every number and picture comes from DVC: ``dvc params diff``, ``dvc metrics diff`` and
``dvc plots diff``, which read each revision's committed outputs (git, or the DVC cache),
so the workspace is read only when it is HEAD. The vega-lite specs that ``dvc plots diff``
fills with both revisions' data are rendered to PNG by vl-convert (the Vega and
Vega-Lite JavaScript libraries compiled into a Python wheel: no browser, no Node); the
pictures the pipeline drew are shown side by side. The result is ``review/report.md``
(for a pull-request comment) and a self-contained ``review/report.html``.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from scratchformer.files import atomic_dir, write_text
from scratchformer.render.markdown import code, plain
from scratchformer.reporting.commands import ReportError, dvc_json, resolve_revision
from scratchformer.reporting.page import ABSENT, Report, Section, Table, fmt, to_html, to_markdown
from scratchformer.reporting.plots import relabel, render_plots

WORKSPACE = "workspace"


@dataclass(frozen=True)
class Row:
    """One param or metric of both revisions, as ``dvc … diff --json`` reports it (None = absent)."""

    path: str
    key: str
    old: Any
    new: Any

    @property
    def changed(self) -> bool:
        return self.old != self.new


def rows(diff: dict) -> list[Row]:
    """Flatten ``{path: {key: {"old": …, "new": …}}}`` from ``dvc params/metrics diff --json``, sorted."""
    flat = [Row(path, key, v.get("old"), v.get("new")) for path, keys in diff.items() for key, v in keys.items()]
    return sorted(flat, key=lambda r: (r.path, r.key))


def cell(value: Any) -> str:
    return ABSENT if value is None else fmt(value)


def number(value: Any) -> float | None:
    """A metric as a number: ints, floats and exact fractions written "a/b"; anything else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*/\s*\d+\s*", value):
        return float(Fraction(value.replace(" ", "")))
    return None


def change(old: Any, new: Any) -> tuple[str, str]:
    """(absolute, relative) change, "" where it has no meaning (absent, not a number, from zero)."""
    a, b = number(old), number(new)
    if a is None or b is None:
        return "", ""
    absolute = "0" if b == a else ("+" if b > a else "-") + fmt(abs(b - a))
    relative = f"{(b - a) / abs(a):+.1%}" if a else ""
    return absolute, relative


def params_section(params: list[Row], labels: tuple[str, str]) -> Section:
    changed = [r for r in params if r.changed]
    section = Section("Params that changed")
    if not changed:
        section.notes.append("No param differs.")
        return section
    section.table = Table(["file", "param", *labels], [[r.path, r.key, cell(r.old), cell(r.new)] for r in changed])
    return section


def is_minimum(check: str) -> bool:
    """Scores (accuracy, F1) must reach their threshold; every other check is an error that must stay below it."""
    return any(word in check for word in ("accuracy", "f1"))


def passes(check: str, value: Any, limit: Any) -> bool | None:
    v, t = number(value), number(limit)
    if v is None or t is None:
        return None
    return v >= t if is_minimum(check) else v < t


def verdict(old: bool | None, new: bool | None, labels: tuple[str, str]) -> str:
    if old is not None and new is not None:
        return {
            (True, True): "still passing",
            (True, False): "newly failing",
            (False, True): "newly passing",
            (False, False): "still failing",
        }[(old, new)]
    if new is None:
        return f"absent in {labels[1]}"
    return f"{'passing' if new else 'failing'} (absent in {labels[0]})"


def acceptance_section(metrics: list[Row], params: list[Row], labels: tuple[str, str]) -> Section:
    """The ``acceptance.passed`` flag, then each acceptance check against its threshold in params."""
    section = Section("Acceptance")
    checks = [r for r in metrics if r.key.startswith("acceptance.")]
    if not checks:
        section.notes.append(plain(f"Neither {labels[0]} nor {labels[1]} has acceptance metrics."))
        return section
    limits = {r.key: r for r in params if r.key.startswith("acceptance.")}
    for flag in (r for r in checks if isinstance(r.old, bool) or isinstance(r.new, bool)):
        said = verdict(flag.old, flag.new, labels)
        section.notes.append(f"**{code(flag.key)}: {plain(said)}** ({plain(cell(flag.old))} → {plain(cell(flag.new))})")
    table = []
    for r in checks:
        if isinstance(r.old, bool) or isinstance(r.new, bool):
            continue
        name = r.key.removeprefix("acceptance.")
        limit = limits.get(r.key)
        if limit is None:
            table.append([name, cell(r.old), cell(r.new), ABSENT, "no threshold in params"])
            continue
        bound = "≥" if is_minimum(name) else "<"
        said = verdict(passes(name, r.old, limit.old), passes(name, r.new, limit.new), labels)
        threshold = f"{bound} {cell(limit.new)}" + (f" (was {cell(limit.old)})" if limit.changed else "")
        table.append([name, cell(r.old), cell(r.new), threshold, said])
    section.table = Table(["check", *labels, "threshold", "verdict"], table)
    return section


def without_metrics(metrics: list[Row], labels: tuple[str, str]) -> list[str]:
    """A sentence for each revision at which every metric is absent (none committed, or no pipeline yet)."""
    return [
        f"{label} has no metrics: every metric reads {ABSENT} there."
        for label, side in zip(labels, ("old", "new"), strict=True)
        if metrics and all(getattr(r, side) is None for r in metrics)
    ]


def metrics_section(metrics: list[Row], labels: tuple[str, str]) -> Section:
    """Every metric that changed (acceptance checks are above) first, then the n-gram baseline's unchanged rows.

    What moved is what a reviewer came for: it leads the table, and the baseline's
    unchanged rows (the reference a change is read against) follow it.
    """
    section = Section("Metrics", notes=[plain(note) for note in without_metrics(metrics, labels)])
    metrics = [r for r in metrics if not r.key.startswith("acceptance.")]
    moved = [r for r in metrics if r.changed]
    reference = [r for r in metrics if not r.changed and "baseline" in Path(r.path).stem]
    if not metrics:
        section.notes.append(plain(f"Neither {labels[0]} nor {labels[1]} has metrics."))
    elif not moved and not reference:
        section.notes.append("No metric differs.")
    else:
        hidden = len(metrics) - len(moved) - len(reference)
        left_out = f"; {hidden} other unchanged left out" if hidden else ""
        said = f"{len(moved)} metric{'s' * (len(moved) != 1)} changed" if moved else "No metric changed"
        if moved and reference:
            said += ": they come first, then"
        elif reference:
            said += ";"
        if reference:
            said += f" the n-gram baseline's {len(reference)} unchanged, for reference"
        section.notes.append(f"{said}{left_out}.")
        section.table = Table(
            ["file", "metric", *labels, "change", "relative"],
            [[r.path, r.key, cell(r.old), cell(r.new), *change(r.old, r.new)] for r in moved + reference],
        )
    return section


def build(base: str, head: str | None, images: Path) -> Report:
    """The review of ``base`` against ``head`` (None: the workspace); PNGs are written into ``images``."""
    # dvc is given commit ids: a name is only ever shown, never parsed as an argument.
    revs = [resolve_revision(rev) for rev in ([base] if head is None else [base, head])]
    labels = (base, head or WORKSPACE)
    params = rows(dvc_json("params", "diff", *revs, "--all"))
    metrics = rows(dvc_json("metrics", "diff", *revs, "--all"))
    names = dict(zip(revs, labels[: len(revs)], strict=True))  # the workspace is dvc's "workspace" already
    plots = relabel(dvc_json("plots", "diff", *revs, "-o", str(images / ".dvc-plots")), names)
    sections = [
        acceptance_section(metrics, params, labels),
        params_section(params, labels),
        metrics_section(metrics, labels),
        *render_plots(plots, labels, images),
    ]
    return Report(f"Review: {labels[0]} → {labels[1]}", sections, warnings=without_metrics(metrics, labels))


def write_review(base: str, head: str | None, out: Path) -> Report:
    """Write ``out/report.md``, ``out/report.html`` and ``out/images/``, replacing a previous review."""
    if out.exists() and any(out.iterdir()) and not (out / "report.md").is_file():
        raise ReportError(f"refusing to replace {out}: it is not empty and holds no report.md of a previous review")
    with atomic_dir(out) as tmp:
        report = build(base, head, tmp / "images")
        write_text(tmp / "report.md", to_markdown(report))
        write_text(tmp / "report.html", to_html(report, tmp / "images"))
    return report


def excerpt(base: str, head: str | None, level: int = 4) -> str:
    """The sections of a review that hold no pictures (acceptance, params, metrics), for docs/review.md."""
    with tempfile.TemporaryDirectory() as tmp:
        report = build(base, head, Path(tmp))
    return to_markdown(Report(report.title, report.sections[:3]), level=level)
