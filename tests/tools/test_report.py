import json
import shlex
from pathlib import Path

import pytest
import yaml

from scratchformer.render.markdown import replace_block
from scratchformer.reporting import recipes
from scratchformer.reporting.experiments import experiments, workspace_metrics
from scratchformer.reporting.page import fmt, score
from tools.docs.ablations import ablation_groups, ablation_rows, ablation_tables
from tools.docs.results import (
    comparison_table,
    members_line,
    recipe_block,
    recipe_drift,
    results_table,
    unseen_block,
    unseen_table,
)

ROOT = Path(__file__).parents[2]


def metrics_show(acc=0.85):
    return {
        "": {
            "data": {
                "metrics/eval.json": {
                    "data": {
                        "validation": {"accuracy": acc},
                        "test": {"accuracy": 0.84},
                        "acceptance": {"attention_max_abs_err": 5.96e-07, "passed": True},
                    }
                },
                "metrics/train.json": {"data": {"seconds": 56.4, "best_epoch": 3}},
            }
        }
    }


def exp_record(name, n_layers=2, norm="pre", acc=0.8, rev="abc1234"):
    return {
        "rev": rev,
        "name": name,
        "data": {
            "params": {
                "params.yaml": {
                    "data": {
                        "model": {
                            "n_layers": n_layers,
                            "n_heads": 4,
                            "d_model": 64,
                            "norm": norm,
                            "pooling": "mean",
                            "positional": "sinusoidal",
                        }
                    }
                }
            },
            "metrics": {
                "metrics/eval.json": {"data": {"validation": {"accuracy": acc}, "test": {"accuracy": acc}}},
                "metrics/baseline.json": {
                    "data": {
                        "baseline": {"validation": {"accuracy": 0.916}, "test": {"accuracy": 0.925}},
                        "svm": {"validation": {"accuracy": 0.9175}, "test": {"accuracy": 0.9258}},
                    }
                },
            },
        },
    }


def exp_show():
    head = exp_record(None, acc=0.835)
    head["experiments"] = [
        {
            "revs": [
                exp_record("post6", n_layers=6, norm="post", acc=0.7, rev="d1"),
                exp_record("best", acc=0.93, rev="d2"),
                exp_record("wide", acc=0.87, rev="d3"),
            ]
        }
    ]
    return [{"rev": "workspace", "data": {}}, head]


def test_results_table_comes_from_the_metrics():
    table = results_table(workspace_metrics(metrics_show(0.8512)))
    assert "| validation accuracy | 0.8512 |" in table
    assert "| attention max abs error vs PyTorch | 5.96e-07 |" in table
    assert "| acceptance passed | true |" in table


def scored(acc, lo, hi, unseen, n):
    """A split's scores as evaluate and the baseline stage write them (the unseen interval is unseen ± 0.02)."""
    return {
        "accuracy": acc,
        "accuracy_ci95": {"lo": lo, "hi": hi},
        "unseen": {"accuracy": unseen, "n": n, "accuracy_ci95": {"lo": unseen - 0.02, "hi": unseen + 0.02}},
    }


def test_the_unseen_table_shows_every_run_whole_and_unseen_with_intervals():
    versus = {"name": "nblr", "delta": -0.0081, "ci95": {"lo": -0.0302, "hi": 0.0139}}
    evaluation = {
        "validation": {**scored(0.9, 0.88, 0.92, 0.87, 862), "vs_best_baseline": versus},
        "test": {**scored(0.91, 0.89, 0.93, 0.88, 869), "vs_best_baseline": {**versus, "delta": 0.0023}},
    }
    baselines = {
        name: {"validation": scored(0.92, 0.9, 0.94, v, 862), "test": scored(0.93, 0.91, 0.95, v, 869)}
        for name, v in (("baseline", 0.8933), ("svm", 0.8944), ("nblr", 0.9037))
    }
    shown = {
        "": {
            "data": {
                "metrics/eval.json": {"data": evaluation},
                "metrics/baseline.json": {"data": baselines},
            }
        }
    }
    block = unseen_block(workspace_metrics(shown))
    lines = block.splitlines()
    assert lines[0] == ("| run | validation (all) | validation unseen (n = 862) | test (all) | test unseen (n = 869) |")
    assert (
        lines[2]
        == "| model (params.yaml) | 0.9000 [0.8800, 0.9200] | 0.8700 [0.8500, 0.8900] | 0.9100 [0.8900, 0.9300] "
        "| 0.8800 [0.8600, 0.9000] |"
    )
    nblr = next(line for line in lines if "NB-LR" in line)
    assert "| 0.9037 [0.8837, 0.9237] |" in nblr
    assert len([line for line in lines if line.startswith("| char")]) == 3  # every baseline
    assert "validation -0.0081 [-0.0302, +0.0139]; test +0.0023 [-0.0302, +0.0139]" in lines[-1]
    assert "NB-LR" in lines[-1]


