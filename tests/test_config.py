from pathlib import Path

import pytest
import yaml

from scratchformer.config import ConfigError, ModelConfig, from_dict, load_params

ROOT = Path(__file__).parents[1]


def test_defaults_are_the_default_run_and_the_reference_recipe_the_first_configuration():
    params = from_dict({})
    m = params.model
    assert (m.d_model, m.n_heads, m.n_layers, m.ff_dim, m.dropout, m.max_len) == (64, 4, 2, 128, 0.1, 128)
    assert (m.ngram_max, m.wide_ngrams, params.tokenizer.max_len, params.train.spans) == (3, 3, 128, 0.5)
    assert m.num_classes is None  # taken from the data
    t = params.train
    assert (t.epochs, t.batch_size, t.lr, t.weight_decay, t.grad_clip) == (4, 32, 2e-3, 0.02, 1.0)
    assert params.seed == 42
    assert (params.nb.ngrams, params.nb.scaling, params.nb.c, params.nb.role) == (3, "tfidf", 10.0, "member")
    assert params.nb.special_tokens is False  # the member reads a review's text, not its [CLS] and [SEP]
    assert params.probe.query_token == "差"
    nested: dict = {}
    for key, value in yaml.safe_load((ROOT / "recipes" / "reference.yaml").read_text()).items():
        section, name = key.split(".")
        nested.setdefault(section, {})[name] = value
    first = from_dict(nested)  # the configuration that scored 0.8317 / 0.8408
    assert (first.tokenizer.max_len, first.model.max_len, first.model.ngram_max) == (64, 64, 1)
    assert (first.model.wide_ngrams, first.train.spans, first.nb.ngrams) == (0, 0.0, 0)


def test_params_yaml_holds_the_defaults_that_code_falls_back_on(tmp_path):
    # report.py and the checkpoint loader build Params() / ModelConfig() when a key is
    # absent: that must be the configuration params.yaml actually runs. The committed
    # params.yaml, not the workspace's: `dvc exp run` leaves an experiment's params there.
    import dataclasses

    from fixtures import committed

    from scratchformer.config import Params

    params = load_params(committed("params.yaml", tmp_path))
    # The one exception: data.label_names names ChnSentiCorp's 0/1 labels; other corpora differ.
    assert params.data.label_names == {0: "negative", 1: "positive"}
    assert dataclasses.replace(params, data=dataclasses.replace(params.data, label_names=None)) == Params()


def test_ints_are_accepted_for_floats():
    assert from_dict({"train": {"lr": 1}}).train.lr == 1.0


