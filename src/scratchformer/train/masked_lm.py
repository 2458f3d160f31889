"""Masked-language modelling (BERT-style): one of the two pretraining objectives (see train/pretraining.py).

15% of the real tokens are chosen; of those 80% become [MASK], 10% a random token
and 10% stay as they are; the loss is cross-entropy on the chosen positions only.
The random and unchanged 10%s keep the encoder from learning that only [MASK]
positions matter. The output layer shares its weights with the token embedding,
so pretraining adds only a small transform and a bias.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from scratchformer.model.classifier import TransformerClassifier
from scratchformer.train.diagnostics import grouped_parameters
from scratchformer.train.loop import StepResult

IGNORE = -100  # label of positions that carry no loss


def mask_tokens(
    input_ids: Tensor, special: Tensor, mask_id: int, vocab_size: int, p: float, generator: torch.Generator
) -> tuple[Tensor, Tensor]:
    """(inputs with masks applied, labels) for ids (B, T); ``special`` (B, T) marks untouchable tokens."""
    chosen = (torch.rand(input_ids.shape, generator=generator) < p) & ~special  # (B, T)
    labels = input_ids.masked_fill(~chosen, IGNORE)
    action = torch.rand(input_ids.shape, generator=generator)  # one draw decides mask / random / keep
    inputs = input_ids.clone()
    inputs[chosen & (action < 0.8)] = mask_id
    randomised = chosen & (action >= 0.8) & (action < 0.9)
    inputs[randomised] = torch.randint(vocab_size, input_ids.shape, generator=generator)[randomised]
    return inputs, labels


class MaskedLMHead(nn.Module):
    """h (N, C) -> vocabulary logits (N, V) through the (tied) embedding matrix.

    The embedding rows are N(0, 1) and the transformed h is layer-normed, so their
    dot products have standard deviation √C; dividing by √C starts the logits
    near unit scale instead of a loss far above log V.
    """

    def __init__(self, embedding: nn.Embedding) -> None:
        super().__init__()
        C = embedding.embedding_dim
        self.transform = nn.Sequential(nn.Linear(C, C), nn.GELU(), nn.LayerNorm(C))
        self.embedding = embedding
        self.bias = nn.Parameter(torch.zeros(embedding.num_embeddings))

    def forward(self, h: Tensor) -> Tensor:
        scale = self.embedding.embedding_dim**-0.5
        return scale * self.transform(h) @ self.embedding.weight.T + self.bias  # (N, V)


class MaskedLM(nn.Module):
    """The pretraining objective for :class:`~scratchformer.train.loop.Loop`: predict the chosen tokens.

    ``prepare`` draws the masks on the whole global batch (so every process
    sees the same corruption); the loss is summed over the chosen positions
    and averaged over all of them, across processes. The classifier's pooling
    and output layer take no part (``unused_parameters``).
    """

    unused_parameters = True

    def __init__(self, model: TransformerClassifier, special_ids: list[int], mask_id: int, mask_prob: float):
        super().__init__()
        self.model = model
        self.head = MaskedLMHead(model.embed)
        self.register_buffer("special", torch.tensor(special_ids), persistent=False)
        self.mask_id, self.mask_prob = mask_id, mask_prob

    def prepare(self, ids: Tensor, labels: Tensor, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        special = torch.isin(ids, self.special.cpu())
        return mask_tokens(ids, special, self.mask_id, self.head.bias.numel(), self.mask_prob, generator)

    def count(self, labels: Tensor) -> int:
        return int((labels != IGNORE).sum())

    def grad_groups(self) -> dict[str, list[nn.Parameter]]:
        groups = grouped_parameters(self.model)
        tied = {id(p) for params in groups.values() for p in params}
        groups["mlm_head"] = [p for p in self.head.parameters() if id(p) not in tied]
        return groups

    def forward(self, inputs: Tensor, labels: Tensor) -> StepResult:
        h, _, _ = self.model.encode(inputs)  # (B, T, C)
        chosen = labels != IGNORE  # (B, T)
        logits = self.head(h[chosen]).float()  # (N, V): only the chosen positions
        loss = F.cross_entropy(logits, labels[chosen], reduction="sum")
        return StepResult(loss, loss.detach(), (logits.argmax(1) == labels[chosen]).sum())
