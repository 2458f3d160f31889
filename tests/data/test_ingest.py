import pandas as pd
import pytest
import torch
from fixtures import LABEL_NAMES, write_corpus, write_rows, write_tokenizer

from scratchformer.config import DataConfig
from scratchformer.data.hub import HubUnreachableError, check_hub_reachable
from scratchformer.data.ingest import DataError, load_corpus, load_splits, text_column, write_splits
from scratchformer.data.tokenization import encode, load_tokenizer
from scratchformer.data.tokenized_split import TokenizedSplit, batches


def load(folder, **kwargs):
    return {s.name: s.frame for s in load_splits(DataConfig(source=str(folder), **kwargs))}


def test_tsv_with_quotes_keeps_every_row(tmp_path):
    splits = load(write_corpus(tmp_path / "c"))
    assert {k: len(v) for k, v in splits.items()} == {"train": 240, "validation": 60, "test": 60}
    assert splits["train"]["text"][0] == '"引号开头的评论，房间很好。'
    assert splits["train"]["text"][1] == '他说"很差"，服务太吵。'
    assert list(splits["train"].columns) == ["text", "label"]
    assert splits["train"]["label"].dtype == "int64"


def test_dev_and_validation_names(tmp_path):
    assert len(load(write_corpus(tmp_path / "a", dev_name="validation"))["validation"]) == 60
    assert len(load(write_corpus(tmp_path / "b", dev_name="dev"))["validation"]) == 60


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl"])
def test_other_formats(tmp_path, fmt):
    splits = load(write_corpus(tmp_path / fmt, fmt=fmt))
    assert len(splits["train"]) == 240
    assert splits["train"]["text"][0] == '"引号开头的评论，房间很好。'


@pytest.mark.parametrize("column", ["text", "text_a", "review", "sentence"])
def test_text_column_aliases(tmp_path, column):
    for name in ("train", "dev", "test"):
        write_rows(tmp_path / f"{name}.tsv", [(1, "很好"), (0, "很差")], "tsv", text_column=column)
    assert load(tmp_path)["test"]["text"].tolist() == ["很好", "很差"]


def test_explicit_text_column(tmp_path):
    for name in ("train", "dev", "test"):
        write_rows(tmp_path / f"{name}.tsv", [(1, "很好"), (0, "很差")], "tsv", text_column="content")
    assert load(tmp_path, text_column="content")["train"]["text"].tolist() == ["很好", "很差"]


def test_text_that_looks_like_missing_value_is_kept(tmp_path):
    for name in ("train", "dev", "test"):
        write_rows(tmp_path / f"{name}.tsv", [(1, "NA"), (0, "null")], "tsv")
    assert load(tmp_path)["train"]["text"].tolist() == ["NA", "null"]


def test_missing_split_names_the_folder(tmp_path):
    write_corpus(tmp_path)
    (tmp_path / "test.tsv").unlink()
    with pytest.raises(DataError, match=rf"{tmp_path}: no test split"):
        load(tmp_path)


def test_missing_text_column(tmp_path):
    for name in ("train", "dev", "test"):
        write_rows(tmp_path / f"{name}.tsv", [(1, "很好")], "tsv", text_column="content")
    with pytest.raises(DataError, match=r"train\.tsv: no text column text or text_a or review or sentence"):
        load(tmp_path)


def test_the_text_column_is_the_one_named_or_the_first_known_name_present():
    assert text_column(["label", "sentence", "review"], "f.csv") == "review"  # TEXT_COLUMNS' order, not the file's
    assert text_column(["label", "sentence", "content"], "f.csv", "content") == "content"
    with pytest.raises(DataError, match=r"f\.csv: no text column content \(columns: label, text\); set data\.text"):
        text_column(["label", "text"], "f.csv", "content")  # a named column is not replaced by a known one


def test_missing_label_column(tmp_path):
    write_corpus(tmp_path)
    with pytest.raises(DataError, match=r"train\.tsv: no label column 'polarity'"):
        load(tmp_path, label_column="polarity")


def test_labels_that_differ_only_in_case_are_refused_naming_them(tmp_path):
    rows = [("pos", "很好"), ("neg", "很差"), ("POS", "不错"), ("Neg", "失望"), ("pos", "满意"), ("neg", "糟糕")]
    for name in ("train", "dev", "test"):
        write_rows(tmp_path / f"{name}.tsv", rows * 5, "tsv")
    with pytest.raises(
        DataError, match=r"labels 'Neg', 'neg' differ only in case \(1 more such groups\) \(in .*train\.tsv"
    ):
        load(tmp_path)


