"""The record of runs per corpus (docs/corpora.json) and the table of both corpora made from it."""

import json
from pathlib import Path

import pytest
import yaml
from fixtures import table_rows

from scratchformer.render.markdown import block
from scratchformer.reporting.experiments import experiments
from tools.docs import corpora

ROOT = Path(__file__).parents[2]
PRODUCTS = {"source": "online-shopping", "split": [0.8, 0.1, 0.1], "drop_empty": True}


def scored(acc, lo, hi, unseen=None, n=None):
    """One split as metrics/eval.json and metrics/baseline.json write it (rounded: exact in the asserts)."""
    split = {"accuracy": acc, "accuracy_ci95": {"lo": round(lo, 4), "hi": round(hi, 4)}}
    if unseen is not None:
        unseen = round(unseen, 4)
        ci95 = {"lo": round(unseen - 0.02, 4), "hi": round(unseen + 0.02, 4)}
        split["unseen"] = {"accuracy": unseen, "accuracy_ci95": ci95, "n": n}
    return split


def exp(name, val, test, seed=42, data=None, nblr=0.90, delta=(0.01, -0.01, 0.03), n=(862, 869)):
    """One experiment as ``dvc exp show --json`` nests it (only the keys the record reads)."""
    versus = {"name": "nblr", "delta": delta[0], "ci95": {"lo": delta[1], "hi": delta[2]}}
    evaluated = {
        split: {**scored(acc, acc - 0.02, acc + 0.02, acc - 0.01, size), "vs_best_baseline": versus}
        for split, acc, size in (("validation", val, n[0]), ("test", test, n[1]))
    }
    evaluated["short"] = {"accuracy": 0.8, "accuracy_ci95": {"lo": 0.7, "hi": 0.9}, "n": 62}
    baselines = {
        name: {
            split: scored(acc, acc - 0.01, acc + 0.01, acc - 0.02, size)
            for split, size in zip(("validation", "test"), n, strict=True)
        }
        for name, acc in (("baseline", nblr - 0.01), ("svm", nblr - 0.005), ("nblr", nblr))
    }
    params = {"seed": seed, "data": data or {"source": "lansinuote/ChnSentiCorp", "split": None}}
    metrics = {"metrics/eval.json": {"data": evaluated}, "metrics/baseline.json": {"data": baselines}}
    return {"rev": name, "name": name, "data": {"params": {"params.yaml": {"data": params}}, "metrics": metrics}}


def exp_show(*exps):
    """A commit (never recorded itself) with ``exps`` run on it."""
    commit = {"rev": "c0ffee0", "name": "main", "data": exps[0]["data"], "experiments": [{"revs": list(exps)}]}
    return [commit]


def sweep():
    return exp_show(
        exp("tf-s42", 0.90, 0.91, seed=42),
        exp("tf-c0ffee1-s52", 0.92, 0.93, seed=52),  # a run named after its commit too: still `tf`
        exp("wide-s42", 0.93, 0.94, seed=42),  # same corpus, settings and seed as tf-s42: its baselines again
        exp("products-default-s42", 0.95, 0.96, data=PRODUCTS, nblr=0.94, delta=(0.012, 0.004, 0.02), n=(4489, 4490)),
        exp("curve-tf-25-s42", 0.85, 0.86, data={**PRODUCTS, "train_share": 0.25}),  # a learning curve's point
    )


def tables(text):
    """Each corpus's heading line and its table's rows, keyed by corpus."""
    parts = text.split("\n\n")
    return {parts[i].split("**")[1]: (parts[i], table_rows(parts[i + 1])) for i in range(0, len(parts), 2)}