def test_the_unseen_table_ends_in_the_short_review_column_for_the_model_and_each_baseline():
    def short(acc):
        return {"accuracy": acc, "accuracy_ci95": {"lo": acc - 0.1, "hi": acc + 0.05}, "n": 62}

    evaluation = {"validation": scored(0.9, 0.88, 0.92, 0.87, 862), "test": scored(0.91, 0.89, 0.93, 0.88, 869)}
    evaluation["short"] = short(0.8)
    baselines = {
        name: {"validation": scored(0.92, 0.9, 0.94, 0.9, 862), "test": scored(0.93, 0.91, 0.95, 0.9, 869)}
        | {"short": short(v)}
        for name, v in (("baseline", 0.95), ("svm", 0.9), ("nblr", 0.85))
    }
    shown = {"": {"data": {"metrics/eval.json": {"data": evaluation}, "metrics/baseline.json": {"data": baselines}}}}
    lines = unseen_table(workspace_metrics(shown)).splitlines()
    assert lines[0].endswith("| test unseen (n = 869) | short reviews (n = 62) |")
    assert lines[2].startswith("| model (params.yaml) |") and lines[2].endswith("| 0.8000 [0.7000, 0.8500] |")
    cells = {line.split(" | ")[0]: line.rsplit(" | ", 1)[1] for line in lines[2:]}
    expected = [
        "0.8000 [0.7000, 0.8500] |",
        "0.8500 [0.7500, 0.9000] |",
        "0.9000 [0.8000, 0.9500] |",
        "0.9500 [0.8500, 1.0000] |",
    ]
    assert sorted(cells.values()) == expected


def test_experiments_are_flattened():
    records = experiments(exp_show())
    assert [r["name"] for r in records] == ["abc1234", "post6", "best", "wide"]
    assert records[1]["model.norm"] == "post" and records[1]["eval:test.accuracy"] == 0.7


def test_comparison_puts_reference_best_and_baseline_side_by_side():
    table = comparison_table(experiments(exp_show()))
    lines = table.splitlines()
    assert lines[2].startswith("| default (params.yaml) | 0.8350 |")
    assert lines[3].startswith("| `best` experiment | 0.9300 |")
    assert lines[4].startswith("| `wide` experiment | 0.8700 |")  # one of the further compared experiments
    assert lines[5].startswith("| char 1–3-gram TF-IDF + logistic regression | 0.9160 | 0.9250 |")
    assert lines[6].startswith("| char 1–3-gram TF-IDF + linear SVM | 0.9175 | 0.9258 |")


def test_ablation_groups():
    text = ablation_tables(experiments(exp_show()))
    assert "### normalisation" in text and "| post6 | 6 | 4 | 64 | post |" in text


def test_runs_that_change_more_than_the_shape_are_not_ablations():
    records = experiments(exp_show())
    records[2]["model.pooling"] = "attention"  # `best`: a pooling change …
    assert "best" in [r["name"] for r in ablation_groups(records)["pooling"]]
    records[2]["model.ngram_max"] = 2  # … together with another n-gram order
    assert "best" not in [r["name"] for r in ablation_groups(records)["pooling"]]


def test_members_line_lists_each_members_own_accuracy():
    records = experiments(exp_show())
    assert members_line(records) == "The `best` experiment is a single model."
    records[2].update({"train:member_val_accuracy.0": 0.9, "train:member_val_accuracy.1": 0.91})
    assert members_line(records) == (
        "Validation accuracy of each ensemble member on its own: 0.9000, 0.9100; of their average: 0.9300."
    )
    records[2]["train:nb_val_accuracy"] = 0.925
    assert members_line(records) == (
        "Validation accuracy of each Transformer member on its own: 0.9000, 0.9100; of the NB member alone: 0.9250; "
        "of the ensemble (½ the Transformers' mean probability, ½ the NB member's): 0.9300."
    )


