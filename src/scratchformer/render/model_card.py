"""The model card: the README.md of the exported model folder (:mod:`scratchformer.model.export`).

A pure function of the folder's config.json, the params and the metrics: no dates,
host names or absolute paths, so a rerun writes the same bytes. What came from the data
or the params (class names, param values, the data source) is escaped wherever it lands:
inert Markdown in the text and tables (:func:`~scratchformer.render.markdown.plain`), a
YAML string in the front matter (``yaml.safe_dump`` quotes it).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import yaml

from scratchformer.config import Params
from scratchformer.config.checks import looks_like_path
from scratchformer.render.markdown import code, plain

FOLDER = "models/classifier"  # where the pipeline writes the folder; the card names no other path
NB_KINDS = {"nb": "Naive-Bayes-weighted", "tfidf": "TF-IDF-weighted"}  # the n-gram member's nb.scaling, in words


def _value(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, float):
        return f"{value:g}"
    return plain(value)


def _table(rows: list[tuple[str, Any]], head: tuple[str, str] = ("", "")) -> str:
    lines = [f"| {head[0]} | {head[1]} |", "|---|---|"]
    lines += [f"| {key} | {_value(value)} |" for key, value in rows]
    return "\n".join(lines)


def _architecture(config: dict) -> str:
    model = config["model"]
    one = (
        f"a {model['n_layers']}-layer {model['norm']}-LN Transformer encoder "
        f"(d_model {model['d_model']}, {model['n_heads']} heads, feed-forward {model['ff_dim']}, "
        f"{model['positional']} positions, {model['pooling']} pooling)"
    )
    k = config["members"]
    text = one if k == 1 else f"an ensemble of {k} such encoders, trained from seeds seed..seed+{k - 1}: {one}"
    if config["nb"] is not None:
        text += f"; with {_nb_kind(config['nb'])} that weighs as much as the encoders together"
    return text


def _nb_kind(nb: dict) -> str:
    """The n-gram model of a checkpoint's description, in words: its weighting, its n, what it leaves out."""
    kind = f"a {NB_KINDS[nb.get('scaling', 'nb')]} logistic regression over token 1..{nb['max_n']}-grams"
    if nb.get("skip"):  # nb.special_tokens false: the ids of [CLS] and [SEP]
        kind += " of the text alone (the tokenizer's [CLS] and [SEP] read as padding)"
    return kind


def _results(evaluation: dict) -> str:
    rows = []
    for split in ("validation", "test"):
        scores = evaluation.get(split)
        if scores:
            rows.append(f"| {split} | {scores['accuracy']:.4f} | {scores['f1']:.4f} |")
    if not rows:
        return "No evaluation was recorded."
    short = evaluation.get("short")
    if short:  # the pipeline's own short reviews (short_reviews in params.yaml)
        rows.append(
            f"| {short['n']} short reviews written for the check | {short['accuracy']:.4f} | {short['f1']:.4f} |"
        )
    table = "\n".join(["| split | accuracy | macro F1 |", "|---|---|---|", *rows])
    passed = evaluation.get("acceptance", {}).get("passed")
    if passed is not None:
        verdict = "passed" if passed else "did not pass"
        table += f"\n\nThe pipeline's acceptance checks (math parity, padding leak, validation accuracy) {verdict}."
    return table


def _source(params: Params) -> str:
    """data.source as the card may name it: a hub id, or "a local folder" (its path is this machine's)."""
    source = params.data.source
    return f"a local folder ({Path(source).name or source})" if looks_like_path(source) else source


def _model_index(params: Params, evaluation: dict) -> list[dict]:
    """The Hub's ``model-index``: one result per evaluated split, with the scores the card's table shows."""
    local = looks_like_path(params.data.source)
    dataset = {"name": _source(params), "type": "local" if local else params.data.source}
    results = []
    for split in ("validation", "test"):
        scores = evaluation.get(split)
        if not scores:
            continue
        metrics = [
            {"type": "accuracy", "value": scores["accuracy"], "name": f"{split} accuracy"},
            {"type": "f1", "value": scores["f1"], "name": f"{split} macro F1", "args": {"average": "macro"}},
        ]
        results.append(
            {
                "task": {"type": "text-classification", "name": "Text Classification"},
                "dataset": {**dataset, "split": split},
                "metrics": metrics,
            }
        )
    return [{"name": "scratchformer", "results": results}] if results else []


