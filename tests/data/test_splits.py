"""Ingest of any labelled corpus: integer or text labels, one-file corpora, blank rows, leakage."""

import json
from collections import Counter

import pandas as pd
import pytest
from fixtures import LABEL_NAMES, STARS, tiny_config, write_corpus, write_one_file_corpus, write_rows

from scratchformer.config import ConfigError, DataConfig, ModelConfig, from_dict
from scratchformer.data.ingest import DataError, load_corpus
from scratchformer.data.ingest import write_corpus as write_ingested

SPLIT = (0.8, 0.1, 0.1)


def corpus(source, **kwargs):
    seed = kwargs.pop("seed", 0)
    return load_corpus(DataConfig(source=str(source), **kwargs), seed)


def frames(c):
    return {s.name: s.frame for s in c.splits}


def test_integer_labels_are_their_own_names_or_named_by_label_names(tmp_path):
    folder = write_corpus(tmp_path / "c")
    assert corpus(folder).classes.names == ["0", "1"]
    named = corpus(folder, label_names=LABEL_NAMES)
    assert named.classes.names == ["negative", "positive"] and named.classes.keys == [0, 1]
    train = frames(named)["train"]
    assert train["label"].dtype == "int64" and set(train["label"]) == {0, 1}


def test_text_labels_are_sorted_into_ids(tmp_path):
    c = corpus(write_one_file_corpus(tmp_path / "c" / "reviews.csv").parent, split=SPLIT)
    assert c.classes.names == sorted(STARS) == ["中评", "好评", "差评"]
    for frame in frames(c).values():
        for label, text in zip(frame["label"], frame["text"], strict=True):
            words = STARS[c.classes.names[label]]
            assert any(w in text for w in words), (label, text)  # each text kept its own class


def test_labels_written_as_text_digits_are_integers(tmp_path):
    rows = [(str(stars), f"第{i}条评论") for i, stars in enumerate([5, 1, 3, 10, 2] * 20)]
    write_rows(tmp_path / "all.jsonl", rows, "jsonl")
    c = corpus(tmp_path, split=SPLIT)
    assert c.classes.keys == [1, 2, 3, 5, 10]  # numeric order, not "1" < "10" < "2"
    assert c.classes.names == ["1", "2", "3", "5", "10"]


def test_whole_float_labels_are_integers_and_fractions_are_an_error(tmp_path):
    write_rows(tmp_path / "all.csv", [(1.0, "好"), (2.0, "差"), (1.0, "好")] * 4, "csv")
    assert corpus(tmp_path, split=SPLIT).classes.keys == [1, 2]
    write_rows(tmp_path / "all.csv", [(1.0, "好"), (2.5, "差")], "csv")
    with pytest.raises(DataError, match=r"all\.csv: row 2 has label 2\.5; expected a whole number"):
        corpus(tmp_path, split=SPLIT)


def test_missing_label_names_file_and_row(tmp_path):
    path = write_one_file_corpus(tmp_path / "reviews.csv", n=30)
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[4] = "," + lines[4].split(",", 1)[1]  # data row 4 loses its label
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"reviews\.csv: row 4 has no label"):
        corpus(tmp_path, split=SPLIT)


def test_label_names_must_fit_the_labels(tmp_path):
    folder = write_corpus(tmp_path / "c")
    with pytest.raises(DataError, match=r"data\.label_names\.7: no row has label 7"):
        corpus(folder, label_names={**LABEL_NAMES, 7: "other"})
    write_one_file_corpus(tmp_path / "t" / "reviews.csv")
    with pytest.raises(DataError, match=r"reviews\.csv: labels are text, but data\.label_names names integer labels"):
        corpus(tmp_path / "t", split=SPLIT, label_names=LABEL_NAMES)


def test_one_class_is_an_error(tmp_path):
    write_rows(tmp_path / "all.csv", [(1, "好")] * 10, "csv")
    with pytest.raises(DataError, match=r"only one class \(\[1\]\) in .*all\.csv"):
        corpus(tmp_path, split=SPLIT)


