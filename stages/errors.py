"""Stage errors: the validation mistakes the model is surest of, as Markdown and HTML."""

from __future__ import annotations

from pathlib import Path

from scratchformer.analysis import mistakes as errors
from scratchformer.analysis.mistakes import ErrorReport
from scratchformer.config import Params
from scratchformer.data.tokenization import load_tokenizer
from scratchformer.data.tokenized_split import read_tokenized
from scratchformer.files import write_text
from scratchformer.model.checkpoint import class_names, load_checkpoint
from scratchformer.render import mistakes_page as error_report
from stages import stage

PARAMS = ("errors",)


def run(
    params: Params, model_path: Path, tokenized_dir: Path, tokenizer_dir: Path, label_issues_path: Path, out_dir: Path
) -> ErrorReport:
    """Write ``out_dir/validation.md`` and its HTML twin ``validation.html``.

    ``label_issues_path`` is the download stage's plots/label_issues/validation.csv: the
    mistakes whose label looks wrong are marked, and those labels listed.
    """
    if not tokenizer_dir.is_dir():
        raise FileNotFoundError(f"{tokenizer_dir}: no saved tokenizer; run `dvc repro` first")
    split_path = tokenized_dir / "validation"
    if not split_path.is_dir():
        raise FileNotFoundError(f"{split_path}: no tokenized validation split; run `dvc repro` first")
    if not label_issues_path.is_file():
        raise FileNotFoundError(f"{label_issues_path}: no label-issue list; run `dvc repro download` first")
    model, info = load_checkpoint(model_path)
    names = class_names(info, model.config.num_classes)
    split, tokenizer = read_tokenized(split_path), load_tokenizer(str(tokenizer_dir))
    suspects = errors.read_suspects(label_issues_path)
    report = errors.analyse(model, split, tokenizer, names, params.errors, suspects=suspects)
    write_text(out_dir / "validation.md", error_report.to_markdown(report))
    write_text(out_dir / "validation.html", error_report.to_html(report))
    return report


def say(report: ErrorReport) -> str:
    return (
        f"{report.n_mistakes} of {report.total} {report.split} reviews wrong; "
        f"the {len(report.mistakes)} most confident in validation.md and validation.html; "
        f"{report.n_suspects} labels look wrong"
    )


if __name__ == "__main__":
    stage(run, say)