def _header(params: Params, evaluation: dict) -> str:
    """The card's metadata, in the YAML block the Hugging Face Hub reads (language, license, data, task, scores)."""
    meta: dict[str, Any] = {"language": "zh", "license": "mit", "library_name": "scratchformer"}
    if not looks_like_path(params.data.source):  # a hub dataset id; a local folder names nothing others can find
        meta["datasets"] = [params.data.source]
    meta["metrics"] = ["accuracy", "f1"]
    meta["pipeline_tag"] = "text-classification"
    meta["tags"] = ["transformer-from-scratch", "dvc"]
    index = _model_index(params, evaluation)
    if index:
        meta["model-index"] = index
    # safe_dump quotes every string that needs it; width: no line folding, so a long name stays one scalar.
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=float("inf")) + "---"


def _revision(params: Params) -> str:
    """What the card can truthfully say about which version of the data was read."""
    if looks_like_path(params.data.source):
        return (
            "none: a local folder has no hub revision (the SHA-256 of each of its files is in data/inputs/corpus.json)"
        )
    if params.data.revision:
        return params.data.revision
    return "the newest when the pipeline ran (the commit read is in data/inputs/corpus.json)"


def _window(config: dict) -> str:
    """How a cut longer than the networks' positional table is read (nothing to say when it is not longer)."""
    window = config.get("model", {}).get("max_len", config["tokenizer_max_len"])
    return f" (its networks the first {window}, its n-gram member all)" if config["tokenizer_max_len"] > window else ""


def _parts(config: dict, params: Params, evaluation: dict) -> list[str]:
    """What an n-gram model contributed, as limits: its share of a blend's answer, or what it taught."""
    lines = []
    nb = config["nb"]
    if nb is not None:
        kind = _nb_kind(nb)
        if nb.get("role") == "base":
            share = f"- Every answer starts from an n-gram model's ({kind}), fit first; each network adds what it "
            share += "learnt on top of it: the n-gram model reads which character n-grams occur, not their order"
        else:
            share = f"- Half of every answer is the n-gram member's ({kind}): it reads which character n-grams "
            share += "occur, not their order"
        parts = evaluation.get("validation", {})
        if "nb" in parts and "transformers" in parts:
            networks = "networks alone, without it" if nb.get("role") == "base" else "Transformer part alone"
            share += (
                f". On validation the n-gram model alone scores {parts['nb']['accuracy']:.4f}, the {networks} "
                f"{parts['transformers']['accuracy']:.4f}, the whole {parts['accuracy']:.4f}"
            )
        lines.append(share + ".")
    elif params.nb.ngrams and params.nb.role == "teacher":
        lines.append(
            f"- An n-gram model (NB-weighted logistic regression over token 1..{params.nb.ngrams}-grams) "
            f"taught it during training (nb.distill {params.nb.distill:g}: that share of each target was "
            "the n-gram model's probabilities on the noised text"
            + (
                f", each text taught by one of {params.nb.distill_folds} such models, the one fit without it"
                if params.nb.distill_folds > 1
                else ""
            )
            + "); it is not part of this folder, which holds the network alone."
        )
    return lines


EXAMPLES = ("服务很差", "这本书不值这个价", "房间很干净，服务也很热情，下次还会再来。")  # what the card shows it answer


def _answers(answers: list[tuple[str, str, float]]) -> str:
    """What the model answered to :data:`EXAMPLES` when the folder was written: text, label, probability."""
    command = code(f"scratchformer predict --model {FOLDER} " + " ".join(text for text, _, _ in answers))
    rows = [(plain(text), f"{label} ({probability:.3f})") for text, label, probability in answers]  # values escaped
    return f"What it answers, predicted when this folder was written ({command}), right or wrong:\n\n" + _table(
        rows, ("text", "answer (probability)")
    )