def test_model_num_classes_is_checked_against_the_data():
    assert ModelConfig().for_classes(["a", "b", "c"]).num_classes == 3
    assert ModelConfig(num_classes=3).for_classes(["a", "b", "c"]).num_classes == 3
    with pytest.raises(ConfigError, match=r"model\.num_classes=2 but the data has 3 classes \(a, b, c\)"):
        tiny_config(d_model=64, n_heads=4, n_layers=2, ff_dim=128, dropout=0.1, max_len=64).for_classes(["a", "b", "c"])


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"split": [0.8, 0.2]}, r"data\.split=\[0\.8, 0\.2\] must be three fractions"),
        ({"split": [0.8, 0.1, 0.2]}, r"data\.split=.* must sum to 1"),
        ({"split": [1, 0, 0]}, r"data\.split=\[1, 0, 0\] must be three fractions > 0"),
        ({"resplit": True}, r"data\.resplit=True needs data\.split"),
        ({"label_names": {"zero": "negative"}}, r"data\.label_names\.zero='zero' must be an integer label"),
        ({"label_names": {0: "a", 1: "a"}}, r"gives two labels one name"),
        ({"train_share": 0}, r"data\.train_share=0\.0 must be a fraction in \(0, 1\] of the train rows"),
        ({"train_share": 1.5}, r"data\.train_share=1\.5 must be a fraction"),
    ],
)
def test_bad_data_params_name_the_key(section, message):
    with pytest.raises(ConfigError, match=message):
        from_dict({"data": section})


def test_one_file_is_split_stratified_and_deterministic(tmp_path):
    folder = write_one_file_corpus(tmp_path / "c" / "reviews.csv", n=451).parent
    c = corpus(folder, split=SPLIT, seed=3)
    parts = frames(c)
    per_class = pd.concat(parts.values())["label"].value_counts().to_dict()
    for name, fraction in zip(("train", "validation", "test"), SPLIT, strict=True):
        counts = parts[name]["label"].value_counts().to_dict()
        for label, n in per_class.items():
            assert abs(counts.get(label, 0) - n * fraction) <= 1, (name, label, counts, n)
    # Every row lands in exactly one split: nothing lost, nothing twice.
    assert sum(len(f) for f in parts.values()) == 451
    assert c.report["rows"] == {name: len(f) for name, f in parts.items()}
    assert c.report["split"] == list(SPLIT)
    again = frames(corpus(folder, split=SPLIT, seed=3))
    for name in parts:
        pd.testing.assert_frame_equal(parts[name], again[name])
    other = frames(corpus(folder, split=SPLIT, seed=4))
    assert not parts["test"]["text"].equals(other["test"]["text"])


def rows_of(frame):
    return Counter(zip(frame["text"], frame["label"], strict=True))


def test_train_share_keeps_a_nested_share_of_each_class_and_leaves_evaluation_alone(tmp_path):
    folder = write_one_file_corpus(tmp_path / "c" / "reviews.csv", n=451).parent
    whole, half, quarter = (corpus(folder, split=SPLIT, seed=3, train_share=s) for s in (1.0, 0.5, 0.25))
    full = frames(whole)
    for part in (half, quarter):
        for name in ("validation", "test"):
            pd.testing.assert_frame_equal(frames(part)[name], full[name])
    classes = full["train"]["label"].value_counts().to_dict()
    for part, share in ((half, 0.5), (quarter, 0.25)):
        train = frames(part)["train"]
        assert train["label"].value_counts().to_dict() == {c: round(n * share) for c, n in classes.items()}
        assert not rows_of(train) - rows_of(full["train"])  # train's own rows, none from elsewhere
        removed = len(full["train"]) - len(train)
        assert part.report["train_share"] == {"share": share, "removed": removed}
        assert part.report["rows"]["train"] == len(train)
    assert not rows_of(frames(quarter)["train"]) - rows_of(frames(half)["train"])  # a curve's points are nested
    assert "train_share" not in whole.report  # the whole corpus keeps the very report it had


def test_train_share_draws_by_seed_in_a_corpus_with_its_own_splits(tmp_path):
    folder = write_corpus(tmp_path / "c")
    one, other = (frames(corpus(folder, train_share=0.5, seed=s)) for s in (0, 1))
    assert len(one["train"]) == len(other["train"]) == 120
    assert rows_of(one["train"]) != rows_of(other["train"])
    pd.testing.assert_frame_equal(one["validation"], other["validation"])


def test_one_file_without_split_says_to_set_it(tmp_path):
    write_one_file_corpus(tmp_path / "reviews.csv")
    with pytest.raises(DataError, match=r"reviews\.csv: one file, no train/validation/test; set data\.split"):
        corpus(tmp_path)


def test_split_of_a_split_corpus_needs_resplit(tmp_path):
    folder = write_corpus(tmp_path / "c")
    with pytest.raises(DataError, match=r"has its own train/validation/test splits and data\.split=.*data\.resplit"):
        corpus(folder, split=SPLIT)
    pooled = corpus(folder, split=SPLIT, resplit=True)
    assert sum(pooled.report["rows"].values()) == 360
    assert pooled.report["rows"]["train"] == 288


