"""Token relevance: which tokens a prediction rests on.

Relevance follows the pooled sentence vector back one layer: the pooling
weights w (B, T) say how much each final token vector counts, and the last
layer's head-averaged attention Ā (B, T, T) says where each of those vectors
looked, so

    relevance[b, k] = Σ_q w[b, q] · Ā[b, q, k]

With mean pooling that is the attention each token receives on average; with
CLS pooling, the [CLS] row; with attention pooling, the learned query's weights
carried through the layer. Each row sums to 1 over the real tokens and is 0 on
PAD keys (pooling gives PAD no weight, attention never looks at it), so scores
from texts of different lengths and batches compare. ``predict`` and the error
report both use this one definition.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from scratchformer.model.classifier import Classifier, eval_mode


class Explained(NamedTuple):
    probabilities: Tensor  # (B, K): softmax of the logits
    relevance: Tensor  # (B, T): each token's share of the decision, 0 on PAD


@torch.no_grad()
def explain(model: Classifier, input_ids: Tensor) -> Explained:
    """Class probabilities and token relevance of ``input_ids`` (B, T), in eval mode."""
    with eval_mode(model):
        seen = model.inspect(input_ids, layer=-1)
    probabilities = torch.softmax(seen.logits.float(), dim=-1)  # (B, K)
    attention = seen.attention.float().mean(dim=1)  # (B, T, T): heads averaged
    relevance = torch.einsum("bq,bqk->bk", seen.pooling.float(), attention)  # (B, T)
    return Explained(probabilities, relevance)
