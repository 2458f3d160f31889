from fixtures import write_corpus

from scratchformer.baseline import fit_and_score
from scratchformer.config import BaselineConfig, DataConfig
from scratchformer.data import load_splits


def test_ngram_baseline_learns_the_fixture_corpus(tmp_path):
    splits = {s.name: s.frame for s in load_splits(DataConfig(source=str(write_corpus(tmp_path))))}
    result = fit_and_score(BaselineConfig(), 0, splits["train"], {k: splits[k] for k in ("validation", "test")})
    assert set(result) == {"validation", "test"}
    assert result["validation"]["accuracy"] > 0.9 and result["test"]["accuracy"] > 0.9
    # Unigrams only on a corpus whose labels hinge on characters still work; n=1 is valid.
    assert fit_and_score(BaselineConfig(ngram_max=1), 0, splits["train"], {"test": splits["test"]})["test"]["f1"] > 0.8


def test_the_svm_baseline_learns_and_differs_from_the_logistic_one(tmp_path):
    splits = {s.name: s.frame for s in load_splits(DataConfig(source=str(write_corpus(tmp_path))))}
    test = {"test": splits["test"]}
    svm = fit_and_score(BaselineConfig(), 0, splits["train"], test, classifier="svm")
    assert svm["test"]["accuracy"] > 0.9
    # A different classifier: its decision function is not the logistic one's.
    from scratchformer.baseline import make_baseline

    texts, labels = splits["train"]["text"], splits["train"]["label"]
    logistic = make_baseline(BaselineConfig(), 0).fit(texts, labels).decision_function(splits["test"]["text"])
    linear = make_baseline(BaselineConfig(), 0, "svm").fit(texts, labels).decision_function(splits["test"]["text"])
    assert not (abs(logistic - linear) < 1e-6).all()
