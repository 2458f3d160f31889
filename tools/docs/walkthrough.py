"""Write docs/walkthrough.md: one Chinese sentence followed from text to prediction.

Run ``python -m tools.docs.walkthrough`` (``--check`` only compares). Every code excerpt is
pulled from the library by name (see :mod:`tools.docs.walkthrough_measure`), so the page
cannot drift from the code without a test noticing. Every shape and number comes from
running a model of the params' configuration, built from ``seed`` and never
trained, on the probe sentence: the page is a function of code, params and the
probe's token ids alone, the same whether or not a trained model is at hand.
The one trained number, the probe's final probabilities, is read from the
committed ``plots/probe/snapshots.json``.

The token ids need the tokenizer (``data/tokenizer`` or the ``tokenizer.name``
folder). The page records them, with the vocabulary size and PAD id, in a comment
(``INPUT_MARK``), so a checkout without the tokenizer still regenerates the rest
from the committed page's own record and can check that it is current.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import sys
from pathlib import Path

from scratchformer.config import Params, load_params
from scratchformer.data import tokenization
from scratchformer.model import attention, encoder, positional
from scratchformer.model import classifier as model
from scratchformer.render import markdown
from scratchformer.train import loop
from tools.docs.walkthrough_measure import code, loop_calling, measure

PAGE = Path("docs/walkthrough.md")
INPUT_MARK = "walkthrough-input"
PICTURES = {
    "attention_heatmap.png": "Every head of the last layer after training (query rows, key columns).",
    "attention_evolution.png": "How the probe's query token attends, head 0 of the last layer, epoch by epoch.",
    "attention_evolution_heads.png": "The same for every head.",
    "loss.png": "Loss per step and per epoch.",
    "grad_norm.png": "The global gradient norm before clipping, with the clip threshold.",
}


def read_input(page: str) -> dict:
    """The tokens, ids, vocabulary size and PAD id a committed page was made from."""
    found = re.search(rf"<!-- {INPUT_MARK}: (.*?) -->", page)
    if not found:
        raise ValueError(f"{PAGE} holds no {INPUT_MARK} record; regenerate it with the tokenizer at hand")
    return json.loads(found.group(1))


def tokenizer_input(params: Params, root: Path = Path("."), folder: Path | None = None) -> dict:
    """The probe's tokens and ids from the saved tokenizer (or ``tokenizer.name`` when it is a folder)."""
    candidates = [folder] if folder else [root / "data" / "tokenizer", root / params.tokenizer.name]
    found = next((c for c in candidates if c.is_dir()), None)
    if found is None:
        raise FileNotFoundError(
            f"no tokenizer in {', '.join(map(str, candidates))}: run `dvc repro` (or `dvc pull`) first"
        )
    tok = tokenization.load_tokenizer(str(found))
    ids = tok(params.probe.text, truncation=True, max_length=params.tokenizer.max_len)["input_ids"]
    return {
        "tokens": tok.convert_ids_to_tokens(ids),
        "ids": ids,
        "vocab_size": len(tok),
        "pad_id": tok.pad_token_id,
    }


def _num(x: float) -> str:
    return f"{x:.4g}"


def _table(rows: list[tuple[str, str]], head: tuple[str, str]) -> str:
    return markdown.table(head, [[f"`{a}`", b] for a, b in rows])


