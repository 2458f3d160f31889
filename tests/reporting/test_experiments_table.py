"""`scratchformer report experiments`: one line per experiment, its accuracies and what it changed, in 120 columns."""

import dataclasses

from scratchformer.cli import main
from scratchformer.config import Params
from scratchformer.reporting.experiments import (
    NO_EXPERIMENTS,
    experiments,
    experiments_table,
    flat_params,
    short_keys,
)

BASE_PARAMS = {
    "seed": 42,
    "tokenizer": {"max_len": 128},
    "model": {"n_layers": 2, "d_model": 64, "dropout": 0.1, "max_len": 128, "pooling": "mean"},
    "train": {"epochs": 4, "lr": 0.001, "schedule": "constant", "ensemble": 1, "bucket_by_length": False},
    "pretrain": {"epochs": 0},
}


def entry(rev, name=None, params=BASE_PARAMS, val=0.8317, test=0.8408):
    """One revision of `dvc exp show --json`: params.yaml and metrics/eval.json."""
    metrics = {"metrics/eval.json": {"data": {"validation": {"accuracy": val}, "test": {"accuracy": test}}}}
    return {"rev": rev, "name": name, "data": {"params": {"params.yaml": {"data": params}}, "metrics": metrics}}


def changed(**sections):
    return {
        key: {**value, **sections.get(key, {})} if isinstance(value, dict) else value
        for key, value in BASE_PARAMS.items()
    }


def exp_show(*runs):
    head = entry("a" * 40, "main")
    head["experiments"] = [{"revs": list(runs)}] if runs else None
    return [{"rev": "workspace", "data": {}}, head]


def test_one_line_per_experiment_with_its_accuracies_and_changed_params():
    shown = exp_show(
        entry("b" * 40, "deeper", changed(model={"n_layers": 4}), val=0.845, test=0.8492),
        entry("c" * 40, "longer", changed(train={"epochs": 8}, pretrain={"epochs": 2}, model={"pooling": "cls"})),
        entry("d" * 40, "same"),
    )
    lines = experiments_table(experiments(shown)).splitlines()
    assert lines[0].split() == [
        "experiment",
        "validation",
        "test",
        "changed",
        "params",
        "(vs",
        "the",
        "commit",
        "it",
        "ran",
        "on)",
    ]
    assert lines[1].split() == ["deeper", "0.8450", "0.8492", "n_layers=4"]
    # epochs is in two sections, so both keep theirs; pooling is unambiguous alone
    assert lines[2].split() == ["longer", "0.8317", "0.8408", "pooling=cls", "pretrain.epochs=2", "train.epochs=8"]
    assert lines[3].split() == ["same", "0.8317", "0.8408", "(none)"]
    assert len(lines) == 4  # the commit they ran on is not a row of its own


def test_no_line_is_wider_than_120_columns_however_many_params_changed():
    many = changed(
        tokenizer={"max_len": 256},
        model={"n_layers": 6, "d_model": 256, "dropout": 0.25, "max_len": 256, "pooling": "attention"},
        train={
            "epochs": 12,
            "lr": 0.0003,
            "schedule": "cosine-with-a-very-long-name",
            "ensemble": 3,
            "bucket_by_length": True,
            "a_param_whose_name_alone_is_longer_than_a_line" + "_x" * 40: "on",
        },
    )
    name = "an-experiment-with-a-name-longer-than-the-column-allows"
    table = experiments_table(experiments(exp_show(entry("e" * 40, name, many))))
    lines = table.splitlines()
    assert max(map(len, lines)) <= 120, "\n" + table
    assert len(lines) > 2  # the params wrapped onto lines of their own, under their column
    assert lines[1].startswith("an-experiment-with-a-na…") and "bucket_by_length=true" in table
    listed = " ".join(line[lines[0].index("changed") :] for line in lines[1:])
    assert "schedule=cosine-with-a-very-long-name" in listed and "tokenizer.max_len=256 train.ensemble" not in listed


def test_no_experiments_is_said_in_one_line(monkeypatch, capsys):
    assert experiments_table(experiments(exp_show())) is None
    asked = []

    def dvc_json(*args):
        asked.append(args)
        return exp_show()

    monkeypatch.setattr("scratchformer.reporting.commands.dvc_json", dvc_json)
    for flags in ([], ["--all-commits"]):
        assert main(["report", "experiments", *flags]) == 0
        said = capsys.readouterr().out
        assert said.startswith(NO_EXPERIMENTS) and said.count("\n") == 1 and len(said) <= 121
    assert asked == [("exp", "show"), ("exp", "show", "-A")]


def test_the_command_prints_the_table(monkeypatch, capsys):
    shown = exp_show(entry("b" * 40, "deeper", changed(model={"n_layers": 4}), val=0.845, test=0.8492))
    monkeypatch.setattr("scratchformer.reporting.commands.dvc_json", lambda *args: shown)
    assert main(["report", "experiments"]) == 0
    assert capsys.readouterr().out == experiments_table(experiments(shown)) + "\n"


def test_a_run_without_metrics_shows_dashes():
    failed = entry("f" * 40, "failed", changed(model={"n_layers": 3}))
    failed["data"]["metrics"] = {}
    lines = experiments_table(experiments(exp_show(failed))).splitlines()
    assert lines[1].split() == ["failed", "-", "-", "n_layers=3"]


def test_short_keys_drop_the_section_only_when_no_other_key_ends_the_same():
    keys = {"model.max_len", "tokenizer.max_len", "model.n_layers", "seed"}
    assert short_keys(keys) == {
        "model.max_len": "model.max_len",
        "tokenizer.max_len": "tokenizer.max_len",
        "model.n_layers": "n_layers",
        "seed": "seed",
    }


def test_flat_params_gives_dotted_keys_and_lists_where_the_config_keeps_tuples():
    """A flat record compares equal to what params.yaml and `dvc exp show` give: lists, not tuples."""
    params = dataclasses.replace(Params(), data=dataclasses.replace(Params().data, split=(0.8, 0.1, 0.1)))
    flat = flat_params(params)
    assert flat["data.split"] == [0.8, 0.1, 0.1] and isinstance(flat["data.split"], list)
    assert flat["pretrain.corpora"] == [] and isinstance(flat["pretrain.corpora"], list)
    assert flat["model.d_model"] == params.model.d_model
    assert flat["seed"] == params.seed
    assert not any(isinstance(v, dict) for v in flat.values())