def test_replace_block_and_missing_block():
    text = "a\n<!-- results:start -->\nold\n<!-- results:end -->\nb"
    assert replace_block(text, "results", "new") == "a\n<!-- results:start -->\nnew\n<!-- results:end -->\nb"
    with pytest.raises(ValueError, match="no <!-- other:start -->"):
        replace_block(text, "other", "x")


def test_fmt():
    assert fmt(0.0) == "0" and fmt(True) == "true" and fmt(None) == "—" and fmt(0.5000) == "0.5"


def test_scores_keep_four_places_so_a_column_lines_up():
    assert score(0.91) == "0.9100" and score(None) == "—" and score(12) == "12"
    table = results_table(workspace_metrics(metrics_show(0.91)))
    assert "| validation accuracy | 0.9100 |" in table  # a score keeps its zeros
    assert "| attention max abs error vs PyTorch | 5.96e-07 |" in table  # anything else as fmt writes it


def test_the_recipe_line_is_made_from_its_file_and_checked_against_the_experiment(tmp_path):
    (tmp_path / "best.yaml").write_text("# a comment\nmodel.d_model: 128\ntrain.bucket_by_length: true\n")
    assert recipe_block("best", tmp_path) == (
        "```bash\ndvc exp run -n best -S model.d_model=128 -S train.bucket_by_length=true\n```"
    )
    records = experiments(exp_show())
    records[2]["baseline"] = "0ld0c0mm1t"  # run on an older commit than the reference: not a param
    records[2]["model.d_model"] = 128
    records[2]["train.bucket_by_length"] = True
    assert recipe_drift(records, "best", tmp_path) == []
    records[2]["model.d_model"] = 96
    assert recipe_drift(records, "best", tmp_path) == ["model.d_model: experiment 96, recipe 128"]
    assert recipe_drift(experiments([exp_record(None)]), "best", tmp_path) == []  # no `best` here: nothing to say


def test_the_committed_recipes_are_the_best_line_and_its_transformer_only_twin():
    best, tf = recipes.load("best", ROOT / "recipes"), recipes.load("best-tf", ROOT / "recipes")
    # best's n-gram member is the NB-weighted one; best-tf has none.
    assert (best["nb.ngrams"], best["nb.scaling"], best["nb.c"], tf["nb.ngrams"]) == (3, "nb", 1.0, 0)
    assert {k: v for k, v in best.items() if not k.startswith("nb.")} == {
        k: v for k, v in tf.items() if not k.startswith("nb.")
    }
    assert recipes.command("best", best).startswith("dvc exp run -n best -S tokenizer.max_len=256 -S ")


def test_a_recipe_line_is_a_shell_line_that_gives_dvc_back_the_recipes_values(tmp_path):
    """A list reaches ``-S`` quoted for the shell and in a form Hydra's grammar reads back as that list."""
    from dvc.utils.hydra import apply_overrides

    corpus = recipes.load("corpora/online-shopping", ROOT / "recipes")
    line = recipes.command("products-default-s42", {**corpus, "data.revision": None})
    assert line == (
        "dvc exp run -n products-default-s42 -S data.source=online-shopping -S 'data.split=[0.8,0.1,0.1]' "
        "-S data.drop_empty=true -S data.revision=null"
    )
    words = shlex.split(line)
    assert words[:5] == ["dvc", "exp", "run", "-n", "products-default-s42"]
    params = tmp_path / "params.yaml"
    params.write_text(
        "data:\n  source: lansinuote/ChnSentiCorp\n  revision: main\n  split: null\n  drop_empty: false\n"
    )
    apply_overrides(str(params), words[6::2])  # what `dvc exp run` does with each -S argument
    assert yaml.safe_load(params.read_text())["data"] == {
        "source": "online-shopping",
        "revision": None,
        "split": [0.8, 0.1, 0.1],
        "drop_empty": True,
    }


