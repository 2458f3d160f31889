import json

from fixtures import table_rows

from scratchformer.render.markdown import block
from tools.docs.levers import lever_records, levers_table, read_record, resplit_table, update_levers


def exp(
    name,
    val,
    test,
    epochs=7,
    distill=0.0,
    ngrams=0,
    split=None,
    seed=42,
    nblr=(0.92, 0.93),
    best_epoch=None,
    unseen=None,
    source=None,
):
    """One experiment as ``dvc exp show --json`` nests it (only the keys the levers read)."""
    data = {"split": split, "resplit": split is not None} | ({"source": source} if source else {})
    # pretrain.corpora as params.yaml gives it, a list (its default in the config is a tuple): no change
    train = {"epochs": epochs, "distill": distill}
    params = {"seed": seed, "data": data, "train": train, "nb": {"ngrams": ngrams}, "pretrain": {"corpora": []}}
    metrics = {
        "metrics/eval.json": {
            "data": {"validation": {"accuracy": val, "unseen": {"accuracy": unseen}}, "test": {"accuracy": test}}
        },
        "metrics/train.json": {"data": {"best_epoch": best_epoch or epochs, "nb_train_accuracy": 0.99}},
        "metrics/pretrain.json": {"data": {"pretrain": {"epochs": 0, "masked_accuracy": 0.05}}},
        "metrics/baseline.json": {
            "data": {"nblr": {"validation": {"accuracy": nblr[0]}, "test": {"accuracy": nblr[1]}}}
        },
    }
    return {"rev": name, "name": name, "data": {"params": {"params.yaml": {"data": params}}, "metrics": metrics}}


def exp_show(*exps):
    return [{"rev": "c0ffee0", "name": "main", "data": {}, "experiments": [{"revs": list(exps)}]}]


def sweep():
    return exp_show(
        exp("tf1-s42", 0.90, 0.91, seed=42),
        exp("tf1-s52", 0.90, 0.92, seed=52),
        exp("kd-s42", 0.93, 0.93, distill=0.5, ngrams=3, seed=42, unseen=0.91),
        exp("kd-s52", 0.93, 0.95, distill=0.5, ngrams=3, seed=52, best_epoch=5, unseen=0.92),
        exp("rs-kd-s52", 0.91, 0.94, distill=0.5, ngrams=3, split=[0.8, 0.1, 0.1], seed=52, nblr=(0.92, 0.93)),
        exp("other", 0.99, 0.99),  # not named like a lever: left out
        exp("products-default-s42", 0.94, 0.95, source="online-shopping"),  # another corpus: left out
        exp("chnsenticorp-resplit-transformer-s42", 0.93, 0.93, split=[0.8, 0.1, 0.1]),  # not rs-: left out
    )


def test_levers_are_grouped_by_name_and_measured_against_the_control_and_nblr():
    from scratchformer.reporting.experiments import experiments

    records = lever_records(experiments(sweep()))
    assert [r["name"] for r in records] == ["kd-s42", "kd-s52", "tf1-s42", "tf1-s52", "rs-kd-s52"]
    table = {r[0]: r for r in table_rows(levers_table(records))}
    assert set(table) == {"`kd`", "`tf1`"}
    kd, tf1 = table["`kd`"], table["`tf1`"]
    assert kd[1] == "`nb.distill=0.5`, `nb.ngrams=3`"  # against tf1
    assert tf1[1] == "`train.epochs=7`"  # against the defaults
    assert kd[3] == "0.9300 ± 0.0000" and kd[4] == "0.9400 ± 0.0141"
    assert kd[5] == "+0.0300 / +0.0250"
    assert kd[7] == "yes" and tf1[7] == "no"  # 0.93/0.94 clears NB-LR's 0.92/0.93; 0.90/0.915 does not
    assert kd[8] == "7, 5" and tf1[8] == "7, 7"  # each seed's own, in seed order
    assert {(r["teacher_train"], r["pretrain_masked_accuracy"]) for r in records} == {(0.99, 0.05)}  # kept to read back
    (resplit,) = table_rows(resplit_table(records))
    assert resplit[0] == "`rs-kd-s52`" and resplit[2] == "0.9100 / 0.9400" and resplit[4] == "no"  # val below


def test_the_record_keeps_runs_that_are_no_longer_at_hand(tmp_path):
    page = tmp_path / "ablations.md"
    page.write_text("<!-- levers:start -->\n<!-- levers:end -->\n<!-- resplit:start -->\n<!-- resplit:end -->\n")
    record = tmp_path / "levers.json"
    update_levers(page, sweep(), record)
    update_levers(page, exp_show(exp("kd-s62", 0.95, 0.95, distill=0.5, seed=62)), record)  # another clone's run
    names = [r["name"] for r in json.loads(record.read_text())]
    assert names == ["kd-s42", "kd-s52", "kd-s62", "tf1-s42", "tf1-s52", "rs-kd-s52"]
    assert "42, 52, 62" in block(page.read_text(), "levers")


def test_a_record_made_before_the_nb_section_is_shown_with_todays_keys(tmp_path):
    """A run kept in the record as ``train.distill`` / ``train.nb_role`` is shown, and kept, as ``nb.*``."""
    page = tmp_path / "ablations.md"
    page.write_text("<!-- levers:start -->\n<!-- levers:end -->\n<!-- resplit:start -->\n<!-- resplit:end -->\n")
    record = tmp_path / "levers.json"
    update_levers(page, sweep(), record)
    runs = json.loads(record.read_text())
    for r in runs:
        if r["lever"] == "kd":
            r["changed"] = {"train.distill": 0.5, "train.epochs": 9, "train.nb_ngrams": 3, "train.nb_role": "teacher"}
        else:  # a run made with an n-gram setting params.yaml had then, where no n-gram model is fit
            r["changed"] = {**r["changed"], "train.nb_c": 10.0}
    record.write_text(json.dumps(runs))  # as recorded then
    changed = {"nb.distill": 0.5, "nb.ngrams": 3, "nb.role": "teacher", "train.epochs": 9}
    assert read_record(record)[0]["changed"] == changed
    update_levers(page, None, record)
    table = {r[0]: r for r in table_rows(block(page.read_text(), "levers"))}
    assert table["`kd`"][1] == "`nb.distill=0.5`, `nb.ngrams=3`, `nb.role=teacher`, `train.epochs=9`"
    assert table["`tf1`"][1] == "`train.epochs=7`"  # nb.c is idle without nb.ngrams: not a change
    assert "train.distill" not in record.read_text()


