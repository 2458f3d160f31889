"""The exported model folder: safetensors + config.json + tokenizer + card, loaded without pickle."""

import json
import pickle

import pytest
import safetensors.torch
import torch
import yaml

from scratchformer.analysis.predict import Predictor
from scratchformer.cli import main
from scratchformer.config import from_dict
from scratchformer.data.tokenization import load_tokenizer
from scratchformer.model.checkpoint import CorruptFileError, load_checkpoint, save_checkpoint
from scratchformer.model.classifier import Ensemble
from scratchformer.model.export import load_folder
from scratchformer.model.naive_bayes import NBLogistic
from scratchformer.render.model_card import model_card
from stages import export as export_stage

TEXTS = ["房间很好，服务很好。", "房间太脏，服务很差。", "房间很好，服务很差。", "服务很差，" * 10]
EVAL = {
    "validation": {"accuracy": 0.875, "f1": 0.87},
    "test": {"accuracy": 0.8125, "f1": 0.81},
    "acceptance": {"passed": True},
}


def export(model_path, tokenizer, out, tmp_path):
    """The export stage's run on ``model_path``, with small metrics files of its own."""
    (tmp_path / "eval.json").write_text(json.dumps(EVAL))
    (tmp_path / "data.json").write_text(json.dumps({"data": {"rows": {"train": 240, "validation": 60, "test": 60}}}))
    export_stage.run(from_dict({}), model_path, tokenizer, tmp_path / "eval.json", tmp_path / "data.json", out)
    return out