def test_experiments_are_recorded_per_corpus_and_the_baselines_once_per_corpus_settings_and_seed(tmp_path):
    runs, baselines = corpora.gathered(experiments(sweep()))
    assert [(r["corpus"], r["name"]) for r in runs] == [
        ("ChnSentiCorp", "tf-s42"),
        ("ChnSentiCorp", "tf-c0ffee1-s52"),
        ("ChnSentiCorp", "wide-s42"),
        ("online-shopping", "products-default-s42"),
    ]  # the commit itself is not a run
    products = runs[3]
    assert products["seed"] == 42 and products["data"]["split"] == [0.8, 0.1, 0.1] and products["data"]["drop_empty"]
    assert products["test"]["all"] == {"accuracy": 0.96, "ci95": [0.94, 0.98]}
    assert products["test"]["unseen"] == {"accuracy": 0.95, "ci95": [0.93, 0.97], "n": 4490}
    assert products["test"]["vs_best_baseline"] == {"name": "nblr", "delta": 0.012, "ci95": [0.004, 0.02]}
    assert products["short"] == {"accuracy": 0.8, "ci95": [0.7, 0.9], "n": 62}
    kept = corpora.merge(tmp_path / "corpora.json", runs, baselines)
    assert [(b["corpus"], b["seed"]) for b in kept["baselines"]] == [
        ("ChnSentiCorp", 42),
        ("ChnSentiCorp", 52),
        ("online-shopping", 42),
    ]
    assert kept["baselines"][2]["scores"]["nblr"]["test"]["all"] == {"accuracy": 0.94, "ci95": [0.93, 0.95]}


def test_the_table_pools_seeds_by_name_and_shows_one_runs_intervals(tmp_path):
    kept = corpora.merge(tmp_path / "corpora.json", *corpora.gathered(experiments(sweep())))
    shown = tables(corpora.corpora_block(kept))
    heading, chn = shown["ChnSentiCorp"]
    assert "its own splits" in heading
    tf, wide, lr, svm, nblr = chn
    assert tf[:4] == ["`tf`", "42, 52", "0.9100 ± 0.0141", "0.9000 ± 0.0141"]  # mean ± std over the two seeds
    assert tf[-1] == "NB-LR +0.0100 (mean): level"  # each seed's interval holds 0
    assert wide[:3] == ["`wide`", "42", "0.9300 [0.9100, 0.9500]"]
    assert nblr[1:3] == ["42, 52", "0.9000 ± 0.0000"] and nblr[-1] == "—"
    assert lr[0] == corpora.BASELINES["baseline"] and svm[0] == corpora.BASELINES["svm"]
    heading, products = shown["online-shopping"]
    assert "`data.split=[0.8,0.1,0.1]`" in heading and "`data.drop_empty=true`" in heading
    run, *fitted = products
    assert run == [
        "`products-default`",
        "42",
        "0.9500 [0.9300, 0.9700]",
        "0.9400 [0.9200, 0.9600]",
        "0.9600 [0.9400, 0.9800]",
        "0.9500 [0.9300, 0.9700]",
        "NB-LR +0.0120 [+0.0040, +0.0200]: above",
    ]
    assert [r[2] for r in fitted] == ["0.9300 [0.9200, 0.9400]", "0.9350 [0.9250, 0.9450]", "0.9400 [0.9300, 0.9500]"]
    header = corpora.corpora_block(kept).split("\n\n")[3].splitlines()[0]
    assert "test unseen (n = 4490)" in header


def test_the_headline_keeps_only_the_named_runs_and_every_baseline(tmp_path):
    kept = corpora.merge(tmp_path / "corpora.json", *corpora.gathered(experiments(sweep())))
    shown = tables(corpora.corpora_block(kept, only=("wide", "products-default")))
    assert [row[0] for row in shown["ChnSentiCorp"][1]][:2] == ["`wide`", corpora.BASELINES["baseline"]]  # no `tf`
    assert len(shown["ChnSentiCorp"][1]) == 4 and shown["online-shopping"][1][0][0] == "`products-default`"
    only_products = tables(corpora.corpora_block(kept, only=("products-default",)))
    assert list(only_products) == ["online-shopping"]  # no ChnSentiCorp table of baselines alone


def test_the_record_keeps_runs_whose_experiments_are_gone(tmp_path):
    record = tmp_path / "corpora.json"
    corpora.merge(record, *corpora.gathered(experiments(sweep())))
    later = exp_show(exp("tf-s62", 0.94, 0.95, seed=62), exp("tf-s42", 0.89, 0.90, seed=42))  # another clone
    kept = corpora.merge(record, *corpora.gathered(experiments(later)))
    assert [r["name"] for r in json.loads(record.read_text())["runs"]] == [
        "tf-c0ffee1-s52",
        "tf-s42",
        "tf-s62",
        "wide-s42",
        "products-default-s42",
    ]
    (again,) = [r for r in kept["runs"] if r["name"] == "tf-s42"]
    assert again["validation"]["all"]["accuracy"] == 0.89  # recorded again: the new run replaces it
    assert tables(corpora.corpora_block(kept))["ChnSentiCorp"][1][0][:2] == ["`tf`", "42, 52, 62"]