def test_yaml_infinity_is_rejected_by_name(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("train:\n  lr: .inf\n")
    with pytest.raises(ConfigError, match=r"train\.lr=inf must be a finite number"):
        load_params(path)


@pytest.mark.parametrize("device", ["auto", "cpu", "mps", "cuda", "cuda:0", "cuda:12"])
def test_device_names_that_are_accepted(device):
    assert from_dict({"train": {"device": device}}).train.device == device


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
        ({"tokenizer": {"max_len": 256}, "nb": {"ngrams": 0}}, "tokenizer.max_len=256 exceeds model.max_len=128"),
        (
            {"tokenizer": {"max_len": 256}, "nb": {"role": "base"}},
            "(a longer cut is read past it only by an n-gram member: nb.ngrams > 0, nb.role member)",
        ),
        ({"nb": {"fit_len": 64}}, "nb.fit_len=64 is shorter than tokenizer.max_len=128, the cut the n-gram"),
        ({"nb": {"fit_len": 2}}, "nb.fit_len=2 must be >= 3 or null"),
        ({"model": {"n_heads": "4"}}, "model.n_heads='4' must be int, got str"),
        ({"model": {"d_model": 64.0}}, "model.d_model=64.0 must be int, got float"),
        ({"seed": True}, "seed=True must be int, got bool"),
        ({"train": {"token_dropout": 1.0}}, "train.token_dropout=1.0 must be in [0, 1)"),
        ({"train": {"ema_decay": -0.1}}, "train.ema_decay=-0.1 must be in [0, 1)"),
        ({"train": {"ensemble": 0}}, "train.ensemble=0 must be >= 1"),
        ({"train": {"teachers": -1}}, "train.teachers=-1 must be >= 0"),
        ({"train": {"distill": 0.0}}, "train.distill=0.0 must be in (0, 1]"),
        (
            {"train": {"teachers": 2}},
            "train.ensemble=2 must be 1 with train.teachers=2: the teachers teach one network",
        ),
        ({"train": {"teachers": 1, "ensemble": 1, "nproc": 2, "sparse_ngrams": False}}, "train.nproc=2 must be 1 with"),
        (
            {"train": {"teachers": 1, "ensemble": 1}, "nb": {"ngrams": 3, "role": "teacher", "distill": 0.5}},
            "train.teachers=1 and nb.distill=0.5 are two teachers",
        ),
        ({"train": {"adversarial": 1.0, "rdrop": 0.5}}, "train.adversarial=1.0 takes no train.rdrop (it is 0.5)"),
        ({"train": {"gce": 0.7, "label_smoothing": 0.1}}, "train.gce=0.7 scores hard labels: it takes no train.label"),
        (
            {"train": {"gce": 0.7, "teachers": 1, "ensemble": 1}},
            "train.gce=0.7 scores hard labels: it takes no train.label_smoothing (it is 0.0) and no train.teachers (it",
        ),
        (
            {"train": {"gce": 0.7}, "nb": {"ngrams": 3, "role": "teacher", "distill": 0.5}},
            "train.gce=0.7 scores hard labels: it takes no teacher (nb.distill is 0.5)",
        ),
        ({"model": {"ngram_max": 0}}, "model.ngram_max=0 must be >= 1"),
        ({"model": {"ngram_buckets": 0}}, "model.ngram_buckets=0 must be >= 1"),
        ({"model": {"ngram_buckets": 10**11}}, "model.ngram_buckets=100000000000 is above the limit 16777216"),
        ({"model": {"ngram_buckets": 1e11}}, "model.ngram_buckets=100000000000.0 must be int, got float"),
        ({"model": {"ngram_buckets": 2**23, "d_model": 256}}, "x model.d_model=256 is above the limit 268435456"),
        ({"nb": {"buckets": 2**30}}, "nb.buckets=1073741824 must be in 1..16777216"),
        ({"model": {"ngram_init": -0.5}}, "model.ngram_init=-0.5 must be >= 0"),
        ({"train": {"lr": "fast"}}, "train.lr='fast' must be float, got str"),
        ({"train": {"device": "tpu"}}, "train.device='tpu'"),
        ({"train": {"device": "cudax"}}, "train.device='cudax' must be auto, cpu, mps, cuda or cuda:N"),
        ({"train": {"device": "cuda:"}}, "train.device='cuda:'"),
        ({"train": {"device": "cpu "}}, "train.device='cpu '"),
        ({"train": {"lr": float("inf")}}, "train.lr=inf must be a finite number"),
        ({"train": {"weight_decay": float("nan")}}, "train.weight_decay=nan must be a finite number"),
        ({"acceptance": {"padding_leak": 0}}, "acceptance.padding_leak=0.0 must be a positive number"),
        ({"acceptance": {"causal_mask_leak": -1e-6}}, "acceptance.causal_mask_leak=-1e-06 must be a positive"),
        ({"acceptance": {"validation_accuracy": 1.5}}, "acceptance.validation_accuracy=1.5 must be <= 1"),
        ({"acceptance": {"attention_max_abs_err": "small"}}, "acceptance.attention_max_abs_err='small' must be float"),
        ({"train": {"select": "f1"}}, "train.select='f1' must be one of val_loss, val_accuracy"),
        ({"model": 3}, "model must be a mapping"),
        ({"errors": {"n": 0}}, "errors.n=0 must be in 1..500"),
        ({"errors": {"n": 10000}}, "errors.n=10000 must be in 1..500"),
        ({"errors": {"highlight": 0}}, "errors.highlight=0 must be in 1..20"),
        ({"errors": {"min_count": 0}}, "errors.min_count=0 must be >= 1"),
        ({"errors": {"top": 5}}, "unknown key errors.top"),
        ({"probe": {"head": 4}}, "probe.head=4 is not a head of a 4-head model"),
        ({"probe": {"layer": 2}}, "probe.layer=2 is not a layer of a 2-layer model"),
    ],
)
def test_rejections_name_the_key_and_value(raw, message):
    with pytest.raises(ConfigError) as err:
        from_dict(raw)
    assert message in str(err.value)