def test_prepost_layers_table_compares_the_six_layer_runs_layer_by_layer(monkeypatch):
    from tools.docs import ablations as report

    base = {k: v for k, v in report.REFERENCE.items()}
    pre = {**base, "name": "deep-pre", "rev": "aaa", "model.n_layers": 6, "eval:validation.accuracy": 0.85}
    post = {**pre, "name": "deep-post", "rev": "bbb", "model.norm": "post", "eval:validation.accuracy": 0.82}
    wide = {**post, "name": "wide-post", "rev": "ccc", "model.d_model": 128}  # another shape: not this question
    curves = {
        "aaa": {"embedding": {"median": 0.1, "p99": 0.3}, "layer0": {"median": 0.2, "p99": 0.5}},
        "bbb": {"embedding": {"median": 0.4, "p99": 0.9}, "layer0": {"median": 0.2, "p99": 0.6}},
    }
    monkeypatch.setattr(report, "layer_gradients", lambda rev: curves[rev])
    table = report.prepost_layers_table([wide, post, pre])
    assert "`deep-pre` (Pre-LN) and `deep-post` (Post-LN)" in table
    assert "| embedding | 0.1 | 0.4 | 4.00 | 0.3 | 0.9 |" in table
    assert "| layer0 | 0.2 | 0.2 | 1.00 | 0.5 | 0.6 |" in table
    assert "Pre-LN / Post-LN: 0.8500 / 0.8200" in table
    assert report.prepost_layers_table([pre, wide]) is None  # no Post-LN run of the default shape


def seeded(name, seed, acc, n_layers=2, norm="pre", rev="x"):
    record = exp_record(name, n_layers=n_layers, norm=norm, acc=acc, rev=rev)
    record["data"]["params"]["params.yaml"]["data"]["seed"] = seed
    return record


def test_ablation_rows_average_seeds_of_one_commit_and_mark_what_exceeds_the_spread():
    new, old = exp_record(None, acc=0.835, rev="new"), exp_record(None, acc=0.5, rev="old")
    new["experiments"] = [
        {
            "revs": [
                seeded("main-s42", 42, 0.83),
                seeded("main-s43", 43, 0.84),
                seeded("main-s44", 44, 0.85),
                seeded("post6-s42", 42, 0.70, n_layers=6, norm="post"),
                seeded("post6-s43", 43, 0.71, n_layers=6, norm="post"),
                seeded("post6-s44", 44, 0.72, n_layers=6, norm="post"),
                seeded("post2-s42", 42, 0.84, norm="post"),
                seeded("post2-s43", 43, 0.83, norm="post"),
                seeded("post2-s44", 44, 0.86, norm="post"),
            ]
        }
    ]
    old["experiments"] = [{"revs": [seeded("post6-old", 42, 0.10, n_layers=6, norm="post")]}]  # other code: not pooled
    rows = {r["name"]: r for r in ablation_rows(ablation_groups(experiments([new, old]))["normalisation"])}
    assert rows["post6-s*"]["seeds"] == "42, 43, 44"
    assert rows["post6-s*"]["val acc"] == "0.7100 ± 0.0100"  # sample std: n - 1
    # Seed 42 of the default shape is both the commit ("new", listed first) and main-s42: the experiment is kept.
    assert rows["main-s*"]["val acc"] == "0.8400 ± 0.0100"
    assert rows["post6-s*"]["delta"] == "-0.1300 *"  # far outside the spread of both
    assert rows["post2-s*"]["delta"] == "+0.0033"  # within it: no mark
    assert "post6-old" not in rows and rows["post6-s*"]["val acc values"] == [0.70, 0.71, 0.72]


def test_the_headline_is_read_back_from_the_committed_comparison_where_experiments_are_absent():
    from tools.docs.results import comparison_rows, headline_table, read_table

    records = experiments(exp_show())
    made = headline_table(comparison_rows(records))
    assert headline_table(read_table(comparison_table(records))) == made  # same table either way
    assert made.splitlines()[2:] == [
        "| default run (`params.yaml`) | 0.8350 | 0.8350 |",
        "| [`best` recipe](recipes/best.yaml) (3 Transformers + NB member) | 0.9300 | 0.9300 |",
    ]  # no NB-LR in these records, and the SVM and `wide` rows are not headline rows