def test_blank_text_stops_ingest_or_is_dropped_and_counted(tmp_path):
    path = write_one_file_corpus(tmp_path / "c" / "reviews.csv", n=90, blank_rows=(5, 61))
    with pytest.raises(DataError, match=r"reviews\.csv: row 5 has an empty text \(2 such rows; data\.drop_empty"):
        corpus(path.parent, split=SPLIT)
    c = corpus(path.parent, split=SPLIT, drop_empty=True)
    assert sum(c.report["rows"].values()) == 88
    assert c.report["dropped_empty"] == {"reviews.csv": 2}
    assert not any(f["text"].str.strip().eq("").any() for f in frames(c).values())


def test_unicode_spaces_are_trimmed_and_a_text_of_them_is_blank(tmp_path):
    rows = [(0, "\u3000\u3000房间太脏。"), (1, "服务很好。\u3000"), (1, "\u00a0不错"), (0, "\u3000")] * 5
    write_rows(tmp_path / "all.tsv", rows, "tsv")
    c = corpus(tmp_path, split=SPLIT, drop_empty=True)
    texts = set(pd.concat(frames(c).values())["text"])
    assert texts == {"房间太脏。", "服务很好。", "不错"} and c.report["dropped_empty"] == {"all.tsv": 5}


def test_dropping_blank_rows_keeps_row_numbers_of_later_errors(tmp_path):
    path = write_one_file_corpus(tmp_path / "reviews.csv", n=30, blank_rows=(2,))
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[9] = "," + lines[9].split(",", 1)[1]  # data row 9 has no label
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"row 9 has no label"):
        corpus(tmp_path, split=SPLIT, drop_empty=True)


def leaky_corpus(folder):
    write_corpus(folder)
    train = (folder / "train.tsv").read_text(encoding="utf-8").splitlines()
    shared = [line.split("\t", 1)[1] for line in train[10:13]]  # three train texts
    for name, copies in (("dev.tsv", shared), ("test.tsv", shared[:2])):
        lines = (folder / name).read_text(encoding="utf-8").splitlines()
        for i, text in enumerate(copies, start=1):
            lines[i] = f"{lines[i].split(chr(9))[0]}\t{text}"
        (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder, shared


def test_texts_shared_by_train_and_evaluation_are_counted_and_dedupe_removes_them(tmp_path):
    clean = corpus(write_corpus(tmp_path / "clean")).report["leakage"]  # short fixture texts repeat by chance
    folder, shared = leaky_corpus(tmp_path / "c")
    c = corpus(folder)
    parts = frames(c)
    train_texts = set(parts["train"]["text"])
    found = c.report["leakage"]
    assert found["validation_in_train"] == sum(t in train_texts for t in parts["validation"]["text"])
    assert found["test_in_train"] == sum(t in train_texts for t in parts["test"]["text"])
    assert found["validation_in_train"] > clean["validation_in_train"]  # the three copies are seen
    evaluated = set(parts["validation"]["text"]) | set(parts["test"]["text"])
    n_train = sum(t in evaluated for t in parts["train"]["text"])
    assert found["train_in_validation_or_test"] == n_train and found["removed_from_train"] == 0
    deduped = corpus(folder, dedupe=True)
    train = frames(deduped)["train"]
    assert not train["text"].isin(evaluated).any() and not train["text"].isin(shared).any()
    assert len(train) == 240 - n_train and deduped.report["leakage"]["removed_from_train"] == n_train
    assert len(frames(deduped)["validation"]) == 60  # only train loses rows


def test_ingest_writes_classes_and_report_beside_the_splits(tmp_path):
    c = corpus(write_corpus(tmp_path / "c"), label_names=LABEL_NAMES)
    write_ingested(c, tmp_path / "raw")
    classes = json.loads((tmp_path / "raw" / "classes.json").read_text(encoding="utf-8"))
    assert classes == {"names": ["negative", "positive"], "labels": [0, 1]}
    report = json.loads((tmp_path / "raw" / "ingest.json").read_text(encoding="utf-8"))
    assert report["class_rows"]["train"] == {"negative": 120, "positive": 120}


def ingest(tmp_path, folder, **data):
    """The download stage on ``folder``: its report, as metrics/data.json holds it."""
    from stages import download

    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps({"source": str(folder)}), encoding="utf-8")
    params = from_dict({"data": {"source": str(folder), **data}})
    download.run(params, inputs, tmp_path / "raw", tmp_path / "data.json", tmp_path / "label_issues")
    return json.loads((tmp_path / "data.json").read_text(encoding="utf-8"))["data"]


