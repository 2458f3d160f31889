"""`scratchformer predict --input … --output …`: a file of texts in, one answer row per text out.

A blank text is reported in its own row by number, every other row is answered, and the exit
status says a row had an error; rows already written survive a run stopped halfway.
"""

import csv
import json

import pytest

from scratchformer.cli import main

TEXTS = ["房间很好，服务很好。", "房间太脏，服务很差。", "   ", "房间很好。", "服务很差。"]


def predict(trained, *args):
    model, tokenizer = trained
    return main(["predict", "--model", str(model), "--tokenizer", str(tokenizer), *args])


def write_csv(path, texts, delimiter=","):
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, delimiter=delimiter)
        writer.writerow(["id", "review"])
        writer.writerows([i, text] for i, text in enumerate(texts))


def test_a_csv_column_in_csv_out_answers_every_row_and_reports_the_blank_one(trained, tmp_path, capsys):
    write_csv(tmp_path / "reviews.csv", TEXTS)
    out = tmp_path / "answers.csv"
    status = predict(trained, "--input", str(tmp_path / "reviews.csv"), "--column", "review", "--output", str(out))
    assert status == 1  # a row had an error; the rest were answered
    with out.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["row"]) for r in rows] == [1, 2, 3, 4, 5]
    assert [r["label"] for r in rows] == ["positive", "negative", "", "positive", "negative"]
    assert rows[2]["error"] == "row 3: blank text" and rows[2]["probability"] == ""
    assert all(
        r["error"] == "" and float(r["p_positive"]) + float(r["p_negative"]) == pytest.approx(1, abs=2e-4)
        for i, r in enumerate(rows)
        if i != 2
    )
    assert [r["text"] for r in rows if r["error"] == ""] == [t for t in TEXTS if t.strip()]
    assert capsys.readouterr().err == ""  # no progress bar when stderr is not a terminal


def test_every_row_answered_is_exit_zero_and_jsonl_carries_row_numbers(trained, tmp_path, capsys):
    (tmp_path / "reviews.txt").write_text("\n".join(t for t in TEXTS if t.strip()) + "\n", encoding="utf-8")
    assert predict(trained, "--input", str(tmp_path / "reviews.txt"), "--format", "jsonl", "--batch-size", "3") == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["row"], r["label"], r["error"]) for r in rows] == [
        (1, "positive", None),
        (2, "negative", None),
        (3, "positive", None),
        (4, "negative", None),
    ]


def test_a_blank_line_of_a_text_file_is_its_own_error_row(trained, tmp_path, capsys, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("房间很好。\n\n服务很差。\n"))
    assert predict(trained, "--input", "-", "--output", str(tmp_path / "out.jsonl")) == 1
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["row"] for r in rows] == [1, 2, 3] and rows[1] == {"row": 2, "text": "", "error": "row 2: blank text"}
    assert [r.get("label") for r in rows] == ["positive", None, "negative"]


@pytest.mark.parametrize("column", [None, "text"])
def test_a_missing_column_names_the_file_and_its_columns(trained, tmp_path, capsys, column):
    write_csv(tmp_path / "reviews.tsv", TEXTS, delimiter="\t")
    out = tmp_path / "answers.csv"
    args = ["--input", str(tmp_path / "reviews.tsv"), "--output", str(out)]
    assert predict(trained, *args, *(["--column", column] if column else [])) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'reviews.tsv'}: " in err and "its columns are 'id', 'review'" in err
    assert ("give --column" if column is None else "it has no column 'text'") in err
    assert not out.exists()  # refused before anything was written


def test_rows_are_flushed_per_batch_and_stay_written_after_an_interruption(trained, tmp_path, capsys, monkeypatch):
    from scratchformer.analysis.predict import Predictor

    out = tmp_path / "answers.csv"
    on_disk = []  # what a reader of the output saw while the second batch was being predicted
    real = Predictor.predict

    def stopped_on_the_second_batch(self, texts, top_k=5):
        if len(on_disk) == 1:
            on_disk.append(out.read_text(encoding="utf-8"))
            raise KeyboardInterrupt
        on_disk.append(None)
        return real(self, texts, top_k)

    monkeypatch.setattr(Predictor, "predict", stopped_on_the_second_batch)
    write_csv(tmp_path / "reviews.csv", TEXTS)
    args = ["--input", str(tmp_path / "reviews.csv"), "--column", "review", "--output", str(out), "--batch-size", "2"]
    assert predict(trained, *args) == 130
    assert on_disk[1] == out.read_text(encoding="utf-8")  # the first batch was on disk before the second began
    rows = list(csv.DictReader(on_disk[1].splitlines()))
    assert [(r["row"], r["label"]) for r in rows] == [("1", "positive"), ("2", "negative")]
    assert "interrupted" in capsys.readouterr().err


def test_a_reader_that_leaves_early_ends_the_run_quietly(trained, tmp_path):
    """`scratchformer predict … | head -1`: the closed pipe ends the run with 141 (SIGPIPE), no traceback."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    model, tokenizer = trained
    src = Path(__file__).parents[1] / "src"
    cmd = [sys.executable, "-m", "scratchformer", "predict", "--model", str(model), "--tokenizer", str(tokenizer)]
    env = {**os.environ, "PYTHONPATH": str(src)}
    run = subprocess.Popen([*cmd, *["房间很好。"] * 2000], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert run.stdout.readline()  # the first answer, then the reader leaves
    run.stdout.close()
    err = run.stderr.read().decode()
    assert run.wait() == 141 and "Traceback" not in err, err