@pytest.fixture(scope="module")
def folder(trained, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("export")
    return export(*trained, tmp / "scratchformer", tmp)


def token_ids(tokenizer, texts):
    return load_tokenizer(str(tokenizer))(texts, padding=True, truncation=True, max_length=24, return_tensors="pt")[
        "input_ids"
    ]


def test_the_folder_predicts_exactly_what_the_checkpoint_does(trained, folder):
    model_path, tokenizer = trained
    from_folder = Predictor.from_pretrained(folder)
    from_checkpoint = Predictor(model_path, tokenizer)
    assert [p.as_dict() for p in from_folder.predict(TEXTS)] == [p.as_dict() for p in from_checkpoint.predict(TEXTS)]
    assert from_folder.max_len == 24 and from_folder.class_names == ["negative", "positive"]
    ids = token_ids(tokenizer, TEXTS)
    with torch.no_grad():
        assert torch.equal(from_folder.model(ids), from_checkpoint.model(ids))  # bit for bit, not to 4 decimals
    assert sorted(from_folder.model.state_dict()) == sorted(from_checkpoint.model.state_dict())


def test_the_folder_holds_safetensors_json_and_text_only(folder, monkeypatch):
    names = sorted(p.name for p in folder.iterdir())
    assert {"model.safetensors", "config.json", "README.md", "tokenizer_config.json", "tokenizer.json"} <= set(names)
    assert all(p.is_file() for p in folder.iterdir())
    for path in folder.iterdir():
        data = path.read_bytes()
        assert not data.startswith((b"PK", b"\x80")), f"{path.name} is a zip or a pickle"  # torch.save / pickle
        if path.suffix == ".json":
            json.loads(data)
        elif path.suffix == ".safetensors":
            safetensors.torch.load(data)
        else:
            assert path.suffix in (".txt", ".md"), path.name
            data.decode("utf-8")

    def refuse(*args, **kwargs):
        raise AssertionError("loading the folder unpickled something")

    monkeypatch.setattr(torch, "load", refuse)
    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    assert Predictor.from_pretrained(folder).predict(["服务很差"])[0].label == "negative"


def test_config_and_card_say_what_the_model_is(folder):
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    assert config["format"] == "scratchformer-classifier" and config["format_version"] == 1
    assert config["class_names"] == ["negative", "positive"] and config["tokenizer_max_len"] == 24
    assert config["members"] == 1 and config["nb"] is None and config["model"]["d_model"] == 32
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert "| validation | 0.8750 | 0.8700 |" in card and "| test | 0.8125 | 0.8100 |" in card
    assert "| train rows | 240 |" in card and "MIT" in card and "Intended use and limits" in card
    assert 'Predictor.from_pretrained("models/classifier")' in card
    assert str(folder) not in card  # no path of the machine that exported it
    assert card.startswith("---\n")  # the Hub's metadata block first
    header = yaml.safe_load(card.split("---\n")[1])
    assert header["language"] == "zh" and header["license"] == "mit"
    assert header["pipeline_tag"] == "text-classification" and header["metrics"] == ["accuracy", "f1"]
    assert header["datasets"] == ["lansinuote/ChnSentiCorp"]  # data.source, a hub id
    assert "n-gram" not in card.split("## Intended use and limits")[1]  # no NB member, no teacher: nothing to say


def test_the_card_says_what_an_nb_member_or_teacher_contributed(tmp_path):
    config = {"class_names": ["negative", "positive"], "tokenizer_max_len": 24, "vocab_size": 30, "members": 2}
    config["model"] = {"d_model": 32, "n_heads": 2, "n_layers": 1, "ff_dim": 64, "norm": "pre"}
    config["model"] |= {"positional": "sinusoidal", "pooling": "mean"}
    parts = {"accuracy": 0.93, "f1": 0.93, "nb": {"accuracy": 0.928}, "transformers": {"accuracy": 0.918}}
    evaluation = {"validation": parts, "test": {"accuracy": 0.94, "f1": 0.94}}
    blend = model_card({**config, "nb": {"max_n": 3, "buckets": 64}}, 10, from_dict({}), evaluation, {})
    assert "Half of every answer is the n-gram member's" in blend
    assert "the n-gram model alone scores 0.9280, the Transformer part alone 0.9180, the whole 0.9300" in blend
    assert "It reads at most 24 tokens; the rest" in blend  # networks and member read the same cut
    text = model_card(
        {**config, "nb": {"max_n": 3, "buckets": 64, "scaling": "tfidf", "skip": [1, 2]}},
        10,
        from_dict({}),
        evaluation,
        {},
    )
    kind = "a TF-IDF-weighted logistic regression over token 1..3-grams of the text alone (the tokenizer's [CLS] and"
    assert text.count(kind) == 2  # the architecture line and the member's share say the same member
    assert "Naive-Bayes-weighted" not in text and "Naive-Bayes-weighted" in blend  # nb.scaling's default: nb
    longer = {**config, "model": config["model"] | {"max_len": 16}, "nb": {"max_n": 3, "buckets": 64}}
    card = model_card(longer, 10, from_dict({}), evaluation, {})
    assert "It reads at most 24 tokens (its networks the first 16, its n-gram member all); the rest" in card
    based = model_card({**config, "nb": {"max_n": 3, "buckets": 64, "role": "base"}}, 10, from_dict({}), evaluation, {})
    assert "Every answer starts from an n-gram model's" in based and "Half of every answer" not in based
    assert "the networks alone, without it 0.9180" in based
    taught = from_dict({"nb": {"ngrams": 3, "role": "teacher", "distill": 0.5}})
    alone = model_card({**config, "members": 1, "nb": None}, 10, taught, {"validation": parts}, {})
    assert "taught it during training (nb.distill 0.5" in alone and "Half of every answer" not in alone
    local = model_card({**config, "nb": None}, 10, from_dict({"data": {"source": str(tmp_path)}}), {}, {})
    assert "datasets" not in yaml.safe_load(local.split("---\n")[1])  # a local folder names no dataset


def test_two_exports_write_the_same_bytes(trained, folder, tmp_path):
    again = export(*trained, tmp_path / "elsewhere" / "scratchformer", tmp_path)
    files = sorted(p.name for p in folder.iterdir())
    assert sorted(p.name for p in again.iterdir()) == files
    for name in files:
        assert (again / name).read_bytes() == (folder / name).read_bytes(), name


@pytest.mark.parametrize("role", ["member", "base"])
def test_an_ensemble_with_an_nb_model_round_trips(trained, tmp_path, role):
    """A member (half the vote) or a base (added to each network's logits): the folder says which."""
    model_path, tokenizer = trained
    single, info = load_checkpoint(model_path)
    other, _ = load_checkpoint(model_path)
    torch.manual_seed(0)
    nb = NBLogistic(2, 64, single.embed.num_embeddings, 2, single.pad_id)
    with torch.no_grad():
        for p in [*other.parameters(), *nb.parameters(), nb.ratio]:
            p.add_(0.3 * torch.randn_like(p))
    save_checkpoint(tmp_path / "ensemble.pt", Ensemble([single, other], nb, role), **info)
    out = export(tmp_path / "ensemble.pt", tokenizer, tmp_path / "scratchformer", tmp_path)
    config = json.loads((out / "config.json").read_text())
    said = {"role": "base"} if role == "base" else {}  # no role: a member, as in folders written before roles
    assert config["members"] == 2 and config["nb"] == {"max_n": 2, "buckets": 64, "scaling": "nb", **said}
    loaded = Predictor.from_pretrained(out)
    assert isinstance(loaded.model, Ensemble) and len(loaded.model.members) == 2 and loaded.model.nb is not None
    assert loaded.model.nb_role == role
    reference = Predictor(tmp_path / "ensemble.pt", tokenizer)
    ids = token_ids(tokenizer, TEXTS)
    with torch.no_grad():
        assert torch.equal(loaded.model(ids), reference.model(ids))
        assert (single(ids) - nb(ids)).abs().max() > 0.01  # the NB member counts: it is not a copy of another
        other_role = Ensemble([single, other], nb, "member" if role == "base" else "base")
        assert (loaded.model(ids) - other_role(ids)).abs().max() > 0.01  # and the role is what was saved
    assert [p.as_dict() for p in loaded.predict(TEXTS)] == [p.as_dict() for p in reference.predict(TEXTS)]


def test_predict_takes_the_folder_and_its_tokenizer(trained, folder, capsys):
    model_path, tokenizer = trained
    assert main(["predict", "--json", "--model", str(model_path), "--tokenizer", str(tokenizer), *TEXTS]) == 0
    from_checkpoint = capsys.readouterr().out
    assert main(["predict", "--json", "--model", str(folder), *TEXTS]) == 0
    assert capsys.readouterr().out == from_checkpoint


def damage(folder, name, how):
    path = folder / name
    if how == "missing":
        path.unlink()
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif how == "garbage":
        path.write_bytes(b"not a model\n" * 10)
    elif how == "a key short":  # well-formed, but not what the other file says
        if name == "config.json":
            config = json.loads(path.read_text())
            del config["vocab_size"]
            path.write_text(json.dumps(config))
        else:
            tensors = safetensors.torch.load_file(path)
            del tensors["head.weight"]
            safetensors.torch.save_file(tensors, path)
    elif how == "other shape":
        config = json.loads(path.read_text())
        config["model"]["d_model"] = 64
        path.write_text(json.dumps(config))
    return path


@pytest.mark.parametrize(
    ("name", "how"),
    [
        ("config.json", "missing"),
        ("config.json", "empty"),
        ("config.json", "truncated"),
        ("config.json", "garbage"),
        ("config.json", "a key short"),
        ("config.json", "other shape"),
        ("model.safetensors", "missing"),
        ("model.safetensors", "empty"),
        ("model.safetensors", "truncated"),
        ("model.safetensors", "garbage"),
        ("model.safetensors", "a key short"),
        ("tokenizer_config.json", "missing"),
    ],
)
@pytest.mark.filterwarnings("error")
def test_a_damaged_folder_is_one_line_naming_the_file(folder, tmp_path, capsys, name, how):
    import shutil

    broken = tmp_path / "scratchformer"
    shutil.copytree(folder, broken)
    path = damage(broken, name, how)
    with pytest.raises(CorruptFileError) as caught:
        Predictor.from_pretrained(broken)
    message = str(caught.value)
    assert message.startswith(str(path if how != "other shape" else broken / "model.safetensors")), message
    assert "\n" not in message and "`dvc repro`" in message
    assert main(["predict", "--model", str(broken), "好"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and err.startswith(f"scratchformer predict: {broken}/")


def test_no_folder_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="run `dvc repro` first"):
        Predictor.from_pretrained(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="no model folder"):
        load_folder(tmp_path / "nowhere")


def test_a_checkpoint_given_as_a_folder_says_how_to_load_it(trained):
    model_path, _ = trained
    with pytest.raises(ValueError, match="is a checkpoint, not a model folder"):
        Predictor.from_pretrained(model_path)
    with pytest.raises(ValueError, match="give the tokenizer folder too"):
        Predictor(model_path)


HOSTILE_NAMES = ["neg|ative", "<script>alert(1)</script>", "**b** [x](javascript:y) $$ ~~s~~ &amp;", "a\n---\nb: 1"]
SMALL = {"tokenizer_max_len": 24, "vocab_size": 30, "members": 1, "nb": None}
SMALL["model"] = {"d_model": 32, "n_heads": 2, "n_layers": 1, "ff_dim": 64, "norm": "pre"}
SMALL["model"] |= {"positional": "sinusoidal", "pooling": "mean"}


def front_matter(card: str) -> tuple[dict, str]:
    """The card's YAML block, parsed, and the rest: the block ends at the first ``---`` line after the first."""
    lines = card.split("\n")
    assert lines[0] == "---"
    end = lines.index("---", 1)
    return yaml.safe_load("\n".join(lines[1:end])), "\n".join(lines[end + 1 :])


def test_the_card_shows_the_answers_it_is_given_escaped():
    answers = [("服务很差", "negative", 0.9123), ("<b>好|坏</b>", "neg|ative", 0.5)]
    card = model_card({**SMALL, "class_names": ["negative", "positive"]}, 10, from_dict({}), EVAL, {}, answers)
    assert "| 服务很差 | negative (0.912) |" in card
    assert "| \\<b\\>好\\|坏\\</b\\> | neg\\|ative (0.500) |" in card
    assert "(`scratchformer predict --model models/classifier 服务很差 <b>好|坏</b>`)" in card  # verbatim, as code
    assert "answer (probability)" not in model_card({**SMALL, "class_names": ["a", "b"]}, 10, from_dict({}), EVAL, {})


def test_the_card_escapes_class_names_and_param_values(tmp_path):
    source = tmp_path / "we<ird>|*data*"
    source.mkdir()
    params = from_dict({"data": {"source": str(source)}, "tokenizer": {"name": "x`y"}})
    card = model_card({**SMALL, "class_names": HOSTILE_NAMES}, 10, params, EVAL, {})
    header, body = front_matter(card)
    assert header["language"] == "zh" and header["model-index"][0]["results"][0]["dataset"]["type"] == "local"
    assert "<script>" not in card and "\\<script\\>" in body  # shown as text, never as HTML
    assert "[x](javascript" not in body and "\\*\\*b\\*\\*" in body and "\\$\\$" in body and "\\&amp;" in body
    assert "neg\\|ative" in body and "|ative" not in body.replace("\\|ative", "")  # no cell ends inside a name
    assert "\n---\n" not in body and "\nb: 1" not in body  # the name's line breaks are spaces, nothing ends a block
    rows = [line for line in body.splitlines() if line.startswith("| classes |")]
    assert len(rows) == 1 and rows[0].count(" | ") == 1 and rows[0].replace("\\|", "").count("|") == 3
    assert "``x`y``" in body  # the tokenizer's name, verbatim in a code span its backtick cannot close
    assert str(tmp_path) not in card and "a local folder (we\\<ird\\>\\|\\*data\\*)" in body


def test_the_card_front_matter_holds_the_hubs_model_index(folder):
    header, _ = front_matter((folder / "README.md").read_text(encoding="utf-8"))
    (index,) = header["model-index"]
    assert index["name"] == "scratchformer"
    validation, test = index["results"]
    assert validation["task"]["type"] == "text-classification"
    assert validation["dataset"] == {
        "name": "lansinuote/ChnSentiCorp",
        "type": "lansinuote/ChnSentiCorp",
        "split": "validation",
    }
    assert validation["metrics"][0] == {"type": "accuracy", "value": 0.875, "name": "validation accuracy"}
    assert validation["metrics"][1]["type"] == "f1" and validation["metrics"][1]["value"] == 0.87
    assert test["dataset"]["split"] == "test" and test["metrics"][0]["value"] == 0.8125
    hub = model_card({**SMALL, "class_names": ["a", "b"]}, 10, from_dict({"data": {"source": "own/er: x #y"}}), {}, {})
    header, _ = front_matter(hub)
    assert header["datasets"] == ["own/er: x #y"] and "model-index" not in header  # nothing evaluated: no index


def test_the_card_says_which_data_revision_it_can_know(tmp_path):
    names = {**SMALL, "class_names": ["a", "b"]}
    local = model_card(names, 10, from_dict({"data": {"source": str(tmp_path)}}), EVAL, {})
    assert "the newest" not in local and "| revision | none: a local folder has no hub revision" in local
    assert "the newest when the pipeline ran" in model_card(names, 10, from_dict({}), EVAL, {})
    pinned = from_dict({"data": {"revision": "0123abc"}})
    assert "| revision | 0123abc |" in model_card(names, 10, pinned, EVAL, {})
