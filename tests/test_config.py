import pytest

from scratchformer.config import ConfigError, ModelConfig, from_dict, load_params


def test_defaults_are_the_reference_run():
    params = from_dict({})
    m = params.model
    assert (m.d_model, m.n_heads, m.n_layers, m.ff_dim, m.dropout, m.max_len) == (64, 4, 2, 128, 0.1, 64)
    assert m.num_classes is None  # taken from the data
    t = params.train
    assert (t.epochs, t.batch_size, t.lr, t.weight_decay, t.grad_clip) == (4, 32, 2e-3, 0.02, 1.0)
    assert params.seed == 42
    assert params.probe.query_token == "差"


def test_params_yaml_of_the_repo_loads(tmp_path):
    from pathlib import Path

    repo_params = Path(__file__).parents[1] / "params.yaml"
    if not repo_params.exists():
        pytest.fail("params.yaml is missing from the repository root")
    params = load_params(repo_params)
    assert params == from_dict({**_yaml(repo_params)})


def _yaml(path):
    import yaml

    return yaml.safe_load(path.read_text())


def test_ints_are_accepted_for_floats():
    assert from_dict({"train": {"lr": 1}}).train.lr == 1.0


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"model": {"d_modle": 64}}, "unknown key model.d_modle"),
        ({"colour": 1}, "unknown key colour"),
        ({"model": {"d_model": 66, "n_heads": 4}}, "model.d_model=66 must be divisible by model.n_heads=4"),
        ({"model": {"dropout": 1.0}}, "model.dropout=1.0 must be in [0, 1)"),
        ({"model": {"dropout": -0.1}}, "model.dropout=-0.1"),
        ({"model": {"n_layers": 0}}, "model.n_layers=0 must be >= 1"),
        ({"model": {"pooling": "max"}}, "model.pooling='max' must be one of mean, cls, attention"),
        ({"model": {"positional": "alibi"}}, "model.positional='alibi' must be one of"),
        ({"model": {"norm": "sandwich"}}, "model.norm='sandwich' must be one of pre, post"),
        ({"model": {"max_len": 100000}}, "model.max_len=100000 is above the positional table"),
        ({"tokenizer": {"max_len": 128}}, "tokenizer.max_len=128 exceeds model.max_len=64"),
        ({"model": {"n_heads": "4"}}, "model.n_heads='4' must be int, got str"),
        ({"model": {"d_model": 64.0}}, "model.d_model=64.0 must be int, got float"),
        ({"seed": True}, "seed=True must be int, got bool"),
        ({"train": {"token_dropout": 1.0}}, "train.token_dropout=1.0 must be in [0, 1)"),
        ({"train": {"ema_decay": -0.1}}, "train.ema_decay=-0.1 must be in [0, 1)"),
        ({"train": {"ensemble": 0}}, "train.ensemble=0 must be >= 1"),
        ({"model": {"ngram_max": 0}}, "model.ngram_max=0 must be >= 1"),
        ({"model": {"ngram_buckets": 0}}, "model.ngram_buckets=0 must be >= 1"),
        ({"train": {"lr": "fast"}}, "train.lr='fast' must be float, got str"),
        ({"train": {"device": "tpu"}}, "train.device='tpu'"),
        ({"model": 3}, "model must be a mapping"),
        ({"probe": {"head": 4}}, "probe.head=4 is not a head of a 4-head model"),
        ({"probe": {"layer": 2}}, "probe.layer=2 is not a layer of a 2-layer model"),
    ],
)
def test_rejections_name_the_key_and_value(raw, message):
    with pytest.raises(ConfigError) as err:
        from_dict(raw)
    assert message in str(err.value)


def test_load_params_names_the_file(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("model:\n  n_heads: 5\n")
    with pytest.raises(ConfigError, match=r"params\.yaml: model\.d_model=64 must be divisible"):
        load_params(path)
    with pytest.raises(ConfigError, match="no such params file"):
        load_params(tmp_path / "missing.yaml")


def test_configs_are_frozen():
    with pytest.raises(AttributeError):
        ModelConfig().d_model = 128
