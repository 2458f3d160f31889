"""The short-review check's file: read as ingest reads a TSV, refused with the line named."""

from pathlib import Path

import pandas as pd
import pytest

from scratchformer.data.labels import DataError
from scratchformer.data.short_reviews import read_short_reviews

ROOT = Path(__file__).resolve().parents[2]
NAMES = ["negative", "positive"]


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_labels_become_class_ids_and_a_quote_is_a_character(tmp_path):
    path = write(tmp_path / "s.tsv", 'text\tlabel\n"很好\tpositive\n服务很差 \tnegative\n')
    frame = read_short_reviews(path, NAMES)
    assert frame["text"].tolist() == ['"很好', "服务很差"]
    assert frame["label"].tolist() == [1, 0]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("review\tlabel\n很好\tpositive\n", r"header must be text<TAB>label"),
        ("text\tlabel\n很好\tpositive\n很差\tbad\n", r"line 3: label 'bad' is not a class \(negative, positive\)"),
        ("text\tlabel\n很差\tbad\n很好\tpositive\n", r"line 2: label 'bad' is not a class"),
        ("text\tlabel\n很好\tpositive\n \tnegative\n", r"line 3: blank text"),
        ("text\tlabel\n", r"no reviews"),
    ],
)
def test_a_bad_file_is_refused_naming_the_line(tmp_path, content, message):
    with pytest.raises(DataError, match=message):
        read_short_reviews(write(tmp_path / "s.tsv", content), NAMES)


def test_a_corpus_with_none_of_the_files_classes_skips_the_check_with_a_warning(tmp_path, caplog):
    path = write(tmp_path / "s.tsv", "text\tlabel\n很好\tpositive\n很差\tnegative\n")
    assert read_short_reviews(path, ["中评", "好评", "差评"]) is None
    assert "none of this corpus's classes (中评, 好评, 差评): the short-review check is skipped" in caplog.text


def test_the_projects_short_reviews_are_short_obvious_and_balanced():
    frame = read_short_reviews(ROOT / "checks" / "short_reviews.tsv", NAMES)
    assert len(frame) >= 50
    assert frame["label"].value_counts().to_dict() == {0: len(frame) // 2, 1: len(frame) // 2}
    assert frame["text"].str.len().max() <= 16
    assert not frame["text"].duplicated().any()


def test_no_short_review_is_a_text_of_the_corpus():
    corpus = ROOT / "lansinuote" / "ChnSentiCorp"
    if not corpus.is_dir():
        pytest.skip("the corpus is not linked here")
    texts = set()
    for path in corpus.glob("*.tsv"):
        frame = pd.read_csv(path, sep="\t", quoting=3, dtype=str, keep_default_na=False)
        texts |= {t.strip() for t in frame["text_a" if "text_a" in frame else "text"]}
    short = read_short_reviews(ROOT / "checks" / "short_reviews.tsv", NAMES)
    assert texts and not set(short["text"]) & texts