def test_the_one_network_row_sits_just_above_the_baseline_it_is_measured_against():
    from tools.docs.levers import recipe_row
    from tools.docs.results import BASELINES, STRONGEST, headline_table

    def row(label, val):
        return {"label": label, "eval:validation.accuracy": val, "eval:test.accuracy": val}

    runs = [
        {"name": f"transformer-s{s}", "resplit": False, "seed": s, "changed": {"train.epochs": 12}, "val": v, "test": v}
        for s, v in ((42, 0.91), (52, 0.93))
    ]
    one = recipe_row(runs, "transformer", {"train.epochs": 12})
    assert one == [
        "[`transformer` recipe](recipes/transformer.yaml) (one network, mean of seeds 42, 52)",
        "0.9200",
        "0.9200",
    ]
    assert recipe_row(runs, "transformer", {"train.epochs": 9}) is None  # no run has exactly those params
    comparison = [row("default (params.yaml)", 0.83), row(BASELINES[STRONGEST], 0.92)]
    lines = headline_table(comparison, one).splitlines()[2:]
    assert [line.split(" | ")[0] for line in lines] == [
        "| default run (`params.yaml`)",
        "| [`transformer` recipe](recipes/transformer.yaml) (one network, mean of seeds 42, 52)",
        "| char 1–3-gram NB-LR (strongest n-gram baseline)",
    ]
    assert headline_table(comparison) == headline_table(comparison, None)  # no record: the table as before


def test_without_the_recipes_experiments_the_default_row_and_baselines_come_from_the_workspace():
    from tools.docs.results import BASELINES, STRONGEST, refreshed_rows

    committed = [
        {"label": "reference (params.yaml)", "eval:validation.accuracy": 0.8317, "eval:test.accuracy": 0.8408},
        {"label": "`best` experiment", "eval:validation.accuracy": 0.9308, "eval:test.accuracy": 0.9417},
        {"label": BASELINES[STRONGEST], "eval:validation.accuracy": 0.9, "eval:test.accuracy": 0.9},
    ]
    metrics = {
        "eval:validation.accuracy": 0.8833,
        "eval:test.accuracy": 0.9008,
        "train:parameters": 123,
        f"baseline:{STRONGEST}.validation.accuracy": 0.9242,
        f"baseline:{STRONGEST}.test.accuracy": 0.9267,
    }
    reference = {"name": "reference", "eval:validation.accuracy": 0.8317, "eval:test.accuracy": 0.8408}
    rows = refreshed_rows(committed, metrics, [reference, {"name": "other", "eval:test.accuracy": 0.5}])
    assert [(r["label"], r["eval:validation.accuracy"]) for r in rows] == [
        ("default (params.yaml)", 0.8833),  # the workspace's, under its new name
        ("`reference` experiment", 0.8317),  # run here, not in the committed table: after the default
        ("`best` experiment", 0.9308),  # not here: as committed
        (BASELINES[STRONGEST], 0.9242),  # the workspace's baseline
    ]
    assert rows[0]["train:parameters"] == 123
    assert refreshed_rows(rows, metrics, [reference]) == rows  # regenerating again changes nothing


def test_the_test_time_line_quotes_both_suites_from_the_benchmark(tmp_path):
    from tools.docs.results import test_time_line

    assert test_time_line(tmp_path / "none.json") is None
    path = tmp_path / "test_time.json"
    unit, everything = {"seconds": 75.0, "passed": 640}, {"seconds": 1260.0, "passed": 700}
    path.write_text(json.dumps({"unit": unit, "all": everything, "cpus": 2, "machine": "x86_64"}))
    line = test_time_line(path)
    assert '`python -m pytest -m "not slow"` runs 640 tests in 1.2 minutes' in line
    assert "`python -m pytest`, 700 tests with the end-to-end ones, in 21 minutes" in line


def test_settings_read_back_as_the_overrides_they_were_written_from():
    overrides = {"data.split": [0.8, 0.1, 0.1], "data.drop_empty": True, "data.revision": None, "train.lr": 0.004}
    overrides |= {"pretrain.corpora": ["lansinuote/ChnSentiCorp", "online-shopping"], "model.pooling": "attention"}
    assert recipes.parsed(recipes.settings(overrides)) == overrides
    assert recipes.parsed(["data.source=a=b"]) == {"data.source": "a=b"}  # split at the first "=" only