def _use_it(answers: list[tuple[str, str, float]]) -> str:
    """The card's last section: what the model answered, then how to load it from Python and the command line."""
    example = (
        "from scratchformer import Predictor\n"
        f'predictor = Predictor.from_pretrained("{FOLDER}")  # the path of this folder\n'
        f"print(predictor([{EXAMPLES[0]!r}])[0].label)"
    )
    return (
        "## Use it" + ("\n\n" + _answers(list(answers)) if answers else "") + "\n\n```python\n" + example + "\n```\n\n"
        "From the command line (after `pip install -e .` in the scratchformer repository):\n\n"
        "```bash\n"
        f'scratchformer predict --model {FOLDER} "服务很差"\n'
        "```\n\n"
        "The folder holds no pickle: `config.json` (how to build the network, the class names, the "
        "tokenizer's max_len), `model.safetensors` (the weights), the tokenizer's files and this card."
    )


def model_card(
    config: dict,
    parameters: int,
    params: Params,
    evaluation: dict,
    data_report: dict,
    answers: list[tuple[str, str, float]] = (),
) -> str:
    """README.md of the model folder whose config.json is ``config``.

    ``parameters``: the model's parameter count; ``evaluation``: metrics/eval.json;
    ``data_report``: the ``data`` record of metrics/data.json (rows per split); ``answers``:
    (text, label, probability) of the model on :data:`EXAMPLES`, shown as predicted.
    """
    names = config["class_names"]
    rows = data_report.get("rows", {})
    recipe = [("seed", params.seed)]
    recipe += [(f"{at}.{k}", v) for at in ("train", "nb") for k, v in dataclasses.asdict(getattr(params, at)).items()]
    recipe += [("pretrain.epochs (masked-LM pretraining; 0 = none)", params.pretrain.epochs)]
    model_rows = [(f"model.{k}", v) for k, v in config["model"].items()]
    model_rows += [("vocabulary size", config["vocab_size"]), ("parameters", f"{parameters:,}")]
    sections = [
        _header(params, evaluation),
        "# scratchformer: a Transformer text classifier trained from scratch",
        f"A text classifier with {len(names)} classes ({', '.join(map(plain, names))}): {_architecture(config)}. "
        "Every layer is written by hand in PyTorch and trained from random initialisation "
        "(no pretrained language model); the tokenizer's vocabulary is borrowed, its weights are not. "
        "It was made by the scratchformer DVC pipeline (`dvc repro`), whose code is MIT-licensed.",
        "## Results\n\n" + _results(evaluation),
        "## Training data\n\n"
        + _table(
            [
                ("source (data.source)", _source(params)),
                ("revision", _revision(params)),
                *((f"{split} rows", rows[split]) for split in ("train", "validation", "test") if split in rows),
                ("classes", ", ".join(names)),
            ]
        )
        + "\n\nThe model was fit on the train split, its epoch chosen on validation; test was not looked at.",
        "## Model\n\n" + _table(model_rows),
        f"## Tokenizer\n\n{code(params.tokenizer.name)} (its files are in this folder). Texts are cut to "
        f"{config['tokenizer_max_len']} tokens, [CLS] and [SEP] included, as in training; predict says when it cut.",
        "## Training\n\n" + _table(recipe),
        "## Intended use and limits\n\n"
        "- For learning and research: how a small Transformer learns a classification task, which tokens "
        "drive its answers, how its attention evolves. Not for decisions about people.\n"
        "- It knows the kind of text it was trained on (the training data above; by default ChnSentiCorp's "
        "Chinese online reviews). Expect lower accuracy on other kinds of text and other languages.\n"
        f"- It reads at most {config['tokenizer_max_len']} tokens{_window(config)}; the rest of a longer text is "
        "not seen.\n"
        "- Characters the vocabulary lacks become [UNK]; a text made only of them still gets an answer, "
        "with a warning that it is a guess.\n"
        "- Its probabilities are the softmax of its logits, not calibrated chances: read them as a ranking."
        + "".join("\n" + line for line in _parts(config, params, evaluation)),
        _use_it(answers),
    ]
    return "\n\n".join(sections) + "\n"
