"""The probe sentence: one fixed example whose attention is recorded as the model learns."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import PreTrainedTokenizerBase

from scratchformer.config import ProbeConfig
from scratchformer.data.tokenization import probe_ids
from scratchformer.model.classifier import TransformerClassifier, eval_mode


@dataclass(frozen=True)
class Probe:
    tokens: list[str]  # as the model sees them, [CLS] … [SEP]
    input_ids: torch.Tensor  # (1, T)
    query_index: int  # position of the query token whose attention row is recorded
    layer: int  # python-style: -1 is the last layer
    head: int

    def layer_index(self, n_layers: int) -> int:
        """The probe layer counted from 0 in a model of ``n_layers`` layers (-1: the last, ``n_layers - 1``)."""
        return self.layer if self.layer >= 0 else n_layers + self.layer


def make_probe(config: ProbeConfig, tokenizer: PreTrainedTokenizerBase, max_len: int) -> Probe:
    ids, query_index = probe_ids(config, tokenizer, max_len)
    tokens = tokenizer.convert_ids_to_tokens(ids)
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


def snapshots_record(
    probe: Probe, config: ProbeConfig, *, n_layers: int, class_names: list[str], snapshots: list[dict]
) -> dict:
    """What the train stage writes for the attention pictures: the probe, its layer counted from 0, and
    ``snapshots`` (one :func:`snapshot` per epoch)."""
    return {
        "text": config.text,
        "tokens": probe.tokens,
        "query_index": probe.query_index,
        "query_token": config.query_token,
        "layer": probe.layer_index(n_layers),
        "head": probe.head,
        "class_names": class_names,
        "snapshots": snapshots,
    }
