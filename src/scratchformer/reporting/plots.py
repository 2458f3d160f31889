"""Pictures of two revisions from ``dvc plots diff --json``: vega-lite overlays rendered to PNG, images paired.

``dvc plots diff`` fills the vega-lite template of every plot in ``dvc.yaml`` with the data
of both revisions (one colour per revision; confusion matrices one facet per revision) and
copies each revision's image outputs into its ``-o`` folder. Here the specs become PNGs
through vl-convert and the images are paired by plot, one panel per revision.
"""

from __future__ import annotations

import copy
import re
import shutil
from pathlib import Path
from typing import Any

from scratchformer.render.markdown import plain
from scratchformer.reporting.page import ABSENT, Picture, Section


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower() or "plot"


def static_spec(spec: dict, labels: tuple[str, str]) -> dict:
    """The spec set for a still picture: confusion matrices print their counts, BASE's facet comes first."""
    spec = copy.deepcopy(spec)
    for param in spec.get("params", []):
        if param.get("name") == "showValues":
            param["value"] = True
    # DVC's facets keep the order the data comes in (`"sort": []`); that order is BASE, HEAD.
    order = {label: i for i, label in enumerate(labels)}
    values = spec.get("data", {}).get("values", [])
    values.sort(key=lambda row: order.get(row.get("rev"), len(order)) if isinstance(row, dict) else 0)
    return spec


def vega_png(spec: dict, labels: tuple[str, str]) -> bytes:
    import vl_convert  # imported here: only a review needs it

    return vl_convert.vegalite_to_png(static_spec(spec, labels), scale=1)


def _missing(plots: dict) -> dict[str, set[str]]:
    """Plot name -> the revisions whose data DVC could not load (it lists them under "errors")."""
    missing: dict[str, set[str]] = {}
    for error in plots.get("errors") or []:
        missing.setdefault(error.get("name", ""), set()).add(error.get("rev", ""))
    return missing


def _revisions(entry: dict) -> list[str]:
    revs = entry.get("revisions") or []
    return [revs] if isinstance(revs, str) else list(revs)


IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".svg")


def relabel(found: Any, names: dict[str, str]) -> Any:
    """``dvc plots diff --json`` output with each revision dvc was given (a commit id) renamed
    to what the user called it, wherever dvc repeats it (revisions, each data row's ``rev``)."""
    if isinstance(found, dict):
        return {key: relabel(value, names) for key, value in found.items()}
    if isinstance(found, list):
        return [relabel(value, names) for value in found]
    return names.get(found, found) if isinstance(found, str) else found


def render_plots(plots: dict, labels: tuple[str, str], images: Path) -> list[Section]:
    """Sections of training curves, attention pictures, confusion matrices and the other pictures."""
    images.mkdir(parents=True, exist_ok=True)
    curves, confusion = Section("Training curves"), Section("Confusion matrices")
    attention, other = Section("Attention"), Section("Other pictures")
    missing = _missing(plots)

    def section_of(name: str, fallback: Section) -> Section:
        # By name, whether DVC draws the plot (a vega template) or copies it (a PNG from visualize).
        lowered = name.lower()
        return confusion if "confusion" in lowered else attention if "attention" in lowered else fallback

    for name, entries in (plots.get("data") or {}).items():
        if name.lower().endswith(IMAGE_SUFFIXES) or any(e.get("type") == "image" for e in entries):
            urls = {rev: e["url"] for e in entries if e.get("type") == "image" for rev in _revisions(e)}
            panels = []
            for label in labels:
                file = f"{slug(Path(name).stem)}--{slug(label)}{Path(name).suffix or '.png'}" if label in urls else None
                if file:
                    shutil.copyfile(urls[label], images / file)
                panels.append((label, file))
            section_of(name, other).pictures.append(Picture(name, panels))
            continue
        target = section_of(name, curves)
        vega = next((e for e in entries if e.get("type") == "vega"), None)
        present = set(_revisions(vega)) - missing.get(name, set()) if vega else set()
        if not present:
            target.notes.append(plain(f"{name}: {ABSENT} in both revisions."))
            continue
        file = f"{slug(name)}.png"
        try:
            (images / file).write_bytes(vega_png(vega["content"], labels))
        except Exception as err:  # a spec vl-convert cannot draw is a note, not a lost report
            target.notes.append(plain(f"{name}: could not be drawn ({err})."))
            continue
        absent = [label for label in labels if label not in present]
        title = name + (f" ({', '.join(absent)}: {ABSENT})" if absent else "")
        target.pictures.append(Picture(title, [(" vs ".join(labels), file)]))
    shutil.rmtree(images / ".dvc-plots", ignore_errors=True)
    for section in (curves, attention, confusion, other):
        if not section.pictures and not section.notes:
            section.notes.append("Neither revision has any.")
    return [curves, attention, confusion, other]
