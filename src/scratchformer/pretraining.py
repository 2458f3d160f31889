"""Masked-language-model pretraining of the encoder on the training texts (BERT-style).

15% of the real tokens are chosen; of those 80% become [MASK], 10% a random token
and 10% stay as they are; the loss is cross-entropy on the chosen positions only.
The random and unchanged 10%s keep the encoder from learning that only [MASK]
positions matter. The output layer shares its weights with the token embedding,
so pretraining adds only a small transform and a bias.
"""

from __future__ import annotations

import logging
import math
import time

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from tqdm import tqdm

from scratchformer.config import PretrainConfig
from scratchformer.model import TransformerClassifier
from scratchformer.tokenization import TokenizedSplit, batches
from scratchformer.evaluation import accuracy, rounded
from scratchformer.training import TrainingDivergedError, adamw, lr_factor, parameter_groups

log = logging.getLogger(__name__)
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


def pretrain(
    model: TransformerClassifier,
    train: TokenizedSplit,
    config: PretrainConfig,
    special_ids: list[int],
    mask_id: int,
    seed: int,
    device: torch.device,
) -> dict:
    """Train the encoder of ``model`` in place with the MLM objective; return summary metrics."""
    head = MaskedLMHead(model.embed).to(device)
    model.to(device).train()
    params = list({id(p): p for p in [*model.parameters(), *head.parameters()]}.values())
    optimizer = adamw(parameter_groups([model, head], config.weight_decay), config.lr, device)
    steps_per_epoch = math.ceil(len(train) / config.batch_size)
    total = steps_per_epoch * config.epochs
    schedule = lambda s: lr_factor(s, total, "cosine", config.warmup_ratio)  # noqa: E731
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    order = torch.Generator().manual_seed(seed)
    masking = torch.Generator().manual_seed(seed + 1)
    special = torch.tensor(special_ids)
    start = time.perf_counter()
    for epoch in range(1, config.epochs + 1):
        total_loss, correct, count = 0.0, 0, 0
        bar = tqdm(
            batches(train, config.batch_size, model.pad_id, order, bucket=True),
            total=steps_per_epoch,
            desc=f"pretrain {epoch}/{config.epochs}",
            leave=False,
            disable=None,
        )
        for ids, _ in bar:
            inputs, labels = mask_tokens(
                ids, torch.isin(ids, special), mask_id, head.bias.numel(), config.mask_prob, masking
            )
            inputs, labels = inputs.to(device), labels.to(device)
            h, _, _ = model.encode(inputs)  # (B, T, C)
            chosen = labels != IGNORE  # (B, T)
            logits = head(h[chosen])  # (N, V): only the chosen positions
            loss = F.cross_entropy(logits, labels[chosen])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(params, 1.0).item()
            n, loss_value = int(chosen.sum()), loss.item()
            if not (math.isfinite(loss_value) and math.isfinite(grad_norm)):
                raise TrainingDivergedError(
                    f"pretraining diverged in epoch {epoch} at lr {scheduler.get_last_lr()[0]:.3g}: loss {loss_value}, "
                    f"gradient norm {grad_norm}. Lower pretrain.lr; no checkpoint was written"
                )
            optimizer.step()
            scheduler.step()
            total_loss += loss_value * n
            correct += (logits.argmax(1) == labels[chosen]).sum().item()
            count += n
            bar.set_postfix(loss=f"{loss_value:.3f}")
        log.info("pretrain epoch %d: mlm loss %.4f, masked accuracy %.4f", epoch, total_loss / count, correct / count)
    log.info("pretrained %d epochs in %.1f s on %s", config.epochs, time.perf_counter() - start, device)
    return {
        "epochs": config.epochs,
        "mlm_loss": rounded(total_loss / count),
        "masked_accuracy": accuracy(correct, count),
    }
