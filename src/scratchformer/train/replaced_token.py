"""Replaced-token detection (ELECTRA, Clark et al. 2020): pretraining that learns from every token.

Masked-language modelling learns only from the 15% of positions it masks. ELECTRA masks
the same way, but a small **generator** (a masked-language model) fills the masked
positions with tokens sampled from its own predictions, and the encoder being pretrained,
the **discriminator**, reads the result and says of *every* real token whether it was
replaced. The generator's guesses are plausible (a good one often samples the original
back, which then counts as not replaced), so telling them apart takes the same reading of
context as filling a blank, and every token gives a signal. The paper finds it learns more
per step than masked-language modelling, most of all for small models, which is this
project's case.

What is built, after the paper:

- the generator is a :class:`~scratchformer.model.classifier.TransformerClassifier` of
  ``pretrain.generator_layers`` blocks at the encoder's width, with no n-gram table, and
  shares the encoder's token embedding (the paper ties the embeddings; its generator is a
  fraction of the discriminator's size);
- the generator's input is masked as masked-language modelling masks it
  (:func:`~scratchformer.train.masked_lm.mask_tokens`), and it is trained on that loss;
- a masked position takes a token **sampled** from the generator's distribution, with no
  gradient through the sample; the discriminator is trained with a per-token logistic loss on
  every real token (not [CLS], [SEP] or PAD);
- the loss is ``generator's loss per chosen token + detection_weight × detection loss per
  real token`` (λ = 50 in the paper: the detection loss per token is much the smaller).

The sampling draws its random numbers in :meth:`ReplacedTokenDetection.prepare`, from the
loop's generator, one uniform number per position: a sample is the first token whose
cumulative probability exceeds it. So a run is as repeatable as masked-language modelling.

Only the discriminator is kept: the pretrain stage saves the encoder, and the train stage
starts from it; the generator and the detection head are thrown away.
"""

from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from scratchformer.model.classifier import TransformerClassifier
from scratchformer.train.diagnostics import grouped_parameters
from scratchformer.train.loop import StepResult
from scratchformer.train.masked_lm import IGNORE, MaskedLMHead, mask_tokens


def sample_tokens(probabilities: Tensor, uniform: Tensor) -> Tensor:
    """One token per row of ``probabilities`` (N, V): the first whose cumulative probability exceeds ``uniform`` (N,).

    Inverse-transform sampling: with ``uniform`` drawn from U[0, 1), token v comes out with
    probability ``probabilities[:, v]`` (a token of probability 0 never: its cumulative sum is
    its predecessor's). The draws are scaled by the rows' totals, so rows that sum to 1 only
    up to rounding still cover [0, 1).
    """
    cumulative = probabilities.cumsum(dim=-1)  # (N, V)
    targets = uniform.unsqueeze(1) * cumulative[:, -1:]  # (N, 1)
    picked = torch.searchsorted(cumulative, targets, right=True).squeeze(1)  # first index whose sum exceeds u
    return picked.clamp_(max=probabilities.size(1) - 1)


def replaced(originals: Tensor, chosen: Tensor, samples: Tensor) -> tuple[Tensor, Tensor]:
    """The discriminator's input (B, T) and which of its tokens differ from ``originals`` (B, T).

    ``samples`` (N,) fill the ``chosen`` positions, in row-major order. A sample equal to the
    token it replaces counts as original, as in the paper: there is nothing to detect.
    """
    corrupted = originals.clone()
    corrupted[chosen] = samples
    return corrupted, corrupted != originals


class ReplacedTokenDetection(nn.Module):
    """The ELECTRA objective for :class:`~scratchformer.train.loop.Loop`: a generator and a discriminator.

    ``model`` is the discriminator (the encoder that is kept). ``prepare`` masks the whole
    global batch and draws each position's sampling number; its labels are (B, T, 3): the
    original token at a chosen position (``IGNORE`` elsewhere), the number, and 1 at a real
    token (0 at a special token or PAD). The loss is summed over the real tokens and averaged
    over all of them, across processes (``count``); the generator's part is scaled by
    ``1 / mask_prob`` so that it stands for its mean over the chosen tokens (exact in
    expectation). The logged loss and accuracy are the detection's, per real token.
    """

    unused_parameters = True

    def __init__(
        self,
        model: TransformerClassifier,
        special_ids: list[int],
        mask_id: int,
        mask_prob: float,
        generator_layers: int = 1,
        detection_weight: float = 50.0,
    ) -> None:
        super().__init__()
        self.model = model
        small = dataclasses.replace(model.config, n_layers=generator_layers, ngram_max=1, wide_ngrams=0)
        self.generator = TransformerClassifier(small, model.embed.num_embeddings, model.pad_id)
        self.generator.embed = model.embed  # tied, as in the paper: both read (and train) one token embedding
        self.head = MaskedLMHead(model.embed)  # the generator's output layer
        self.detector = nn.Linear(model.config.d_model, 1)  # replaced (logit > 0) or original, per token
        self.register_buffer("special", torch.tensor(special_ids), persistent=False)
        self.mask_id, self.mask_prob, self.detection_weight = mask_id, mask_prob, detection_weight

    def prepare(self, ids: Tensor, labels: Tensor, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        special = torch.isin(ids, self.special.cpu())
        inputs, targets = mask_tokens(ids, special, self.mask_id, self.head.bias.numel(), self.mask_prob, generator)
        uniform = torch.rand(ids.shape, generator=generator, dtype=torch.float64)  # (B, T): one per position
        # (B, T, 3): token ids are exact in float64, and the real tokens are what the loss is averaged over
        return inputs, torch.stack([targets.double(), uniform, (~special).double()], dim=-1)

    def count(self, labels: Tensor) -> int:
        return int(labels[..., 2].sum())

    def grad_groups(self) -> dict[str, list[nn.Parameter]]:
        groups = grouped_parameters(self.model)
        held = {id(p) for params in groups.values() for p in params}
        groups["generator"] = [p for p in self.generator.parameters() if id(p) not in held]
        groups["heads"] = [p for p in (*self.head.parameters(), *self.detector.parameters()) if id(p) not in held]
        return groups

    def forward(self, inputs: Tensor, labels: Tensor) -> StepResult:
        targets, uniform = labels[..., 0].long(), labels[..., 1]  # (B, T), (B, T)
        chosen = targets != IGNORE  # (B, T)
        originals = torch.where(chosen, targets, inputs)  # (B, T): the text before masking
        g, _, _ = self.generator.encode(inputs)  # (B, T, C)
        logits = self.head(g[chosen]).float()  # (N, V)
        generator_loss = F.cross_entropy(logits, targets[chosen], reduction="sum")
        with torch.no_grad():  # the sample is discrete: no gradient flows back into the generator through it
            samples = sample_tokens(logits.softmax(dim=-1).double(), uniform[chosen])
        corrupted, is_replaced = replaced(originals, chosen, samples)
        h, _, _ = self.model.encode(corrupted)  # (B, T, C)
        real = labels[..., 2].bool()  # (B, T): neither special nor PAD
        scores = self.detector(h[real]).squeeze(-1).float()  # (M,)
        truth = is_replaced[real].float()  # (M,)
        detection_loss = F.binary_cross_entropy_with_logits(scores, truth, reduction="sum")
        loss = generator_loss / self.mask_prob + self.detection_weight * detection_loss
        return StepResult(loss, detection_loss.detach(), ((scores > 0) == truth.bool()).sum())
