"""Write docs/walkthrough.md: one Chinese sentence followed from text to prediction.

Run ``python -m scratchformer.reporting.walkthrough`` (``--check`` only compares).
Every code excerpt is pulled from the library by name (``inspect`` for functions
and classes, ``ast`` for the training step inside ``fit``), so the page cannot
drift from the code without a test noticing. Every shape and number comes from
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
import ast
import dataclasses
import inspect
import json
import math
import re
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from scratchformer.config import Params, load_params
from scratchformer.data import tokenization
from scratchformer.model import attention, encoder, positional
from scratchformer.model import classifier as model
from scratchformer.train import loop

PAGE = Path("docs/walkthrough.md")
INPUT_MARK = "walkthrough-input"
PROBE_LABEL = 0  # the class the page takes the probe to be: the default probe is a complaint, negative
PICTURES = {
    "attention_heatmap.png": "Every head of the last layer after training (query rows, key columns).",
    "attention_evolution.png": "How the probe's query token attends, head 0 of the last layer, epoch by epoch.",
    "attention_evolution_heads.png": "The same for every head.",
    "loss.png": "Loss per step and per epoch.",
    "grad_norm.png": "The global gradient norm before clipping, with the clip threshold.",
}


def code(obj: Any) -> str:
    """The source of a function, class or method, dedented, in a fenced block with its file."""
    source = textwrap.dedent(inspect.getsource(obj)).rstrip()
    return f"`{_where(obj)}`, `{obj.__qualname__}`:\n\n```python\n{source}\n```"


def loop_calling(func: Callable, name: str) -> str:
    """The innermost ``for`` loop in ``func`` that calls ``name``, found with ``ast``, in a fenced block."""
    lines, _ = inspect.getsourcelines(func)
    tree = ast.parse(textwrap.dedent("".join(lines)))
    loops = [node for node in ast.walk(tree) if isinstance(node, ast.For) and _calls(node, name)]
    if not loops:
        raise LookupError(f"{func.__qualname__} has no loop calling {name}: update the walkthrough's excerpt")
    inner = min(loops, key=lambda n: n.end_lineno - n.lineno)
    body = textwrap.dedent("".join(lines[inner.lineno - 1 : inner.end_lineno])).rstrip()
    return f"`{_where(func)}`, the loop in `{func.__qualname__}` that calls `{name}`:\n\n```python\n{body}\n```"


def _calls(node: ast.AST, name: str) -> bool:
    """Whether ``node`` holds a call of ``name`` (``name(...)`` or ``anything.name(...)``)."""
    return any(
        isinstance(n, ast.Call) and getattr(n.func, "attr", getattr(n.func, "id", None)) == name for n in ast.walk(node)
    )


def _where(obj: Any) -> str:
    package = Path(model.__file__).parents[1]  # the library folder
    path = Path(inspect.getsourcefile(obj))
    return "src/scratchformer/" + path.relative_to(package).as_posix() if path.is_relative_to(package) else path.name


def shape(t: torch.Tensor) -> str:
    return "(" + ", ".join(str(n) for n in t.shape) + ")"


def trace(net: torch.nn.Module, ids: torch.Tensor) -> list[tuple[str, str]]:
    """(module name, output shape) of every submodule call of one forward pass, in call order."""
    seen: list[tuple[str, str]] = []
    hooks = []
    for name, module in net.named_modules():
        if name and not isinstance(module, torch.nn.ModuleList):

            def record(_module, _inputs, output, name=name):
                outs = output if isinstance(output, tuple) else (output,)
                seen.append((name, " and ".join(shape(o) for o in outs)))

            hooks.append(module.register_forward_hook(record))
    try:
        net(ids)
    finally:
        for hook in hooks:
            hook.remove()
    return seen


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


def measure(params: Params, given: dict) -> dict:
    """Every number the page quotes, from a seeded, untrained model on the probe."""
    torch.manual_seed(params.seed)
    net = model.TransformerClassifier(params.model, given["vocab_size"], given["pad_id"])
    ids = torch.tensor([given["ids"]])  # (1, T)
    net.eval()
    with torch.no_grad():
        steps = trace(net, ids)
        x = net.embed(ids)  # (1, T, C)
        seen = net.inspect(ids, layer=0)
    w = seen.attention[0]  # (H, T, T)
    entropy = -(w * w.clamp_min(1e-12).log()).sum(-1).mean()  # nats, over heads and queries
    label = PROBE_LABEL
    net.train()
    torch.manual_seed(params.seed)  # dropout's draws
    loss = F.cross_entropy(net(ids), torch.tensor([label]))
    loss.backward()
    clip = params.train.grad_clip
    norm = float(torch.nn.utils.clip_grad_norm_(net.parameters(), clip if clip > 0 else math.inf))
    after = math.sqrt(sum(float(p.grad.pow(2).sum()) for p in net.parameters() if p.grad is not None))
    probabilities = seen.logits.softmax(-1)[0]
    return {
        "T": ids.size(1),
        "position": net.position,
        "steps": steps,
        "embed_norm": float(x[0].norm(dim=-1).mean()),
        "pe_row": [float(v) for v in net.position.pe[1, :4]] if hasattr(net.position, "pe") else None,
        "entropy": float(entropy),
        "log_T": math.log(ids.size(1)),
        "max_weight": float(w.max(-1).values.mean()),
        "pool": [float(v) for v in seen.pooling[0, :3]],
        "logits": [float(v) for v in seen.logits[0]],
        "probabilities": [float(v) for v in probabilities],
        "label": label,
        "loss": loss.item(),
        "grad_norm": norm,
        "grad_norm_after": after,
    }


def _num(x: float) -> str:
    return f"{x:.4g}"


def _table(rows: list[tuple[str, str]], head: tuple[str, str]) -> str:
    lines = [f"| {head[0]} | {head[1]} |", "|---|---|"] + [f"| `{a}` | {b} |" for a, b in rows]
    return "\n".join(lines)


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

<!-- Generated by `python -m scratchformer.reporting.walkthrough` from the code, params.yaml and the probe
sentence; do not edit by hand (tests/test_walkthrough.py fails when it is stale). -->
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

| position | {" | ".join(str(i) for i in range(T))} |
|---|{"---|" * T}
| token | {" | ".join(tokens)} |
| id | {" | ".join(str(i) for i in given["ids"])} |

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
        print(f"{PAGE} is {'current' if current else 'stale: run python -m scratchformer.reporting.walkthrough'}")
        return 0 if current else 1
    PAGE.parent.mkdir(parents=True, exist_ok=True)
    PAGE.write_text(page, encoding="utf-8")
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
