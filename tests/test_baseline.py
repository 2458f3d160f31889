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