def test_spaces_around_a_label_are_not_part_of_it(tmp_path, caplog):
    rows = [("pos", "很好"), ("neg", "很差"), (" pos", "不错"), ("neg\u3000", "失望")]
    for name in ("train", "dev", "test"):
        write_rows(tmp_path / f"{name}.jsonl", rows, "jsonl")
    corpus = load_corpus(DataConfig(source=str(tmp_path)))
    assert corpus.classes.names == ["neg", "pos"]
    assert "train.jsonl: 2 labels have spaces around them (first at row 3)" in caplog.text


@pytest.mark.parametrize(
    ("first", "second"), [("train.tsv", "train.csv"), ("dev.tsv", "validation.tsv"), ("test.tsv", "test.parquet")]
)
def test_two_files_for_one_split_are_refused_naming_both(tmp_path, first, second):
    """Reading one and ignoring the other without a word could train on the wrong file."""
    write_corpus(tmp_path)  # train.tsv, dev.tsv, test.tsv
    path = tmp_path / second
    write_rows(path, [(1, "很好"), (0, "很差")], path.suffix[1:])
    split = {"train": "train", "dev": "validation", "test": "test"}[first.split(".")[0]]
    with pytest.raises(DataError, match=rf"two files for the {split} split") as err:
        load(tmp_path)
    assert str(tmp_path / first) in str(err.value) and str(tmp_path / second) in str(err.value)


def replace_line(path, index, line):
    """Overwrite line ``index`` of ``path`` (0 is the header, so data row i is line i)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[index] = line
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_label_without_a_name_names_file_and_row(tmp_path):
    write_corpus(tmp_path)
    replace_line(tmp_path / "dev.tsv", 3, "2\t还行吧。")
    with pytest.raises(
        DataError, match=r"dev\.tsv: row 3 has label 2, which data.label_names does not name \(\[0, 1\]\)"
    ):
        load(tmp_path, label_names=LABEL_NAMES)


def test_empty_text_names_file_and_row(tmp_path):
    write_corpus(tmp_path)
    replace_line(tmp_path / "test.tsv", 5, "1\t   ")
    with pytest.raises(DataError, match=r"test\.tsv: row 5 has an empty text"):
        load(tmp_path)


def test_merged_rows_are_detected(tmp_path):
    # A text spanning two physical lines would silently become one row (or two halves).
    write_corpus(tmp_path)
    path = tmp_path / "train.tsv"
    path.write_text(path.read_text(encoding="utf-8") + "1\t第一行\n第二行没有标签\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"train\.tsv"):
        load(tmp_path)


def test_write_splits_round_trip(tmp_path):
    splits = load_splits(DataConfig(source=str(write_corpus(tmp_path / "c"))))
    write_splits(splits, tmp_path / "raw")
    back = pd.read_parquet(tmp_path / "raw" / "train.parquet")
    pd.testing.assert_frame_equal(back, splits[0].frame, check_dtype=False)
    assert not list((tmp_path / "raw").glob(".*tmp"))


def test_unreachable_hub_fails_fast(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "https://127.0.0.1:9")  # nothing listens on port 9
    with pytest.raises(HubUnreachableError, match=r"data\.source.*local folder"):
        check_hub_reachable("lansinuote/ChnSentiCorp", "data.source", timeout=2)


def test_unreachable_hub_download_fails_fast(monkeypatch, tmp_path):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "https://127.0.0.1:9")
    monkeypatch.chdir(tmp_path)  # no local folder shadows the id
    with pytest.raises(HubUnreachableError, match=r"tokenizer\.name"):
        load_tokenizer("bert-base-chinese")
    with pytest.raises(HubUnreachableError, match=r"data\.source"):
        load_splits(DataConfig())


def test_local_tokenizer_and_encoding(tmp_path):
    tokenizer = load_tokenizer(str(write_tokenizer(tmp_path / "tok")))
    encoded = encode(tokenizer, ["房间很好。", "服务很差，" * 10], max_len=8)
    first = tokenizer.convert_ids_to_tokens(encoded["input_ids"][0])
    assert first == ["[CLS]", "房", "间", "很", "好", "。", "[SEP]"]
    assert len(encoded["input_ids"][1]) == 8 and encoded["n_tokens"][1] == 52
    assert encoded["input_ids"][1][-1] == tokenizer.sep_token_id


def test_batches_pad_to_their_own_longest_and_cover_everything():
    lengths = (3, 7, 2, 5, 4)
    split = TokenizedSplit.from_sequences([torch.arange(1, n + 1) for n in lengths], torch.tensor(lengths) % 2)
    seen = []
    for ids, labels in batches(split, 2, pad_id=0, generator=torch.Generator().manual_seed(0), bucket=True):
        real = (ids != 0).sum(1)
        assert ids.shape[1] == real.max()
        assert torch.equal(labels, real % 2)  # each label stays with its own sequence
        seen += real.tolist()
    assert sorted(seen) == [2, 3, 4, 5, 7]
    ordered = [ids.shape[1] for ids, _ in batches(split, 2, pad_id=0)]
    assert ordered == [7, 5, 4]


def write_lines(path, lines, encoding="utf-8", end="\n"):
    path.write_bytes((end.join(lines) + end).encode(encoding))


def numbered(n, sep):
    return [f"{i % 2}{sep}第{i}条评论，房间很好。" for i in range(n)]


def three_files(folder, fmt="csv", train=None, encoding="utf-8"):
    """train/dev/test in ``fmt``, 40 rows each; ``train`` replaces train's data lines."""
    sep = "\t" if fmt == "tsv" else ","
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("train", "dev", "test"):
        rows = train if name == "train" and train is not None else numbered(40, sep)
        write_lines(folder / f"{name}.{fmt}", [f"label{sep}text", *rows], encoding)
    return folder


