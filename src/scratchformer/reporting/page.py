"""One report, two renderings: Markdown for a pull-request comment, self-contained HTML for a browser.

A report is a list of sections; each holds short notes, at most one table and pictures
shown side by side (one panel per revision). Markdown links the PNGs beside it; HTML
embeds them as data URIs, so the one file can be mailed or attached.

A title, a table's header and cells and a picture's captions are plain text: param values,
metric keys and revision names are whatever a user chose, so both renderings escape them
(:func:`~scratchformer.render.markdown.plain`, :func:`html.escape`). A note is Markdown
(code spans, bold, backslash escapes); whoever writes one escapes what it embeds.
"""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scratchformer.render import markdown

ABSENT = "absent"


def fmt(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value).lower() if isinstance(value, bool) else "—"
    if isinstance(value, float):
        if value == 0:
            return "0"
        return f"{value:.2e}" if abs(value) < 1e-3 else f"{value:.4f}".rstrip("0").rstrip(".")
    return str(value)


def score(value: Any) -> str:
    """An accuracy or F1 to four places, zeros kept, so a column lines up: 0.9100 beside 0.9292, not 0.91."""
    return f"{value:.4f}" if isinstance(value, float) else fmt(value)


@dataclass(frozen=True)
class Table:
    """Plain text cells: nothing in them formats, links or embeds HTML in either rendering."""

    header: list[str]
    rows: list[list[str]]


@dataclass(frozen=True)
class Picture:
    """One plot of both revisions: ``panels`` are (caption, file name under images/ or None = absent)."""

    title: str
    panels: list[tuple[str, str | None]]


@dataclass
class Section:
    title: str
    notes: list[str] = field(default_factory=list)
    table: Table | None = None
    pictures: list[Picture] = field(default_factory=list)


@dataclass
class Report:
    title: str
    sections: list[Section]
    warnings: list[str] = field(default_factory=list)  # also said on stderr by the command


def markdown_table(table: Table) -> str:
    return markdown.table(list(map(markdown.plain, table.header)), ([markdown.plain(c) for c in r] for r in table.rows))


def _md_picture(picture: Picture) -> str:
    alt = markdown.plain(picture.title)
    images = [
        f"![{alt}, {markdown.plain(caption)}](images/{name})" if name else ABSENT for caption, name in picture.panels
    ]
    if len(picture.panels) == 1:  # one figure already holding both revisions (an overlay)
        return images[0]
    return markdown.table([markdown.plain(caption) for caption, _ in picture.panels], [images])


def to_markdown(report: Report, level: int = 1) -> str:
    """The report as Markdown; ``level`` is the title's heading level (sections one below)."""
    parts = [f"{'#' * level} {markdown.plain(report.title)}"]
    for section in report.sections:
        parts.append(f"{'#' * (level + 1)} {markdown.plain(section.title)}")
        parts += section.notes
        if section.table:
            parts.append(markdown_table(section.table))
        parts += [f"**{markdown.plain(p.title)}**\n\n{_md_picture(p)}" for p in section.pictures]
    return "\n\n".join(parts) + "\n"


# A note's Markdown, in the order CommonMark reads it: a backslash escape, a code span (any fence
# length; nothing inside it is read), bold (whose inside is read again).
_NOTE = re.compile(r"\\([!-/:-@\[-`{-~])|(`+)(.+?)(?<!`)\2(?!`)|\*\*((?:\\.|[^*])+)\*\*")


def _inline(text: str) -> str:
    """A note's Markdown as HTML: escapes, code spans and bold; everything else escaped as text."""
    out, at = [], 0
    for m in _NOTE.finditer(text):
        out.append(html.escape(text[at : m.start()]))
        if m.group(1) is not None:
            out.append(html.escape(m.group(1)))
        elif m.group(2) is not None:
            inside = m.group(3)
            if len(inside) > 1 and inside.startswith(" ") and inside.endswith(" "):
                inside = inside[1:-1]
            out.append(f"<code>{html.escape(inside)}</code>")
        else:
            out.append(f"<strong>{_inline(m.group(4))}</strong>")
        at = m.end()
    out.append(html.escape(text[at:]))
    return "".join(out)


def _html_table(table: Table) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in table.header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in table.rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _html_panel(caption: str, image: Path | None) -> str:
    if image is None:
        shown = f"<p>{ABSENT}</p>"
    else:
        uri = "data:image/png;base64," + base64.b64encode(image.read_bytes()).decode("ascii")
        shown = f'<img alt="{html.escape(caption)}" src="{uri}">'
    return f"<figure><figcaption>{html.escape(caption)}</figcaption>{shown}</figure>"


STYLE = (
    "body{font-family:sans-serif;max-width:1400px;margin:2em auto;padding:0 1em}"
    "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left}"
    ".panels{display:flex;gap:1em;align-items:flex-start}.panels figure{margin:0;flex:1}"
    ".panels img{max-width:100%}figcaption{font-weight:bold}"
)


def to_html(report: Report, images: Path) -> str:
    """The report as one HTML file with every picture embedded (``images`` holds the PNGs)."""
    parts = [f"<h1>{html.escape(report.title)}</h1>"]
    for section in report.sections:
        parts.append(f"<h2>{html.escape(section.title)}</h2>")
        parts += [f"<p>{_inline(note)}</p>" for note in section.notes]
        if section.table:
            parts.append(_html_table(section.table))
        for picture in section.pictures:
            panels = "".join(_html_panel(caption, images / name if name else None) for caption, name in picture.panels)
            parts.append(f"<h3>{html.escape(picture.title)}</h3><div class='panels'>{panels}</div>")
    body = "\n".join(parts)
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(report.title)}</title>'
        f"<style>{STYLE}</style></head><body>\n{body}\n</body></html>\n"
    )