def three_splits(folder, train, validation, test):
    """A split corpus whose rows per split are ``{label: n}``."""
    folder.mkdir(parents=True)
    for name, counts in (("train", train), ("dev", validation), ("test", test)):
        rows = [(label, f"第{i}条{label}类评论。") for label, n in counts.items() for i in range(n)]
        write_rows(folder / f"{name}.tsv", rows, "tsv")
    return folder


def test_fixture_corpus_passes_the_split_checks_and_its_report_is_unchanged(tmp_path):
    report = ingest(tmp_path, write_corpus(tmp_path / "c"))
    assert "warnings" not in report and report["rows"] == {"train": 240, "validation": 60, "test": 60}


def test_a_class_only_in_test_is_refused_before_training(tmp_path):
    folder = three_splits(tmp_path / "c", {0: 20, 1: 20}, {0: 10, 1: 10}, {0: 10, 1: 10, 2: 12})
    with pytest.raises(DataError, match=r"train\.tsv: class '2' has 0 train rows \(validation 0, test 12\): a model"):
        ingest(tmp_path, folder)


def test_a_class_missing_from_validation_is_refused(tmp_path):
    folder = three_splits(tmp_path / "c", {0: 20, 1: 20}, {0: 10}, {0: 10, 1: 10})
    with pytest.raises(DataError, match=r"dev\.tsv: class '1' has 0 validation rows .*meaningless 0"):
        ingest(tmp_path, folder)


def test_one_class_in_train_is_refused_at_download(tmp_path):
    folder = three_splits(tmp_path / "c", {0: 20}, {0: 10, 1: 10}, {0: 10, 1: 10})
    with pytest.raises(DataError, match=r"class '1' has 0 train rows"):
        ingest(tmp_path, folder)


def test_a_corpus_too_small_to_measure_is_refused(tmp_path):
    folder = three_splits(tmp_path / "c", {0: 1, 1: 1}, {0: 1}, {1: 1})  # 2/1/1 rows
    with pytest.raises(DataError, match=r"class '0' has 1 train row \(.*too few to learn it from \(at least 10\)"):
        ingest(tmp_path, folder)
    folder = three_splits(tmp_path / "d", {0: 20, 1: 20}, {0: 3, 1: 10}, {0: 10, 1: 10})
    with pytest.raises(DataError, match=r"class '0' has 3 validation rows .*moves its validation recall by 1/3"):
        ingest(tmp_path, folder)


def test_a_class_missing_from_test_is_a_recorded_warning(tmp_path):
    folder = three_splits(tmp_path / "c", {0: 20, 1: 20, 2: 20}, {0: 10, 1: 10, 2: 10}, {0: 10, 1: 10})
    report = ingest(tmp_path, folder)
    assert report["warnings"] == [
        "class '2' has 0 test rows (train 20, validation 10): test scores do not measure it (at least 10 rows wanted)"
    ]


def test_a_text_is_seen_when_it_is_a_train_text_up_to_whitespace_at_its_ends():
    """The unseen mask: identical text seen, edge whitespace (U+3000, NBSP, tab) ignored, anything inside kept."""
    import pyarrow as pa

    from scratchformer.data.splits import in_train, leakage

    train = ["房间很好，服务不错。", "\u3000太差了", "一般般"]
    texts = [
        "房间很好，服务不错。",  # identical
        "\u3000房间很好，服务不错。\t",  # only what the normalisation strips differs
        "太差了\u00a0",  # train has it with a leading ideographic space
        "房间很好, 服务不错。",  # a comma and a space inside: another text
        "一般 般",  # whitespace inside is kept
        "全新的评论",  # new
    ]
    mask = in_train(train, texts)
    assert mask.dtype == bool and mask.tolist() == [True, True, True, False, False, False]
    assert in_train(pa.chunked_array([train[:1], train[1:]]), pa.array(texts)).tolist() == mask.tolist()
    found = leakage(pa.chunked_array([train]), [pa.chunked_array([texts]), pa.chunked_array([texts[3:]])])
    assert found["validation_in_train"] == 3 and found["test_in_train"] == 0  # the count uses the same mask
    assert found["train_in_validation_or_test"] == 2 and found["train_mask"].to_pylist() == [True, True, False]