def test_the_recipe_line_finds_the_runs_whose_params_are_the_recipe():
    from scratchformer.reporting.experiments import experiments
    from tools.docs.levers import recipe_line

    records = lever_records(experiments(sweep()))
    recipe = {"train.epochs": 7, "nb.distill": 0.5, "nb.ngrams": 3, "train.ensemble": 1}
    line = recipe_line(records, "transformer", recipe)
    assert "over seeds 42, 52: validation 0.9300 ± 0.0000, test 0.9400 ± 0.0141, unseen validation 0.9150 ± " in line
    assert line.endswith("against NB-LR's 0.9200 / 0.9300: above NB-LR on both splits.")
    one = recipe_line([r for r in records if r["seed"] == 42], "transformer", recipe)
    assert "over seed 42: validation 0.9300, test " in one
    below = recipe_line(records, "tf", {"train.epochs": 7})
    assert "test 0.9150 ± 0.0071 against" in below and below.endswith("not above NB-LR on both splits.")  # no unseen
    assert "no recorded runs" in recipe_line(records, "x", {"train.epochs": 9})


def test_a_recipe_finds_runs_whatever_the_defaults_say_of_the_settings_it_makes_idle():
    from tools.docs.levers import recipe_runs

    line = {"model.max_len": 256, "nb.ngrams": 0}
    run = {"resplit": False, "seed": 42, "changed": {"model.max_len": 256, "nb.c": 10.0, "nb.scaling": "tfidf"}}
    assert recipe_runs([run], line) == [run]  # the defaults' member settings are idle without a member
    again = {**run, "name": "a-lever-s42"}  # a lever's side that ran the same settings
    assert recipe_runs([run, again, {**run, "seed": 52}], line) == [run, {**run, "seed": 52}]  # one run a seed
    member = {**run, "changed": {**run["changed"], "nb.ngrams": 3}}
    assert recipe_runs([member], line) == []
    assert recipe_runs([member], {**line, "nb.ngrams": 3}) == []  # with a member its settings count
    clause = {**run, "changed": {**run["changed"], "train.span_length": "clause"}}
    assert recipe_runs([clause], line) == [clause]  # nothing is cropped (train.spans 0): the span length is idle
    cropped = {**clause, "changed": {**clause["changed"], "train.spans": 0.5}}
    assert recipe_runs([cropped], {**line, "train.spans": 0.5}) == []  # reviews are cropped: it counts


def test_the_recipe_line_quotes_the_fresh_clone_time_only_for_the_settings_it_timed():
    from scratchformer.reporting.experiments import experiments
    from tools.docs.levers import recipe_line, timing_sentence

    records = lever_records(experiments(sweep()))
    recipe = {"train.epochs": 7, "nb.distill": 0.5, "nb.ngrams": 3, "train.ensemble": 1}
    timing = {
        "recipe": "transformer",
        "settings": ["train.epochs=7", "nb.distill=0.5", "nb.ngrams=3", "train.ensemble=1"],
        "seed": 42,
        "seconds": 690.0,
        "cpus": 2,
        "machine": "x86_64",
        "validation_accuracy": 0.93,
        "test_accuracy": 0.94,
    }
    line = recipe_line(records, "transformer", recipe, timing)
    assert line.endswith(
        "`benchmarks/recipe_time.py` ran it (seed 42: validation 0.9300, test 0.9400) "
        "in 11.5 minutes on 2 x86_64 CPU cores."
    )
    seeds = {
        **timing,
        "seeds": [42, 52, 62],
        "seconds": 300.0,
        "validation_unseen_accuracy": 0.9,
        "against": {"commit": "b35c8c7" + "0" * 33, "seconds": 600.0},
        "ratio": 0.5,
        "unseen_validation": {"delta": -0.0031, "ci95": {"lo": -0.0112, "hi": 0.0046}, "n": 862, "verdict": "level"},
    }
    said = ("transformer", recipe)
    assert timing_sentence(seeds, *said) == (
        " From a fresh clone with an empty DVC cache, `benchmarks/recipe_time.py` ran it (seeds 42, 52, 62, means: "
        "validation 0.9300, test 0.9400, unseen validation 0.9000) in a median of 5.0 minutes on 2 x86_64 CPU cores."
        " The recipe as commit b35c8c7 wrote it took 10.0 minutes on the same seeds, run one after the other:"
        " **0.50x** the time; unseen validation -0.0031 [-0.0112, +0.0046] (paired bootstrap over 862 reviews): level."
    )
    recorded = timing_sentence({**seeds, "against_record": "benchmarks/results/recipe_time-b35c8c7.json"}, *said)
    assert "on the same seeds, in the runs recorded in `benchmarks/results/recipe_time-b35c8c7.json`: **0.50x**" in (
        recorded
    )
    assert timing_sentence(timing, "transformer", {**recipe, "train.epochs": 12}) == ""  # timed before a change
    assert timing_sentence(timing, "best", recipe) == ""
    assert "recipe_time" not in recipe_line(records, "transformer", recipe, None)
