import pytest

from tools.docs.seeds import seed_groups, seed_table


def record(name, seed, val, test, **params):
    return {
        "name": name,
        "rev": name,
        "seed": seed,
        "model.n_layers": 2,
        **params,
        "eval:validation.accuracy": val,
        "eval:test.accuracy": test,
    }


def test_rows_that_differ_only_in_seed_become_mean_and_spread():
    records = [
        record("a44", 44, 0.90, 0.91),
        record("a42", 42, 0.92, 0.93),
        record("a43", 43, 0.91, 0.92),
        record("a42-again", 42, 0.50, 0.50),  # an older run of a seed already counted: the first listed wins
        record("deep42", 42, 0.80, 0.81, **{"model.n_layers": 6}),  # other params: a group of one, left out
        record("deep43", 43, 0.82, 0.83, **{"model.n_layers": 6}),
        record("lone", 42, 0.70, 0.70, **{"train.lr": 0.1}),
        {"name": "unevaluated", "seed": 45, "model.n_layers": 2},
    ]
    groups = seed_groups(records)
    assert [g["names"] for g in groups] == [["a42", "a43", "a44"], ["deep42", "deep43"]]
    v = groups[0]["validation"]
    assert v["mean"] == pytest.approx(0.91) and v["std"] == pytest.approx(0.01)  # sample std of .92, .91, .90
    assert (v["min"], v["max"]) == (0.90, 0.92)
    assert groups[0]["test"]["mean"] == pytest.approx(0.92)
    table = seed_table(groups)
    assert "0.9100 ± 0.0100 (0.9000–0.9200)" in table and "`deep42`, `deep43`" in table
    assert seed_groups(records, min_seeds=3) == groups[:1]
