"""The error report as Markdown and as a self-contained HTML page (no scripts, no links out).

Both are pure functions of an :class:`~scratchformer.analysis.mistakes.ErrorReport`: no
dates, paths or timings, so rerunning the stage rewrites the same bytes.
"""

from __future__ import annotations

import html
import re
from itertools import groupby

from scratchformer.analysis.mistakes import ErrorReport, Mistake, SuspectLabel, Token
from scratchformer.render import markdown

_CODE = re.compile(r"`([^`]+)`")
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|~$&-])")


def _md(text: str) -> str:
    """``text`` with Markdown's active characters ($ math and & entities too) escaped, on one line (a table cell)."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(text.splitlines()))


def _joined(tokens: list[Token]) -> list[tuple[str, Token]]:
    """Each token with the text it shows: word pieces ("##ing") glued on, whole words spaced."""
    out = []
    for i, t in enumerate(tokens):
        if t.text.startswith("##"):
            shown = t.text[2:]
        elif i and t.text.isascii() and t.text.isalnum() and tokens[i - 1].text.isascii():
            shown = " " + t.text
        else:
            shown = t.text
        out.append((shown, t))
    return out


def _describe(report: ErrorReport) -> list[str]:
    c = report.config
    share = report.n_mistakes / report.total
    return [
        f"The model gets {report.n_mistakes} of the {report.total} {report.split} reviews wrong ({share:.1%}). "
        f"Below are the {len(report.mistakes)} it is surest of, most confident first, then the tokens that "
        "occur more often in mistakes than in correct answers.",
        "",
        f"In each text the {c.highlight} most relevant tokens are marked. Relevance is the one `scratchformer "
        "predict` prints: integrated gradients of the predicted class's logit margin, per token "
        "(src/scratchformer/analysis/relevance.py), signed toward the wrong class predicted: + pushed toward the "
        "mistake, − against it. Marking and shading use its magnitude, whichever way a token pushed. The text is "
        "the tokens the model read ([CLS] and [SEP] left out; a long review is cut at tokenizer.max_len).",
        "",
        f"A true label marked {SUSPECT} is one that looks wrong itself: cleanlab flags it from the probabilities "
        "of an NB-LR that never saw the review (plots/label_issues/validation.csv). There the model may well be "
        "right; the last section lists every such label.",
    ]


SUSPECT = "(label suspect)"


def _true(m: Mistake) -> str:
    return f"{m.true} {SUSPECT}" if m.suspect else m.true


def _describe_suspects(report: ErrorReport) -> str:
    return (
        f"cleanlab (confident learning) flags {report.n_suspects} of the {report.total} {report.split} labels: "
        "an NB-LR over character n-grams, fit on train, finds the given label unlikely. These are likely "
        f"annotation mistakes, not the model's. The {len(report.suspects)} most suspect, lowest score first; score "
        "is the given label's probability (cleanlab's label quality score)."
    )


def _md_text(tokens: list[Token]) -> str:
    """The text with its marked tokens in bold (consecutive ones share one bold run)."""
    parts = []
    for marked, run in groupby(_joined(tokens), key=lambda pair: pair[1].marked):
        text = _md("".join(shown for shown, _ in run))
        parts.append(f"**{text.strip()}**" if marked and text.strip() else text)
    return "".join(parts)


def _top(m: Mistake) -> list[Token]:
    return sorted((t for t in m.tokens if t.marked), key=lambda t: -abs(t.relevance))


def to_markdown(report: ErrorReport) -> str:
    c = report.config
    lines = [f"# Why is it wrong: the most confident mistakes on {report.split}", "", *_describe(report), ""]
    rows = []
    for i, m in enumerate(report.mistakes, start=1):
        top = ", ".join(f"{_md(t.text)} {t.relevance:+.3f}" for t in _top(m))
        rows.append([i, m.row, _md(_true(m)), _md(m.predicted), f"{m.probability:.4f}", top, _md_text(m.tokens)])
    if not report.mistakes:
        rows.append(["—", "", "", "", "", "", "no mistakes"])
    header = ["#", "row", "true", "predicted", "P(predicted)", "most relevant", "text"]
    lines += [f"## The {len(report.mistakes)} most confident mistakes", "", markdown.table(header, rows)]
    lines += [
        "",
        "## Tokens over-represented in the mistakes",
        "",
        f"Each token counts once per review. With M = {report.n_mistakes} mistakes of which m contain the token and "
        f"C = {report.total - report.n_mistakes} correct answers of which c do, score = ln((m+1)/(M+2)) − "
        f"ln((c+1)/(C+2)), the log-ratio of the add-one smoothed rates; only tokens in at least {c.min_count} "
        f"mistakes, at most {c.tokens} rows, highest score first.",
        "",
    ]
    rows = [[_md(r.token), r.in_mistakes, r.in_correct, f"{r.score:.3f}"] for r in report.tokens]
    if not report.tokens:
        rows.append(
            ["—", f"no token in {c.min_count} or more mistakes is commoner there than in correct answers", "", ""]
        )
    lines.append(markdown.table(["token", "in mistakes (m)", "in correct answers (c)", "score"], rows))
    lines += ["", "## Labels that look wrong", "", _describe_suspects(report), ""]
    rows = [_suspect_row(i, s, _md) for i, s in enumerate(report.suspects, start=1)]
    if not report.suspects:
        rows.append(["—", "", "", "", "", "", "no label looks wrong"])
    lines.append(markdown.table(["#", "row", "label", "NB-LR suggests", "score", "the model answers", "text"], rows))
    return "\n".join(lines) + "\n"


def _suspect_row(i: int, s: SuspectLabel, escape) -> list:
    return [i, s.row, escape(s.label), escape(s.suggested), f"{s.score:.4f}", escape(s.model), escape(s.text)]


SHADES = 5  # |relevance| is drawn in this many steps of red; the weakest step is left plain

_STYLE = """
body { font-family: "Noto Sans CJK SC", "PingFang SC", "Microsoft YaHei", sans-serif; max-width: 70em;
       margin: 2em auto; padding: 0 1em; color: #222; }
table { border-collapse: collapse; width: 100%; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.5em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.top { font-weight: bold; outline: 1px solid #b22; }
""" + "".join(f".s{k} {{ background: rgba(220, 40, 40, {0.6 * k / SHADES:.2f}); }}\n" for k in range(1, SHADES + 1))


def _html_text(tokens: list[Token]) -> str:
    """The text, each token shaded by its |relevance| (the text's largest at full strength).

    Shading is in ``SHADES`` classes and only shaded or marked tokens get a
    ``<span>`` (its title gives the signed relevance), which keeps the page small.
    """
    peak = max((abs(t.relevance) for t in tokens), default=0.0) or 1.0
    parts = []
    for shown, t in _joined(tokens):
        shade = round(abs(t.relevance) / peak * SHADES)
        if shade == 0 and not t.marked:
            parts.append(html.escape(shown))
            continue
        classes = " ".join([f"s{shade}"] * bool(shade) + ["top"] * t.marked)
        parts.append(f'<span class="{classes}" title="{t.relevance:+.4f}">{html.escape(shown)}</span>')
    return "".join(parts)


def to_html(report: ErrorReport) -> str:
    c = report.config
    e = html.escape
    intro = "".join("<p>" + _CODE.sub(r"<code>\1</code>", e(p)) + "</p>" for p in _describe(report) if p)
    rows = "\n".join(
        f"<tr><td class=num>{i}</td><td class=num>{m.row}</td><td>{e(_true(m))}</td><td>{e(m.predicted)}</td>"
        f"<td class=num>{m.probability:.4f}</td><td>{_html_text(m.tokens)}</td></tr>"
        for i, m in enumerate(report.mistakes, start=1)
    )
    table = "\n".join(
        f"<tr><td>{e(r.token)}</td><td class=num>{r.in_mistakes}</td><td class=num>{r.in_correct}</td>"
        f"<td class=num>{r.score:.3f}</td></tr>"
        for r in report.tokens
    )
    suspects = "\n".join(
        "<tr>"
        + "".join(f"<td{' class=num' * (j in (0, 1, 4))}>{c}</td>" for j, c in enumerate(_suspect_row(i, s, e)))
        + "</tr>"
        for i, s in enumerate(report.suspects, start=1)
    )
    title = f"Why is it wrong: the most confident mistakes on {report.split}"
    return f"""<!DOCTYPE html>
<html lang="zh">
<head><meta charset="utf-8"><title>{e(title)}</title><style>{_STYLE}</style></head>
<body>
<h1>{e(title)}</h1>
{intro}
<h2>The {len(report.mistakes)} most confident mistakes</h2>
<table>
<tr><th>#</th><th>row</th><th>true</th><th>predicted</th><th>P(predicted)</th><th>text (shaded by |relevance|)</th></tr>
{rows}
</table>
<h2>Tokens over-represented in the mistakes</h2>
<p>Each token counts once per review; score = ln((m+1)/(M+2)) − ln((c+1)/(C+2)) with M = {report.n_mistakes}
mistakes and C = {report.total - report.n_mistakes} correct answers; tokens in at least {c.min_count} mistakes.</p>
<table>
<tr><th>token</th><th>in mistakes (m)</th><th>in correct answers (c)</th><th>score</th></tr>
{table}
</table>
<h2>Labels that look wrong</h2>
<p>{e(_describe_suspects(report))}</p>
<table>
<tr><th>#</th><th>row</th><th>label</th><th>NB-LR suggests</th><th>score</th><th>the model answers</th>
<th>text</th></tr>
{suspects}
</table>
</body>
</html>
"""