@pytest.mark.parametrize(
    ("intervals", "said"),
    [([(0.001, 0.02)], "above"), ([(-0.03, -0.001)], "below"), ([(0.001, 0.02), (-0.01, 0.01)], "level")],
)
def test_a_difference_is_level_unless_every_paired_interval_excludes_zero_on_one_side(intervals, said):
    assert corpora.verdict([{"ci95": list(ci)} for ci in intervals]) == said


def test_baselines_fit_outside_the_pipeline_are_recorded_from_their_params_and_metrics(tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"seed": 42, "data": PRODUCTS}))
    metrics = tmp_path / "baseline.json"
    metrics.write_text(json.dumps(exp("x", 0.9, 0.9, nblr=0.9466)["data"]["metrics"]["metrics/baseline.json"]["data"]))
    page = tmp_path / "results.md"
    page.write_text("# Results\n\n<!-- corpora:start -->\n<!-- corpora:end -->\n")
    record = tmp_path / "corpora.json"
    argv = ["baselines", "--params", str(params), "--metrics", str(metrics), "--record", str(record)]
    corpora.main([*argv, "--page", str(page)])
    (fitted,) = json.loads(record.read_text())["baselines"]
    assert (fitted["corpus"], fitted["seed"], fitted["data"]["split"]) == ("online-shopping", 42, [0.8, 0.1, 0.1])
    shown = block(page.read_text(), "corpora")
    assert "**online-shopping**" in shown and "| 0.9466 [0.9366, 0.9566] |" in shown
    assert "No run on it is recorded yet" in shown  # the baselines alone, until a run is recorded


def test_the_products_line_is_the_corpus_recipe_as_one_shell_command():
    assert corpora.recipe_block("online-shopping", ROOT / "recipes") == (
        "```bash\ndvc exp run -n products-default-s42 -S data.source=online-shopping "
        "-S 'data.split=[0.8,0.1,0.1]' -S data.drop_empty=true\n```"
    )


def test_the_docs_make_the_table_from_the_record_and_the_line_from_the_corpus_recipe(tmp_path):
    from tools.docs import pages

    kept = corpora.merge(tmp_path / corpora.RECORD, *corpora.gathered(experiments(sweep())))
    (tmp_path / "recipes").symlink_to(ROOT / "recipes")
    src = pages.Sources(tmp_path)
    assert pages.make("corpora", "", src) == corpora.corpora_block(kept)
    assert pages.make("corpus-online-shopping", "", src) == corpora.recipe_block("online-shopping", ROOT / "recipes")


def test_a_recipes_runs_are_renamed_seed_by_seed_and_a_taken_name_is_refused(tmp_path):
    record = tmp_path / "corpora.json"
    corpora.merge(record, *corpora.gathered(experiments(sweep())))
    kept = corpora.rename(record, "tf", "tf-old")
    names = [r["name"] for r in json.loads(record.read_text())["runs"]]
    assert names == ["tf-old-c0ffee1-s52", "tf-old-s42", "wide-s42", "products-default-s42"]
    assert tables(corpora.corpora_block(kept))["ChnSentiCorp"][1][0][:2] == ["`tf-old`", "42, 52"]
    corpora.merge(record, *corpora.gathered(experiments(exp_show(exp("tf-s42", 0.9, 0.9)))))
    with pytest.raises(SystemExit, match="already has a run named tf-old-s42"):
        corpora.rename(record, "tf", "tf-old")
    with pytest.raises(SystemExit, match="no run named wid "):
        corpora.rename(record, "wid", "w")  # a prefix of a name is not a run's name
    assert [r["name"] for r in json.loads(record.read_text())["runs"]][:3] == [
        "tf-old-c0ffee1-s52",
        "tf-old-s42",
        "tf-s42",
    ]