def test_csv_quote_run_stops_naming_the_row_where_rows_merge(tmp_path):
    # A text opening with '"' and a later one holding '"': the reader would take the
    # three rows between for one text (300 lines, 297 rows).
    rows = numbered(300, ",")
    rows[10] = '1,"引号开头的评论'
    rows[13] = '0,他说"很差"，服务太吵。'
    three_files(tmp_path, train=rows)
    with pytest.raises(DataError) as err:
        load(tmp_path)
    message = str(err.value)
    assert f"{tmp_path / 'train.csv'}: row 11 (line 12) runs on over the next 3 lines" in message
    assert "only the quote on line 15 closes (300 lines of rows, 297 rows read)" in message
    assert "double each quote inside it" in message


def test_quoted_csv_written_by_pandas_still_reads(tmp_path):
    assert len(load(write_corpus(tmp_path, fmt="csv"))["train"]) == 240  # its quotes are doubled


@pytest.mark.parametrize("fmt", ["tsv", "csv"])
def test_stray_carriage_return_is_named_not_taken_for_an_empty_text(tmp_path, fmt):
    sep = "\t" if fmt == "tsv" else ","
    rows = numbered(20, sep)
    rows[5] = f"1{sep}前半句\r后半句"
    three_files(tmp_path, fmt, train=rows)
    with pytest.raises(DataError) as err:
        load(tmp_path, drop_empty=True)  # dropping "empty" rows must not hide it either
    message = str(err.value)
    assert f"train.{fmt}: row 6 (line 7) holds a carriage return (\\r) inside the line" in message
    assert "remove it or replace it with a space" in message


def test_windows_line_ends_and_blank_lines_read(tmp_path):
    three_files(tmp_path, "tsv")
    write_lines(tmp_path / "train.tsv", ["label\ttext", *numbered(20, "\t"), "", *numbered(5, "\t")], end="\r\n")
    assert len(load(tmp_path)["train"]) == 25


@pytest.mark.parametrize("codec", ["gbk", "gb18030"])
def test_chinese_encodings_are_named_and_read_when_set(tmp_path, codec):
    rows = numbered(40, ",")
    rows[3] = "0,这家酒店很差𠮷。" if codec == "gb18030" else "0,这家酒店很差。"  # 𠮷: in GB18030, not GBK
    three_files(tmp_path, train=rows, encoding=codec)
    with pytest.raises(
        DataError, match=r"train\.csv: line 2 is not utf-8 .*it reads as gb18030: set data\.encoding: gb18030"
    ):
        load(tmp_path)
    assert load(tmp_path, encoding=codec)["train"]["text"][3] == rows[3][2:]
    if codec == "gb18030":
        with pytest.raises(DataError, match=r"line 5 is not gbk .*set data\.encoding: gb18030"):
            load(tmp_path, encoding="gbk")


def test_utf16_is_named(tmp_path):
    three_files(tmp_path)
    write_lines(tmp_path / "test.csv", ["label,text", *numbered(3, ",")], "utf-16")
    with pytest.raises(DataError, match=r"test\.csv: line 1 is not utf-8 .*the file is UTF-16: save it as UTF-8"):
        load(tmp_path)


def test_empty_and_header_only_files_are_named(tmp_path):
    three_files(tmp_path)
    (tmp_path / "dev.csv").write_text("label,text\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"dev\.csv: a header line and no rows"):
        load(tmp_path)
    (tmp_path / "dev.csv").write_text("", encoding="utf-8")
    with pytest.raises(DataError, match=r"dev\.csv: empty file"):
        load(tmp_path)


def test_a_row_the_reader_rejects_names_the_file(tmp_path):
    rows = numbered(40, ",")
    rows[7] = "1,一个,逗号太多,的行"
    three_files(tmp_path, train=rows)
    with pytest.raises(DataError, match=r"train\.csv: cannot be read \(ParserError: .*line 9"):
        load(tmp_path)