def render(params: Params, given: dict, snapshots: dict | None, root: Path = Path(".")) -> str:
    """The page, from the params, the probe's tokenization and (if any) the committed probe snapshots."""
    missing = [name for name in PICTURES if not (root / "plots" / "images" / name).is_file()]
    if missing:
        raise FileNotFoundError(f"plots/images lacks {', '.join(missing)}: run `dvc repro` (stage visualize) first")
    if not snapshots:
        raise FileNotFoundError("plots/probe/snapshots.json is missing: run `dvc repro` (stage train) first")
    names = list(snapshots["class_names"])  # the classes come from the data, recorded by train
    params = dataclasses.replace(params, model=params.model.for_classes(names))
    m, c = measure(params, given), params.model
    T, C, H, D, K = m["T"], c.d_model, c.n_heads, c.head_dim, c.num_classes
    tokens = given["tokens"]
    block = [(n, s) for n, s in m["steps"] if n.startswith("blocks.0")]
    outer = [(n, s) for n, s in m["steps"] if not n.startswith("blocks.")]
    pooling = type(model.make_pooling(c.pooling, C))
    record = json.dumps(given, ensure_ascii=False)
    tokens_table = markdown.table(["position", *map(str, range(T))], [["token", *tokens], ["id", *given["ids"]]])
    pe = ", ".join(_num(v) for v in m["pe_row"]) if m["pe_row"] else None
    position = positional.RotaryPositionalEncoding if c.positional == "rope" else type(m["position"])
    trained = "Train the model (`dvc repro`) to see what it makes of the sentence."
    if snapshots:
        last = snapshots["snapshots"][-1]
        probs, seen_names = last["probabilities"], snapshots["class_names"]
        p = ", ".join(f"P({n}) = {_num(v)}" for n, v in zip(seen_names, probs, strict=True))
        verdict = "right" if probs.index(max(probs)) == m["label"] else f"wrong (taking it as {names[m['label']]})"
        trained = (
            f"After training (epoch {last['epoch']} in the committed `plots/probe/snapshots.json`) the model says "
            f"{p} for this sentence, which is {verdict}. The pictures the pipeline draws show where it looks."
        )
    pictures = "\n\n".join(f"![{caption}](../plots/images/{name})\n\n*{caption}*" for name, caption in PICTURES.items())
    return f"""# A guided tour: from a Chinese sentence to a prediction

<!-- Generated by `python -m tools.docs.walkthrough` from the code, params.yaml and the probe
sentence; do not edit by hand (tests/tools/test_walkthrough.py fails when it is stale). -->
<!-- {INPUT_MARK}: {record} -->

This page follows the probe sentence of `params.yaml` through the model in the order data flows:
tokenizer ids, embedding, positions, one encoder block, pooling, head, loss and one training step.
The code is excerpted from the library by name when the page is generated; the shapes and numbers come
from running a model of the configuration in `params.yaml` (d_model C = {C}, {H} heads of D = {D},
{c.n_layers} layers, feed-forward {c.ff_dim}, {c.norm}-LN, {c.positional} positions, {c.pooling} pooling)
built with `seed` = {params.seed} and **not trained**, so every number below is what the untrained
network computes; only the last section quotes the trained model.

Shape legend: B batch, T tokens, H heads, D head dim (C / H), C model dim, K classes.

## 1. Text to token ids

The probe sentence is **{params.probe.text}** ("the hotel is well located, but the room is too dirty and
the service is poor"). The `bert-base-chinese` vocabulary splits Chinese into single characters and wraps
the text in [CLS] … [SEP], so T = {T}:

{tokens_table}

{code(tokenization.encode)}

A batch of texts of different lengths is right-padded with [PAD] (id {given["pad_id"]}) to the longest;
`input_ids` is (B, T) = (1, {T}) here.

## 2. Embedding

Each id selects one row of a ({given["vocab_size"]}, {C}) table, initialised N(0, 1), so an untrained
token vector has norm about √C = {_num(math.sqrt(C))} (here {_num(m["embed_norm"])} on average). The
[PAD] row is zero and never updated. `encode` is where the whole stack is put together:

{code(model.TransformerClassifier.encode)}

## 3. Positions

Attention by itself does not know word order. Sinusoidal positions (the default; this configuration uses
`{c.positional}`) add a fixed vector to every token vector:
PE[p, 2i] = sin(p / 10000^(2i/C)), PE[p, 2i+1] = cos(p / 10000^(2i/C)). Low dimensions turn fast, high ones
slowly, so every position gets a distinct pattern{f" (position 1 starts {pe}, …)" if pe else ""}. The table
is a buffer: saved with the model, never trained.

{code(position)}

## 4. One encoder block

Attention, per head, for queries Q, keys K and values V (each (T, D)) and the padding mask M
(−∞ where a key is [PAD]):

    Attention(Q, K, V) = softmax(Q Kᵀ / √D + M) V

Dividing by √D = {_num(math.sqrt(D))} keeps the scores' variance near 1, so the softmax does not saturate at
initialisation.

{code(attention.scaled_dot_product_attention)}

The {H} heads come from one linear layer that makes Q, K and V for all heads at once, (1, {T}, {3 * C}),
split into three (1, {T}, {C}) and viewed as (1, {H}, {T}, {D}); the scores and weights are
(1, {H}, {T}, {T}), the attended values (1, {H}, {T}, {D}), merged back to (1, {T}, {C}).

{code(attention.MultiHeadSelfAttention.forward)}

The block: attention and a feed-forward net, each inside a residual connection; Pre-LN normalises the
input of each sub-layer and leaves the residual stream untouched.

{code(encoder.EncoderBlock.forward)}

{code(encoder.FeedForward)}

Every module the first block calls on the probe, in order, with the shape of what it returns:

{_table(block, ("module", "output shape"))}

Untrained, attention is nearly uniform: the mean entropy of a query's weights in layer 0 is
{_num(m["entropy"])} nats against log T = {_num(m["log_T"])} for a perfectly uniform row, and a query's
largest weight is {_num(m["max_weight"])} on average (1 / T = {_num(1 / T)}). Training is what makes the
heads pick words out.

## 5. Pooling

After the last block a final LayerNorm, then one vector for the sentence: `{c.pooling}` pooling, which
gives each real token a weight and [PAD] none (here the first weights are
{", ".join(_num(v) for v in m["pool"])}).

{code(pooling)}

## 6. Head

A linear layer maps the (1, {C}) sentence vector to K = {K} logits, and a softmax turns them into
probabilities. `inspect` is the forward pass that also hands back the attention and pooling weights:

{code(model.TransformerClassifier.inspect)}

Untrained, the logits are {", ".join(_num(v) for v in m["logits"])} and the probabilities
{", ".join(f"P({n}) = {_num(v)}" for n, v in zip(names, m["probabilities"], strict=True))}: a coin toss.

Every module call of the whole forward pass outside the blocks:

{_table(outer, ("module", "output shape"))}

## 7. Loss

Cross-entropy, −log p(label): taking the probe's label to be {names[m["label"]]} ({m["label"]}), with dropout on, as in
training, the untrained model's loss is {_num(m["loss"])}; a uniform guess would score log K = {_num(math.log(K))}.

## 8. One training step, with clipping

For every batch, `Loop.run_epoch` — the loop that training and pretraining share — calls
`Loop.gradients`: corruption drawn on the whole batch (`prepare`), this process's share of it,
forward (under autocast when `train.precision` asks), loss, backward, then the gradient is clipped to a global norm of
`train.grad_clip` = {params.train.grad_clip:g} before AdamW steps. The global norm is measured once, as the
norm of each layer's gradient norm, and `clip_grads_with_norm_` scales the gradients by it; the norms
*before* clipping are what the pipeline logs, read from the device every `train.log_every` steps.

{code(loop.Loop.gradients)}

`run_epoch` then reads the pending values every `train.log_every` steps and applies the update:

{loop_calling(loop.Loop.run_epoch, "gradients")}

On the probe alone the untrained model's gradient norm before clipping is {_num(m["grad_norm"])}; after
clipping it is {_num(m["grad_norm_after"])}.

## 9. What training makes of it

{trained}

{pictures}
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write docs/walkthrough.md (or check that it is current).")
    parser.add_argument("--params", type=Path, default=Path("params.yaml"))
    parser.add_argument("--tokenizer", type=Path, help="tokenizer folder (default: data/tokenizer)")
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed page is stale")
    args = parser.parse_args(argv)
    params = load_params(args.params)
    try:
        given = tokenizer_input(params, Path("."), args.tokenizer)
    except FileNotFoundError:
        if not (args.check and PAGE.is_file()):
            raise
        given = read_input(PAGE.read_text(encoding="utf-8"))  # no tokenizer here: the page's own record
    snapshots_path = Path("plots") / "probe" / "snapshots.json"
    snapshots = json.loads(snapshots_path.read_text(encoding="utf-8")) if snapshots_path.is_file() else None
    page = render(params, given, snapshots)
    if args.check:
        current = PAGE.is_file() and PAGE.read_text(encoding="utf-8") == page
        print(f"{PAGE} is {'current' if current else 'stale: run python -m tools.docs.walkthrough'}")
        return 0 if current else 1
    PAGE.parent.mkdir(parents=True, exist_ok=True)
    PAGE.write_text(page, encoding="utf-8")
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