@pytest.mark.parametrize("written", ["2e-3", "1e-3", "1.0e-3", "2E-3", "+2e-3"])
def test_exponents_read_as_yaml_1_2_numbers_as_dvc_reads_them(tmp_path, written):
    """PyYAML's YAML 1.1 reads ``2e-3`` as a string; DVC (YAML 1.2) as a number. Both agree now."""
    from dvc.utils.serialize import load_yaml

    path = tmp_path / "params.yaml"
    path.write_text(f"train:\n  lr: {written}\n")
    lr = load_params(path).train.lr
    assert lr == float(written) and lr == load_yaml(path)["train"]["lr"]


def test_yaml_1_2_floats_leave_ints_and_strings_alone(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("seed: 7\ntrain:\n  epochs: 3\nprobe:\n  query_token: 2e\n")
    params = load_params(path)
    assert (params.seed, params.train.epochs, params.probe.query_token) == (7, 3, "2e")


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


ONE = {"ensemble": 1}  # one model: the seed alone is used


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"seed": -1, "train": ONE}, "seed=-1 must be in 0..4294967295: numpy and torch take seeds in [0, 2**32)"),
        ({"seed": 2**32, "train": ONE}, "seed=4294967296 must be in 0..4294967295"),
        ({"seed": 2**32 - 2, "train": {"ensemble": 3}}, "train.ensemble=3 also uses seed+1..seed+2"),
        ({"seed": 2**32 - 2, "train": {"ensemble": 1, "teachers": 2}}, "train.teachers=2 also uses seed+1..seed+2"),
    ],
)
def test_seeds_numpy_and_torch_refuse_are_refused_at_load(raw, message):
    with pytest.raises(ConfigError) as err:
        from_dict(raw)
    assert message in str(err.value)
    assert from_dict({"seed": 0}).seed == 0 and from_dict({"seed": 2**32 - 1, "train": ONE}).seed == 2**32 - 1
    assert from_dict({"seed": 2**32 - 2}).seed == 2**32 - 2  # the default's two members: seeds 2**32 - 2 and - 1


@pytest.mark.parametrize("path", ["./my_corpus", "corpus/", "/no/such/folder", "~/no_such_corpus", "data/corpora/x"])
@pytest.mark.parametrize("key", ["data.source", "tokenizer.name"])
def test_a_missing_folder_is_not_taken_for_a_hub_id(tmp_path, monkeypatch, path, key):
    monkeypatch.chdir(tmp_path)
    section, name = key.split(".")
    with pytest.raises(ConfigError, match=rf"^{key}: no folder {path} \(relative to .*\); correct the path"):
        from_dict({section: {name: path}})
    (tmp_path / "corpus").mkdir()
    assert from_dict({section: {name: "corpus/"}})  # a folder that exists
    assert from_dict({section: {name: "owner/name"}})  # hub ids: owner/name or name
    assert from_dict({section: {name: "corpus_typo"}})


def test_data_encoding_is_checked():
    assert from_dict({"data": {"encoding": "gb18030"}}).data.encoding == "gb18030"
    with pytest.raises(ConfigError, match=r"data\.encoding='gbx' is not an encoding Python knows"):
        from_dict({"data": {"encoding": "gbx"}})
    with pytest.raises(ConfigError, match=r"data\.encoding='utf-16' is not ASCII-compatible"):
        from_dict({"data": {"encoding": "utf-16"}})


def test_select_reads_sections_and_dotted_keys_and_refuses_others():
    params = from_dict({"train": {"lr": 0.5}})
    assert params.select(["seed", "train.lr", "probe"]) == {"seed": 42, "train.lr": 0.5, "probe": params.probe}
    for wrong in ("train.lrr", "colour", "seed.x"):
        with pytest.raises(KeyError, match=r"not a key of params\.yaml"):
            params.select([wrong])


def test_a_training_stage_resume_key_digests_exactly_the_params_it_declares():
    from scratchformer.train.resume import resume_key
    from stages import pretrain, train

    def digest(stage, **sections):
        params = from_dict({name: dict(values) for name, values in sections.items()})
        return resume_key(params.select(stage.PARAMS), [], [])["data"]

    for stage, read, unread in (
        (train, {"train": {"lr": 0.5}}, {"pretrain": {"lr": 0.5}}),
        (train, {"tokenizer": {"max_len": 32}}, {"tokenizer": {"name": "vocab"}}),
        (pretrain, {"pretrain": {"grad_clip": 0.5}}, {"train": {"lr": 0.5}}),
        (pretrain, {"train": {"log_every": 4}}, {"errors": {"n": 3}}),
    ):
        assert digest(stage, **read) != digest(stage), read
        assert digest(stage, **unread) == digest(stage), unread


