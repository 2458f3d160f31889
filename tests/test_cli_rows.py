"""`scratchformer predict --input … --output …`: a file of texts in, one answer row per text out.

A blank text is reported in its own row by number, every other row is answered, and the exit
status says a row had an error; an output file appears whole or not at all.
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
    # No progress bar when stderr is not a terminal; the one line that says why the exit status is 1.
    assert capsys.readouterr().err == (
        f"scratchformer predict: 1 of 5 rows could not be answered: row 3 (blank text); see {out}\n"
    )


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


def jsonl_rows(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n")[:-1]]  # \u2028 is in a line


def test_a_tsv_is_read_without_quoting_so_a_text_that_opens_a_quote_stays_one_row(trained, tmp_path, capsys):
    texts = ['"房间很好。', "服务很差。", '他说"很差"，服务太吵。', "房间很好。"]
    (tmp_path / "in.tsv").write_text("label\ttext_a\n" + "".join(f"1\t{t}\n" for t in texts), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert predict(trained, "--input", str(tmp_path / "in.tsv"), "--column", "text_a", "--output", str(out)) == 0
    assert [(r["row"], r["text"]) for r in jsonl_rows(out)] == list(enumerate(texts, 1))


def test_predict_reads_a_csv_and_a_tsv_as_ingest_does(trained, tmp_path, capsys):
    """The same file, read by the pipeline's ingest and by predict, gives the same texts in the same order."""
    from scratchformer.analysis.predict import clean
    from scratchformer.data.sources import _read_file

    texts = ['"引号开头', '他说"很差"', "NA", "null", "a,b；c", " 两头有空格 ", "房间很好。"]
    (tmp_path / "in.tsv").write_text("label\ttext_a\n" + "".join(f"1\t{t}\n" for t in texts), encoding="utf-8")
    write_csv(tmp_path / "in.csv", texts)
    for name, column in (("in.tsv", "text_a"), ("in.csv", "review")):
        ingested = [clean(t) for t in _read_file(tmp_path / name, "utf-8")[column]]
        out = tmp_path / f"{name}.jsonl"
        predict(trained, "--input", str(tmp_path / name), "--column", column, "--output", str(out))
        assert [r["text"] for r in jsonl_rows(out)] == ingested, name


def test_rows_in_and_answers_out_are_counted_and_a_difference_is_an_error(trained, tmp_path, capsys, monkeypatch):
    from scratchformer import rows as rows_module

    answer = rows_module.answer

    def one_row_lost(*args, **kwargs):
        for batch in answer(*args, **kwargs):
            yield batch[1:]

    monkeypatch.setattr(rows_module, "answer", one_row_lost)
    (tmp_path / "in.txt").write_text("房间很好。\n服务很差。\n房间很好。\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert predict(trained, "--input", str(tmp_path / "in.txt"), "--output", str(out)) == 1
    assert "3 rows in, 2 answers out" in capsys.readouterr().err


@pytest.mark.parametrize("link", [False, True])
def test_output_that_is_the_input_is_refused_before_anything_is_written(trained, tmp_path, capsys, link):
    write_csv(tmp_path / "reviews.csv", TEXTS)
    before = (tmp_path / "reviews.csv").read_bytes()
    output = tmp_path / "reviews.csv"
    if link:
        output = tmp_path / "answers.csv"
        output.symlink_to(tmp_path / "reviews.csv")
    args = ["--input", str(tmp_path / "reviews.csv"), "--column", "review", "--output", str(output)]
    assert predict(trained, *args) == 2
    assert "is the --input file" in capsys.readouterr().err
    assert (tmp_path / "reviews.csv").read_bytes() == before


def test_a_run_stopped_midway_leaves_no_half_output(trained, tmp_path, capsys, monkeypatch):
    """The answers stream into a temporary file beside --output, moved into place only when every row is in."""
    from scratchformer.analysis.predict import Predictor

    out = tmp_path / "answers.csv"
    out.write_text("the previous answers\n", encoding="utf-8")
    calls = []
    real = Predictor.predict

    def stopped_on_the_second_batch(self, texts, top_k=5):
        calls.append(len(texts))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, texts, top_k)

    monkeypatch.setattr(Predictor, "predict", stopped_on_the_second_batch)
    write_csv(tmp_path / "reviews.csv", TEXTS)
    args = ["--input", str(tmp_path / "reviews.csv"), "--column", "review", "--output", str(out), "--batch-size", "2"]
    assert predict(trained, *args) == 130
    assert out.read_text(encoding="utf-8") == "the previous answers\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["answers.csv", "reviews.csv"]  # no temporary left
    assert "interrupted" in capsys.readouterr().err


BAD = "房间很好。\n".encode() + b"\xff\xfe bad\n" + "服务很差。\n".encode() + b"\xc3\n" + "房间很好。\n".encode()


@pytest.mark.parametrize("how", ["stdin", "input -", "file"])
def test_invalid_bytes_are_error_rows_and_every_valid_line_is_answered(trained, tmp_path, capsys, monkeypatch, how):
    import io

    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(BAD), encoding="utf-8"))
    (tmp_path / "in.txt").write_bytes(BAD)
    out = tmp_path / "out.jsonl"
    given = {"stdin": [], "input -": ["--input", "-"], "file": ["--input", str(tmp_path / "in.txt")]}[how]
    assert predict(trained, *given, "--output", str(out)) == 1
    rows = jsonl_rows(out)
    assert [(r["row"], r.get("label")) for r in rows] == [
        (1, "positive"),
        (2, None),
        (3, "negative"),
        (4, None),
        (5, "positive"),
    ]
    assert rows[1]["error"].startswith("row 2: not utf-8 text (line 2: byte 0xff at position 1")
    assert rows[3]["error"].startswith("row 4: not utf-8 text (line 4: byte 0xc3 at position 1")
    err = capsys.readouterr().err
    assert "2 of 5 rows could not be answered: rows 2, 4 (not utf-8 text)" in err and str(out) in err


