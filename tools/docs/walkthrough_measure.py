"""The walkthrough's evidence: code excerpts pulled from the library by name, and every shape and
number of docs/walkthrough.md measured on a seeded, untrained model of the params' configuration.

Excerpts come from ``inspect`` (functions and classes) and ``ast`` (the training step inside
``Loop.run_epoch``), so the page cannot drift from the code without a test noticing.
"""

from __future__ import annotations

import ast
import inspect
import math
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from scratchformer.config import Params
from scratchformer.model import classifier as model

PROBE_LABEL = 0  # the class the page takes the probe to be: the default probe is a complaint, negative


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
