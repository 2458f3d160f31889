"""Markdown tables and generated blocks: the one writer every page, report and benchmark uses.

A table is a header and rows of cells that are already Markdown (code spans, bold, links);
:func:`escape` makes plain text safe inside a cell, :func:`plain` makes any text (a class name,
a param value: what the data or a user chose) inert anywhere inline, and :func:`code` shows it
verbatim as a code span. A generated block is the text between
``<!-- name:start -->`` and ``<!-- name:end -->``, rewritten by :func:`replace_block`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence


def escape(text: str) -> str:
    """Plain text as one table cell: a ``|`` would end the cell, a newline the row."""
    return text.replace("|", "\\|").replace("\n", " ")


# What Markdown, as GitHub renders it, gives a meaning inline: escapes, code, emphasis, links and
# images ([ ]), raw HTML and autolinks (< >), entities (&), table cells (|), ~~strike~~ and $math$.
# A run of "_" between two letters or digits cannot open or close emphasis (CommonMark's
# intraword rule, unlike "*" and "~"), so `validation_accuracy` stays as it is spelt.
_ACTIVE = re.compile(r"(?P<intraword>(?<=[^\W_])_+(?=[^\W_]))|[\\`*_\[\]<>|~&$]")


def plain(text: object) -> str:
    """``text`` as inert Markdown: every character with an inline meaning backslash-escaped, one line.

    For what came from data or a user (class names, param values, revision names): however
    it is spelt, it reads as the same characters and cannot format, link, embed HTML or end a
    table cell. A line break becomes a space.
    """
    line = " ".join(str(text).splitlines())
    return _ACTIVE.sub(lambda m: m[0] if m["intraword"] else "\\" + m[0], line)


def code(text: object) -> str:
    """``text`` as one code span, verbatim: its fence is longer than any run of backticks inside it.

    Not for a table cell: GitHub ends a cell at a ``|`` even inside a code span.
    """
    text = " ".join(str(text).splitlines())
    runs = [len(run) for run in re.findall(r"`+", text)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = (
        " " if text.startswith("`") or text.endswith("`") else ""
    )  # `` `a` `` shows `a`: one space each side is dropped
    return f"{fence}{pad}{text}{pad}{fence}"


def table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A Markdown table; cells are written as given (``str()`` of non-strings), one row per line."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def replace_block(text: str, name: str, content: str) -> str:
    """``text`` with the block ``name`` holding ``content``; a missing block is a ValueError."""
    pattern = re.compile(rf"(<!-- {re.escape(name)}:start -->\n).*?(<!-- {re.escape(name)}:end -->)", re.S)
    if not pattern.search(text):
        raise ValueError(f"no <!-- {name}:start --> … <!-- {name}:end --> block to fill")
    return pattern.sub(lambda m: m.group(1) + content.rstrip() + "\n" + m.group(2), text)


def block(text: str, name: str) -> str | None:
    """The content of the block ``name`` in ``text`` (None when there is none)."""
    found = re.search(rf"<!-- {re.escape(name)}:start -->\n(.*?)<!-- {re.escape(name)}:end -->", text, re.S)
    return found.group(1) if found else None
