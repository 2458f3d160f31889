"""The body of ``scratchformer predict``: texts in, answers out, a picture of what drove them.

Its parser lives with the others in :mod:`scratchformer.cli`; this module holds what the
command does, so that the command line itself stays one page.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scratchformer.analysis.predict import Prediction

BATCH_SIZE = 64  # texts predicted together: memory is one batch's, however long the input
DEFAULT_TOKENIZER = "data/tokenizer"  # the tokenize stage's, for a .pt checkpoint
SIGPIPE_EXIT = 141  # 128 + SIGPIPE: how a shell reports a writer whose reader went away
INTERRUPTED_EXIT = 130  # 128 + SIGINT: how a shell reports Ctrl-C
SUFFIX_FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".json": "json"}  # --output's suffix picks --format
FORMATS = ("text", "csv", "jsonl", "json")  # of predict's answers: see scratchformer.rows


def at_least_one(value: str) -> int:
    """argparse type: a whole number ≥ 1."""
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"give a whole number of at least 1, not {value!r}")
    return number


def one_character(value: str) -> str:
    """argparse type: one character ('\\t' written out is a tab)."""
    value = "\t" if value == "\\t" else value
    if len(value) != 1:
        raise argparse.ArgumentTypeError(f"give one character, not {value!r}")
    return value


MAX_PLOTTED = 20  # texts one --plot picture holds (one chart each, stacked)


def plot_relevance(predictions: list[Prediction], path: Path, class_names: list[str]) -> None:
    """Draw every token's signed relevance, one bar chart per text, into the PNG ``path``."""
    from scratchformer.render import pictures as plots

    plots.use_cjk_font()
    rows = []
    for p in predictions:
        tokens = sorted(p.top_tokens, key=lambda t: t["position"])  # every token, back in reading order
        text = p.text if len(p.text) <= 40 else p.text[:39] + "…"
        title = f"{p.label} (p = {p.probability:.3f}): {text}"
        rows.append((title, [t["token"] for t in tokens], [t["relevance"] for t in tokens], p.label))
    plots.save_figure(plots.relevance_figure(rows, class_names), path)


def texts_in(args: argparse.Namespace) -> tuple[Iterable[str], int | None]:
    """The texts to classify and how many (None: not known before reading them): arguments, --input or stdin.

    Without --input, stdin's blank lines are skipped; through --input (a file, or "-" for
    stdin) every line or CSV row is a row of the answer, a blank one answered with an error.
    """
    from scratchformer.analysis.predict import clean
    from scratchformer.rows import read_texts, stdin_texts

    if args.input is not None:
        if args.texts:
            raise ValueError("give texts as arguments or with --input, not both")
        return read_texts(args.input, args.column, args.delimiter, args.encoding, sys.stdin)
    if args.column is not None or args.delimiter is not None:
        raise ValueError("--column and --delimiter read the --input file: give --input too")
    if args.texts and not all(clean(t) for t in args.texts):
        raise ValueError("no text to classify: give one or more non-empty texts")
    return (args.texts, len(args.texts)) if args.texts else (stdin_texts(sys.stdin, args.encoding), None)


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether the paths ``a`` and ``b`` name one file (through links, ``..`` and all)."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return Path(a).resolve() == Path(b).resolve()


def refuse_overwriting_input(args: argparse.Namespace) -> None:
    """--output or --plot must not be the --input file: writing it would destroy the texts being read."""
    if args.input is None or args.input == "-":
        return
    for flag, path in (("--output", None if args.output == "-" else args.output), ("--plot", args.plot)):
        if path is not None and same_file(path, args.input):
            raise ValueError(f"{flag} {path} is the --input file: writing there would destroy the texts; give another")
    if args.plot is not None and args.output != "-" and same_file(args.plot, args.output):
        raise ValueError(f"--plot {args.plot} is the --output file: give another")


class Counted:
    """``items``, counting how many were taken: predict's rows in, held against its answers out."""

    def __init__(self, items: Iterable) -> None:
        self.items, self.taken = iter(items), 0

    def __iter__(self) -> Counted:
        return self

    def __next__(self) -> object:
        item = next(self.items)
        self.taken += 1
        return item


def output_format(args: argparse.Namespace) -> str:
    """--format, or the one --output's suffix names, or text."""
    if args.format is not None:
        return args.format
    return SUFFIX_FORMATS.get(Path(args.output).suffix.lower(), "text") if args.output != "-" else "text"


def predict_main(args: argparse.Namespace) -> int:
    """Answer every row: exit 0 when each was predicted, 1 naming the rows that were not, 2 when none was."""
    try:
        return predict_rows(args)
    except KeyboardInterrupt:
        where = "" if args.output == "-" else f"; {args.output} was left as it was"
        print(f"scratchformer predict: interrupted{where}", file=sys.stderr)
        return INTERRUPTED_EXIT


def predict_rows(args: argparse.Namespace) -> int:
    from scratchformer import rows as answers
    from scratchformer.analysis.predict import Predictor
    from scratchformer.device import pick_device
    from scratchformer.rows import open_output, progress, shorten, write_rows

    with contextlib.ExitStack() as files:
        try:
            refuse_overwriting_input(args)
            texts, total = texts_in(args)
            texts = Counted(texts)
            fmt = output_format(args)
            if args.plot is not None:
                if args.plot.suffix.lower() != ".png":
                    raise ValueError(f"--plot writes a PNG: give a path ending in .png, not {args.plot}")
                plotted = list(itertools.islice(texts, MAX_PLOTTED + 1))  # stdin is read no further than that
                if len(plotted) > MAX_PLOTTED:
                    given = len(args.texts) if args.texts else "more"
                    raise ValueError(f"--plot draws at most {MAX_PLOTTED} texts, got {given}")
                texts = Counted(plotted)
            tokenizer = args.tokenizer or (None if args.model.is_dir() else Path(DEFAULT_TOKENIZER))
            predictor = Predictor(args.model, tokenizer, pick_device(args.device))
            # The picture needs every token's relevance; the printed answer keeps the top ones.
            batches = answers.answer(predictor, texts, None if args.plot else args.top, args.batch_size)
            first = next(batches, None)
            if first is None:
                raise ValueError("no text to classify: give one or more non-empty texts")
            # Opened only now, so a run refused above leaves an existing --output as it was.
            out = sys.stdout if args.output == "-" else files.enter_context(open_output(Path(args.output)))
        except (OSError, ValueError) as err:
            print(f"scratchformer predict: {err}", file=sys.stderr)
            return 2
        batches = itertools.chain([first], batches)
        if args.plot is not None:
            rows = [row for batch in batches for row in batch]  # at most MAX_PLOTTED
            plot_relevance([row.prediction for row in rows if row.prediction], args.plot, predictor.class_names)
            batches = [[shorten(row, args.top) for row in rows]]
        tally = write_rows(progress(batches, total), fmt, out, predictor.class_names)
    rows_in = texts.taken if total is None else total
    where = "see the output" if args.output == "-" else f"see {args.output}"
    if tally.rows != rows_in:
        print(
            f"scratchformer predict: {rows_in} rows in, {tally.rows} answers out: every row should have its answer "
            f"or an error row; {where}",
            file=sys.stderr,
        )
        return 1
    if tally.errors:
        print(f"scratchformer predict: {tally.summary()}; {where}", file=sys.stderr)
        return 1
    return 0
