"""The probe sentence: one fixed example whose attention is recorded as the model learns."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import PreTrainedTokenizerBase

from scratchformer.config import ConfigError, ProbeConfig
from scratchformer.model import TransformerClassifier, eval_mode


@dataclass(frozen=True)
class Probe:
    tokens: list[str]  # as the model sees them, [CLS] … [SEP]
    input_ids: torch.Tensor  # (1, T)
    query_index: int  # position of the query token whose attention row is recorded
    layer: int
    head: int


def make_probe(config: ProbeConfig, tokenizer: PreTrainedTokenizerBase, max_len: int) -> Probe:
    ids = tokenizer(config.text, truncation=True, max_length=max_len)["input_ids"]
    tokens = tokenizer.convert_ids_to_tokens(ids)
    if config.query_token not in tokens:
        raise ConfigError(
            f"probe.query_token={config.query_token!r} is not a token of probe.text (tokens: {' '.join(tokens)})"
        )
    # The last occurrence: in a review the closing judgement usually carries the sentiment.
    query_index = len(tokens) - 1 - tokens[::-1].index(config.query_token)
    return Probe(tokens, torch.tensor([ids]), query_index, config.layer, config.head)


@torch.no_grad()
def snapshot(model: TransformerClassifier, probe: Probe, epoch: int) -> dict:
    """Every head's attention in the probe layer, and the class probabilities."""
    device = next(model.parameters()).device
    with eval_mode(model):
        seen = model.inspect(probe.input_ids.to(device), probe.layer)
    return {
        "epoch": epoch,
        "attention": seen.attention[0].cpu().tolist(),  # (H, T, T): every head of the probe layer
        "probabilities": torch.softmax(seen.logits[0], dim=-1).cpu().tolist(),
    }
