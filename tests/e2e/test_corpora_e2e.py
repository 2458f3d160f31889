"""`dvc repro` on a three-class corpus given as one CSV, and inputs that are tracked by content."""

import json
import sys
from pathlib import Path

import pytest
from fixtures import STARS, write_corpus, write_one_file_corpus
from test_pipeline_e2e import commit_project, copy_project, run, write_params

pytestmark = pytest.mark.slow
NAMES = sorted(STARS)  # 中评, 好评, 差评: text labels, sorted


def stages_run(out: str) -> list[str]:
    return [line.split("'")[1] for line in out.splitlines() if line.startswith("Running stage")]


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    repo = tmp_path_factory.mktemp("three_classes")
    params = copy_project(repo)
    write_one_file_corpus(repo / "corpus" / "reviews.csv", n=450, blank_rows=(7, 300))
    params["data"].update(source="corpus", label_names=None, split=[0.8, 0.1, 0.1], drop_empty=True)
    params["tokenizer"].update(name="vocab", max_len=24)
    params["model"].update(d_model=32, n_heads=2, n_layers=1, ff_dim=64, max_len=32)
    # Knobs that touch the number of classes: an ensemble with an NB member, label smoothing, MLM pretraining.
    params["train"].update(epochs=3, batch_size=16, lr=0.005, ensemble=2, label_smoothing=0.1)
    params["nb"].update(ngrams=2)
    # More unlabeled text for it: another corpus, and the scored corpus itself (its validation and
    # test texts must not be read, whatever pretrain.corpora lists).
    write_corpus(repo / "more")
    params["pretrain"].update(epochs=1, corpora=["corpus", "more"])
    params["probe"].update(text="服务很差，房间太脏。", query_token="差")
    params["acceptance"]["validation_accuracy"] = 0.5
    write_params(repo, params)
    commit_project(repo, "three-class fixture project")
    run(["dvc", "repro"], repo)
    return repo


def read(repo: Path, path: str):
    return json.loads((repo / path).read_text(encoding="utf-8"))


def test_one_file_is_split_and_blank_rows_are_counted(repo):
    data = read(repo, "metrics/data.json")["data"]
    assert data["classes"] == NAMES
    assert data["rows"] == {"train": 358, "validation": 45, "test": 45}  # 448 rows: 450 less 2 blank
    assert data["dropped_empty"] == {"reviews.csv": 2}
    assert read(repo, "data/raw/classes.json")["names"] == NAMES


def test_metrics_and_confusion_are_per_class_with_names(repo):
    evaluation = read(repo, "metrics/eval.json")
    for split in ("validation", "test"):
        confusion = read(repo, f"plots/confusion/{split}.json")
        per_class = confusion["per_class"]
        assert list(per_class) == NAMES and "per_class" not in evaluation[split]
        assert sum(c["support"] for c in per_class.values()) == 45
        assert confusion["classes"] == NAMES and len(confusion["counts"]) == 3
        assert sum(map(sum, confusion["counts"])) == 45
    assert evaluation["validation"]["accuracy"] > 0.5  # three classes: chance is 1/3
    # The short reviews are negative / positive: no class of this corpus, so the check is skipped.
    assert "short" not in evaluation and all("short" not in b for b in read(repo, "metrics/baseline.json").values())
    assert read(repo, "plots/probe/snapshots.json")["class_names"] == NAMES
    train = read(repo, "metrics/train.json")
    assert train["ensemble"] == 2 and train["pretrained"]
    assert train["nb_val_accuracy"] > 0.5 and train["nb_train_accuracy"] > 0.9  # one ratio per class, 3 classes
    # The blend's parts, scored on their own by evaluate: the NB member's validation score is the one
    # train measured when it fit it; the blend is neither part.
    assert evaluation["validation"]["nb"]["accuracy"] == train["nb_val_accuracy"]
    for split in ("validation", "test"):
        assert set(evaluation[split]) >= {"nb", "transformers"} and 0 < evaluation[split]["transformers"]["accuracy"]
    baseline = read(repo, "metrics/baseline.json")["baseline"]  # multinomial logistic regression
    assert baseline["test"]["accuracy"] > 0.5


def test_pretraining_reads_more_corpora_and_never_a_validation_or_test_text(repo):
    texts = read(repo, "metrics/pretrain.json")["pretrain"]["texts"]
    itself, more = texts["corpora"]
    assert (itself["corpus"], more["corpus"]) == ("corpus", "more")
    assert itself["used"] == 0 and itself["in_validation_or_test"] >= 90  # its own 45 + 45 (and their copies)
    assert more["used"] > 0 and texts["texts"] == texts["train"]["used"] + more["used"]
    assert texts["evaluation_texts_in_pretraining"] == 0
    assert [f["source"] for f in read(repo, "data/inputs/pretrain.json")] == ["corpus", "more"]


def test_pictures_render(repo):
    for image in ("confusion_validation.png", "confusion_test.png", "attention_evolution.gif", "loss.png"):
        assert (repo / "plots" / "images" / image).stat().st_size > 1000, image
    run(["dvc", "plots", "show", "--json"], repo)


def test_predict_prints_the_class_name(repo):
    args = [sys.executable, "-m", "scratchformer", "predict", "--model", "models/model.pt"]
    args += ["--tokenizer", "data/tokenizer"]
    out = run([*args, "房间干净，服务满意。"], repo)
    assert out.split("\t")[0] in NAMES
    rows = json.loads(run([*args, "--json", "早餐一般。"], repo))
    assert list(rows[0]["probabilities"]) == NAMES and rows[0]["label"] in NAMES


def test_unchanged_inputs_rerun_nothing_downstream(repo):
    corpus = repo / "corpus" / "reviews.csv"
    corpus.write_bytes(corpus.read_bytes())  # same content, new modification time
    assert stages_run(run(["dvc", "repro"], repo)) == ["inputs"]


def test_editing_the_tokenizer_folder_reruns_tokenize_only(repo):
    vocab = repo / "vocab" / "vocab.txt"
    vocab.write_text(vocab.read_text(encoding="utf-8") + "新\n", encoding="utf-8")
    assert stages_run(run(["dvc", "repro", "tokenize"], repo)) == ["inputs", "tokenize"]


def test_editing_the_corpus_reruns_download(repo):
    corpus = repo / "corpus" / "reviews.csv"
    corpus.write_text(corpus.read_text(encoding="utf-8") + "好评,房间很好，服务满意。\n", encoding="utf-8")
    assert stages_run(run(["dvc", "repro", "tokenize"], repo)) == ["inputs", "download", "tokenize"]
    assert sum(read(repo, "metrics/data.json")["data"]["rows"].values()) == 449
    fingerprint = read(repo, "data/inputs/corpus.json")
    assert fingerprint["source"] == "corpus" and list(fingerprint["files"]) == ["reviews.csv"]
