from fixtures import write_corpus

from scratchformer.analysis.baseline import fit_and_predict, score_predictions
from scratchformer.config import BaselineConfig, DataConfig
from scratchformer.data.ingest import load_splits
from scratchformer.data.splits import in_train


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
    from scratchformer.analysis.baseline import make_baseline

    texts, labels = splits["train"]["text"], splits["train"]["label"]
    logistic = make_baseline(BaselineConfig(), 0).fit(texts, labels).decision_function(splits["test"]["text"])
    linear = make_baseline(BaselineConfig(), 0, "svm").fit(texts, labels).decision_function(splits["test"]["text"])
    assert not (abs(logistic - linear) < 1e-6).all()


def test_nb_scaling_is_the_log_count_ratio_of_presence():
    import numpy as np
    import scipy.sparse as sp

    from scratchformer.analysis.baseline import NBScaling

    # Feature 0 in both positive texts, feature 1 in the negative one, feature 2 everywhere.
    X = sp.csr_matrix(np.array([[1, 0, 1], [1, 0, 1], [0, 1, 1]]))
    scaling = NBScaling().fit(X, [1, 1, 0])
    p, q = np.array([3, 1, 3]), np.array([1, 2, 2])
    assert np.allclose(scaling.ratio_, np.log((p / p.sum()) / (q / q.sum())))
    assert np.allclose(scaling.transform(X).toarray(), X.toarray() * scaling.ratio_)


def test_the_nblr_baseline_learns_three_classes(tmp_path):
    from fixtures import write_one_file_corpus

    write_one_file_corpus(tmp_path / "corpus" / "reviews.csv", n=300)
    config = DataConfig(source=str(tmp_path / "corpus"), label_names=None, split=[0.8, 0.1, 0.1])
    splits = {s.name: s.frame for s in load_splits(config)}
    result = fit_and_score(BaselineConfig(), 0, splits["train"], {"test": splits["test"]}, classifier="nblr")
    assert result["test"]["accuracy"] > 0.6  # three classes: chance is 1/3


def fit_and_score(config, seed, train, others, classifier="logistic"):
    """The baseline stage's scores of one baseline: fit on ``train``, score each frame of ``others``."""
    predicted = fit_and_predict(config, seed, train, others, classifier)
    seen = {name: in_train(train["text"], frame["text"]) for name, frame in others.items()}
    return score_predictions(predicted, others, seen, int(train["label"].max()) + 1)


def test_the_baselines_fit_side_by_side_answer_as_each_fit_alone(tmp_path):
    """fit_and_predict_all fits the three in parallel processes: each one's answers are its own fit's, in order."""
    import numpy as np

    from scratchformer.analysis.baseline import BASELINES, fit_and_predict_all

    splits = {s.name: s.frame for s in load_splits(DataConfig(source=str(write_corpus(tmp_path))))}
    train = splits["train"].assign(label=np.random.default_rng(0).permutation(splits["train"]["label"]))
    others = {"validation": splits["validation"], "test": splits["test"]}  # labels shuffled: the three disagree
    together = fit_and_predict_all(BaselineConfig(), 0, train, others)
    assert list(together) == list(BASELINES)
    for name, classifier in BASELINES.items():
        alone = fit_and_predict(BaselineConfig(), 0, train, others, classifier)
        assert all(np.array_equal(together[name][split], alone[split]) for split in others), name
    assert not np.array_equal(together["baseline"]["validation"], together["nblr"]["validation"])
