"""Numbers that show what training does inside the model, layer by layer.

Attention: for each head, the mean entropy of a query's attention over the real
(non-PAD) keys, in nats, and the mean of each query's largest weight. A head
whose entropy sits at log T spreads its weight evenly ("uniform"), one near 0
puts it all on one key ("collapsed"); in between it is "focused". The
reference, log T, is averaged over the same queries.

Gradients: the norm of the gradient of each group of parameters — the
embeddings, every encoder layer, the head — before clipping. The groups
partition the parameters, so their squares sum to the square of the global norm
that clipping uses: a deep Post-LN stack shows its large early-layer gradients
here, where the global norm would hide which layer they come from.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


def attention_entropy(weights: Tensor, pad: Tensor) -> dict[str, Tensor]:
    """Per-head statistics of attention ``weights`` (B, H, T, T) over the real queries.

    ``pad`` (B, T) is True at PAD positions. Returns ``entropy`` (H,), the mean
    over real queries of -Σ_k w log w (PAD keys carry weight 0 and add
    nothing), ``max_weight`` (H,), the mean largest weight of a query, and
    ``max_entropy`` (), the mean of log(number of real keys): a uniform head's
    entropy.
    """
    real = ~pad  # (B, T)
    plogp = torch.where(weights > 0, weights * weights.clamp_min(1e-30).log(), torch.zeros_like(weights))
    entropy = -plogp.sum(dim=-1)  # (B, H, T): one value per query
    largest = weights.amax(dim=-1)  # (B, H, T)
    queries = real[:, None, :].expand_as(entropy)  # (B, H, T): real queries only
    n = queries[:, 0].sum()
    keys = real.sum(dim=1, keepdim=True).expand(real.shape)  # (B, T): real keys of each query's sentence
    return {
        "entropy": (entropy * queries).sum(dim=(0, 2)) / n,  # (H,)
        "max_weight": (largest * queries).sum(dim=(0, 2)) / n,  # (H,)
        "max_entropy": keys.float().log()[real].mean(),  # ()
    }


@torch.no_grad()
def attention_diagnostics(model: nn.Module, input_ids: Tensor) -> dict[str, float]:
    """Entropy and largest weight of every head of every layer on ``input_ids`` (B, T), in eval mode.

    Keys are ``attention/layer{i}/head{h}/entropy`` and ``…/max_weight``, plus
    ``attention/max_entropy`` (log T, the uniform head's entropy).
    """
    from scratchformer.model.classifier import eval_mode  # model imports nothing from here; keep the graph one-way

    out: dict[str, float] = {}
    pad = input_ids == model.pad_id
    with eval_mode(model):
        for layer in range(len(model.blocks)):
            stats = attention_entropy(model.attention_weights(input_ids, layer), pad)
            for h in range(stats["entropy"].numel()):
                out[f"attention/layer{layer}/head{h}/entropy"] = stats["entropy"][h].item()
                out[f"attention/layer{layer}/head{h}/max_weight"] = stats["max_weight"][h].item()
    out["attention/max_entropy"] = stats["max_entropy"].item()
    return out


def parameter_group(name: str) -> str:
    """Which group a parameter belongs to: ``layer{i}`` for encoder block i, ``embedding``, or ``head``."""
    if name.startswith("blocks."):
        return f"layer{name.split('.')[1]}"
    if name.startswith(("embed.", "ngrams.", "position.")):
        return "embedding"
    return "head"  # final LayerNorm, pooling, classifier


def grouped_parameters(model: nn.Module) -> dict[str, list[nn.Parameter]]:
    """The model's parameters by :func:`parameter_group`, in the order data flows (built once per run)."""
    groups: dict[str, list[nn.Parameter]] = {}
    for name, p in model.named_parameters():
        groups.setdefault(parameter_group(name), []).append(p)
    return groups


def group_grad_norms(groups: dict[str, list[nn.Parameter]]) -> Tensor:
    """(G,) L2 norm of the current gradients of each group; the norm of these is the global norm.

    One pass over the gradients, no host sync: the training step reads these
    together with the loss, and clips with their norm instead of measuring again.
    """
    norms = [
        torch.nn.utils.get_total_norm([norm_operand(p.grad) for p in params if p.grad is not None])
        for params in groups.values()
    ]
    return torch.stack(norms)


def norm_operand(grad: Tensor) -> Tensor:
    """A gradient as a tensor whose norm is the gradient's: a sparse one's values (rows summed), else itself."""
    return grad.coalesce().values() if grad.is_sparse else grad


def layer_grad_norms(model: nn.Module) -> dict[str, float]:
    """L2 norm of the current gradients of each :func:`parameter_group`; their squares sum to the global norm²."""
    groups = grouped_parameters(model)
    return {f"layer_grad_norm/{g}": v for g, v in zip(groups, group_grad_norms(groups).tolist(), strict=True)}