def test_a_file_in_another_encoding_is_read_with_encoding(trained, tmp_path, capsys):
    (tmp_path / "in.txt").write_bytes("房间很好。\n服务很差。\n".encode("gb18030"))
    out = tmp_path / "out.jsonl"
    assert predict(trained, "--input", str(tmp_path / "in.txt"), "--output", str(out)) == 1
    assert "not utf-8 text" in capsys.readouterr().err
    assert predict(trained, "--input", str(tmp_path / "in.txt"), "--output", str(out), "--encoding", "gb18030") == 0
    assert [r["text"] for r in jsonl_rows(out)] == ["房间很好。", "服务很差。"]


def test_csv_output_escapes_spreadsheet_formulas(trained, tmp_path, capsys):
    texts = ["=1+1 房间很好", "+房间很好", "-服务很差", "@服务很差", "房间=很好"]
    (tmp_path / "in.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    out = tmp_path / "out.csv"
    predict(trained, "--input", str(tmp_path / "in.txt"), "--output", str(out))
    with out.open(encoding="utf-8", newline="") as f:
        cells = [r["text"] for r in csv.DictReader(f)]
    assert cells == ["'=1+1 房间很好", "'+房间很好", "'-服务很差", "'@服务很差", "房间=很好"]


def test_a_cell_that_starts_with_a_tab_or_carriage_return_is_escaped_too():
    from scratchformer.rows import Row, csv_row

    assert csv_row(Row(1, "\t=1", error="row 1: x"), ["a"])[1] == "'\t=1"
    assert csv_row(Row(1, "\r=1", error="row 1: x"), ["a"])[1] == "'\r=1"


@pytest.mark.parametrize("inside", ["\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"])
@pytest.mark.parametrize("suffix", [".txt", ".tsv", ".csv"])
def test_a_line_breaks_only_at_newline_never_at_a_lone_carriage_return(trained, tmp_path, capsys, inside, suffix):
    texts = ["房间很好。", f"服务{inside}很差。", "房间很好。"]
    header = {".txt": "", ".tsv": "label\ttext_a\n", ".csv": "label,text_a\n"}[suffix]
    sep = {".txt": "", ".tsv": "1\t", ".csv": "1,"}[suffix]
    path = tmp_path / f"in{suffix}"
    path.write_bytes((header + "".join(f"{sep}{t}\r\n" for t in texts)).encode())
    out = tmp_path / "out.jsonl"
    column = [] if suffix == ".txt" else ["--column", "text_a"]
    assert predict(trained, "--input", str(path), *column, "--output", str(out)) == 0
    assert [(r["row"], r["text"]) for r in jsonl_rows(out)] == list(enumerate(texts, 1))


def test_stdin_lines_break_only_at_newline(trained, capsys, monkeypatch):
    import io

    stdin = io.TextIOWrapper(io.BytesIO("房间很好。\n服务\r很差。\r\n房间\u2028很好。\n".encode()), encoding="utf-8")
    monkeypatch.setattr("sys.stdin", stdin)
    assert predict(trained, "--format", "jsonl") == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.split("\n")[:-1]]
    assert [r["text"] for r in rows] == ["房间很好。", "服务\r很差。", "房间\u2028很好。"]


def test_a_csv_row_with_more_fields_than_its_header_is_an_error_row(trained, tmp_path, capsys):
    (tmp_path / "in.csv").write_text(
        "id,review\n1,房间很好。\n2,房间很好,就是太贵了不值\n3,服务很差。\n", encoding="utf-8"
    )
    out = tmp_path / "out.jsonl"
    assert predict(trained, "--input", str(tmp_path / "in.csv"), "--column", "review", "--output", str(out)) == 1
    rows = jsonl_rows(out)
    assert [r.get("label") for r in rows] == ["positive", None, "negative"]
    assert rows[1]["text"] == "2,房间很好,就是太贵了不值"
    assert rows[1]["error"].startswith("row 2: wrong number of fields (line 3 has 3, the header has 2")
    assert "rows could not be answered: row 2 (wrong number of fields)" in capsys.readouterr().err


@pytest.mark.parametrize("delimiter", [";", "|", "\t"])
def test_a_csv_delimiter_is_detected_or_given(trained, tmp_path, capsys, delimiter):
    write_csv(tmp_path / "in.csv", ["房间很好，服务很好。", "服务很差。"], delimiter=delimiter)
    out = tmp_path / "out.jsonl"
    assert predict(trained, "--input", str(tmp_path / "in.csv"), "--column", "review", "--output", str(out)) == 0
    assert [r["text"] for r in jsonl_rows(out)] == ["房间很好，服务很好。", "服务很差。"]
    args = ["--input", str(tmp_path / "in.csv"), "--column", "review", "--output", str(out)]
    assert predict(trained, *args, "--delimiter", delimiter) == 0
    assert predict(trained, *args, "--delimiter", ",") == 2  # a delimiter given is the one used
    assert "its columns are" in capsys.readouterr().err


def test_an_unclosed_csv_quote_is_refused_before_it_swallows_the_rows_after_it(trained, tmp_path, capsys):
    (tmp_path / "in.csv").write_text('id,review\n1,房间很好。\n2,"服务很差。\n3,房间很好。\n', encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert predict(trained, "--input", str(tmp_path / "in.csv"), "--column", "review", "--output", str(out)) == 2
    assert "row 2 (line 3) opens a quote" in capsys.readouterr().err and not out.exists()