@pytest.mark.parametrize(
    ("nb", "message"),
    [
        ({"ngrams": 0, "distill": 0.5}, r"nb\.distill=0\.5 needs a teacher: set nb\.ngrams > 0"),
        ({"ngrams": 3, "role": "teacher"}, r"nb\.role='teacher' teacher needs nb\.distill > 0"),
        ({"ngrams": 3, "distill": 1.5}, r"nb\.distill=1\.5 must be in \[0, 1\]"),
        ({"ngrams": 3, "distill": 0.5, "distill_folds": 5}, r"nb\.distill_folds=5 needs nb\.role teacher or base"),
        ({"ngrams": 3, "role": "base", "distill": 0.5}, r"nb\.role='base' base takes nb\.distill 0"),
        ({"ngrams": 3, "role": "teacher", "distill": 0.5, "distill_folds": 0}, r"nb\.distill_folds=0 must"),
    ],
)
def test_a_teacher_without_a_lesson_or_a_lesson_without_a_teacher_is_refused(nb, message):
    with pytest.raises(ConfigError, match=message):
        from_dict({"nb": nb})
    assert from_dict({"nb": {"ngrams": 3, "role": "teacher", "distill": 0.5}}).nb.distill == 0.5
    assert from_dict({"nb": {"ngrams": 3, "role": "base", "distill_folds": 5}}).nb.distill_folds == 5


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"model": {"ngram_max": 3}, "train": {"sparse_ngrams": True, "nproc": 2}},
            r"train\.sparse_ngrams=True needs train\.nproc 1 \(it is 2\)",
        ),
    ],
)
def test_sparse_ngram_tables_need_one_process_and_mean_nothing_without_a_table(raw, message):
    with pytest.raises(ConfigError, match=message):
        from_dict(raw)
    assert from_dict({"model": {"ngram_max": 3}, "train": {"sparse_ngrams": True}}).train.sparse_ngrams
    # The default trains its tables sparse; a model without tables (`-S model.ngram_max=1 -S
    # model.wide_ngrams=0`, as the reference recipe) is still a valid run (tests/train/test_lazy.py
    # checks that AdamW alone trains it).
    without = from_dict({"model": {"ngram_max": 1, "wide_ngrams": 0}, "train": {"sparse_ngrams": True}})
    assert without.train.sparse_ngrams


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"model": {"ngram_max": 1}, "train": {"ngram_decay": 0.1}},
            r"train\.ngram_decay=0\.1 needs an n-gram table: set model\.ngram_max",
        ),
        ({"model": {"ngram_max": 3}, "train": {"ngram_decay": -0.1}}, r"train\.ngram_decay=-0\.1 must be >= 0"),
        (
            {"model": {"ngram_max": 1, "wide_ngrams": 0}, "train": {"ngram_lr": 2.0}},
            r"train\.ngram_lr=2\.0 needs an n-gram table: set model\.ngram_max",
        ),
        ({"model": {"ngram_max": 3}, "train": {"ngram_lr": 0.0}}, r"train\.ngram_lr=0\.0 must be > 0"),
    ],
)
def test_ngram_decay_and_lr_need_an_ngram_table(raw, message):
    with pytest.raises(ConfigError, match=message):
        from_dict(raw)


def test_the_ngram_lr_default_needs_no_table():
    assert from_dict({"model": {"ngram_max": 1, "wide_ngrams": 0}, "train": {"ngram_lr": 1.0}}).train.ngram_lr == 1


def test_a_sparse_ngram_table_takes_weight_decay():  # lazy AdamW pays each row's decay when it is next used
    sparse = {"model": {"ngram_max": 3}, "train": {"ngram_decay": 0.1, "sparse_ngrams": True}}
    assert from_dict(sparse).train.ngram_decay == 0.1
    assert from_dict({"model": {"ngram_max": 3}, "train": {"ngram_decay": 0.1}}).train.ngram_decay == 0.1


def test_tokenizer_lowercase_is_true_false_or_null():
    assert from_dict({"tokenizer": {"lowercase": True}}).tokenizer.lowercase is True
    assert from_dict({}).tokenizer.lowercase is None  # the tokenizer's own setting
    with pytest.raises(ConfigError, match=r"tokenizer\.lowercase='yes' must be bool"):
        from_dict({"tokenizer": {"lowercase": "yes"}})
