"""The pretraining set: the train texts and more corpora, never a validation or test text of the scored corpus."""

import pyarrow as pa
import pytest
from fixtures import write_corpus

from scratchformer.data import pretraining
from scratchformer.data.labels import DataError
from scratchformer.data.pretraining import corpus_texts, pretraining_texts

TRAIN = pa.array(["房间很好", "服务很差", "早餐一般", "服务很差"])
VALIDATION = pa.array(["早餐一般", "位置不错"])  # 早餐一般 is also a train text (leakage, as ChnSentiCorp has)
TEST = pa.array(["价格太贵"])


def test_no_validation_or_test_text_is_read_and_each_removal_is_counted():
    more = pa.array(
        [
            "位置不错",  # a validation text: removed
            " 价格太贵\u3000",  # a test text but for the whitespace at its edges, which the comparison strips
            "房间很好",  # a train text: already held
            "物流很快",  # new
            "物流很快",  # new, but repeated: read once
            "质量一般",  # new
        ]
    )
    texts, report = pretraining_texts(TRAIN, VALIDATION, TEST, [("more", more)])
    assert texts.to_pylist() == ["房间很好", "服务很差", "服务很差", "物流很快", "质量一般"]
    assert report["train"] == {"texts": 4, "in_validation_or_test": 1, "used": 3}
    assert report["corpora"] == [
        {"corpus": "more", "texts": 6, "in_validation_or_test": 2, "already_held": 2, "used": 2}
    ]
    assert report["texts"] == 5 and report["evaluation_texts_in_pretraining"] == 0


def test_the_scored_corpus_listed_among_the_corpora_adds_nothing_it_must_not():
    itself = pa.concat_arrays([TRAIN, VALIDATION, TEST])  # one pretrain.corpora line for every corpus
    texts, report = pretraining_texts(TRAIN, VALIDATION, TEST, [("itself", itself)])
    assert texts.to_pylist() == ["房间很好", "服务很差", "服务很差"]
    assert report["corpora"][0] | {"corpus": None} == {
        "corpus": None,
        "texts": 7,
        "in_validation_or_test": 4,
        "already_held": 3,
        "used": 0,
    }


def test_the_final_check_stops_a_set_that_holds_an_evaluation_text(monkeypatch):
    # Filtering that let two evaluation texts through (as a broken one would): the check must stop it.
    leaky = pa.array(["房间很好", "位置不错", "价格太贵"])
    monkeypatch.setattr(pretraining, "_gathered", lambda train, evaluation, corpora: (leaky, {}))
    with pytest.raises(DataError, match="holds 2 validation or test texts"):
        pretraining_texts(TRAIN, VALIDATION, TEST, [("more", pa.array(["位置不错"]))])


def test_a_corpus_folder_gives_every_split_s_texts(tmp_path):
    folder = write_corpus(tmp_path / "corpus")
    with (folder / "dev.tsv").open("a", encoding="utf-8") as dev:
        dev.write("1\t  两边有空格的评论 \n0\t   \n")  # edges to strip, and a blank text to leave out
    texts = corpus_texts(str(folder))
    lines = [(folder / f"{name}.tsv").read_text(encoding="utf-8").splitlines() for name in ("train", "dev", "test")]
    assert len(texts) == sum(len(rows) - 1 for rows in lines) - 1  # every row but the headers and the blank one
    assert "两边有空格的评论" in texts.to_pylist()
    assert all(t == t.strip() and t for t in texts.to_pylist())


def test_a_corpus_without_a_text_column_is_named_with_how_pretraining_reads_one(tmp_path):
    folder = write_corpus(tmp_path / "corpus")
    train = folder / "train.tsv"
    train.write_text(train.read_text(encoding="utf-8").replace("text", "content", 1), encoding="utf-8")
    with pytest.raises(DataError, match=r"train\.tsv: no text column text or .*pretrain\.corpora reads a corpus"):
        corpus_texts(str(folder))
