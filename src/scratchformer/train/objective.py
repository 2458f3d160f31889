"""The classifier's objective: cross-entropy on the labels, with the noise and the terms training adds to it."""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from scratchformer.config import TrainConfig
from scratchformer.model.classifier import TransformerClassifier
from scratchformer.model.naive_bayes import OutOfFold
from scratchformer.train.augment import crop_spans, drop_tokens
from scratchformer.train.diagnostics import grouped_parameters
from scratchformer.train.loop import StepResult


class Base(NamedTuple):
    """A fitted model the networks learn on top of (``nb.role`` base): what answers train texts, and the rest."""

    train: nn.Module  # an OutOfFold (each train text answered by the model fit without it), or ``full``
    full: nn.Module  # fit on all of train: validation, and the saved model


class Classification(nn.Module):
    """The classifier's objective for :class:`~scratchformer.train.loop.Loop`: cross-entropy on the labels.

    ``prepare`` crops rows to spans (``spans``) and hides tokens (``token_dropout``) on
    the whole global batch, so every process sees the same corruption whatever its share.

    With a ``teacher`` (a fitted model, frozen here) and ``distill`` = α > 0,
    each row's target is a mixture (Hinton et al., 2015, at temperature 1):

        target = (1 − α) · onehot(label) + α · softmax(teacher(ids))

    where ``ids`` is the row as the student sees it at this step, noise and
    all: every epoch shows the student new corrupted copies of the train texts,
    each labelled by the teacher, so it learns the teacher's function around
    the data and not only its answers on the clean texts. The loss stays the
    cross-entropy against that target (label smoothing then applies to it).

    An :class:`~scratchformer.model.naive_bayes.OutOfFold` teacher answers each
    row with the model that never saw its text. The fold is read from the clean
    text in ``prepare``, before the noise, and travels with the label: the
    labels become (B, 2) rows of (label, fold).

    With ``wide_loss`` = β > 0 the wide branch (``model.wide_ngrams``, a linear model over
    the bag of n-grams added to the logits) is also scored alone, and β times its own
    cross-entropy joins the loss: deep supervision of the branch (Lee et al., 2015), so
    that it reads a text by itself and does not only correct the network's residual.

    With a ``base`` (a fitted model, frozen here: ``nb.role`` base) its logits on each row,
    as the network sees it, are added to the network's before the loss: the network learns
    what the base leaves (stacking). An :class:`~scratchformer.model.naive_bayes.OutOfFold`
    base answers each train text with the model fit without it, as a teacher would: the
    base's answers on its own train texts are nearly the labels and would leave nothing to learn.

    With ``gce`` = q > 0 the loss on the labels is the generalized cross-entropy
    (1 − p_y^q) / q (Zhang & Sabuncu, 2018) in place of −log p_y: its gradient is the
    cross-entropy's times p_y^q, so a row whose label the model finds unlikely (a span of
    praise cut from a negative review) pulls less: a loss made for noisy labels. q → 0 is
    the cross-entropy; q = 1 is the mean absolute error.

    With ``adversarial`` = ε > 0 each row is also scored with its embeddings moved by ε in the
    direction that raises its loss fastest, to first order (Miyato et al., 2017, adversarial
    training for text): r = ε · g / ‖g‖, g the gradient of the row's loss with respect to its
    (T, C) embeddings (token and n-gram vectors, before the positions), and the loss on the
    moved row joins the loss on the row. r is held fixed (no gradient flows through it). It
    costs a second forward pass and a backward pass to the embeddings on every step.
    """

    unused_parameters = False  # every trainable parameter takes part in its loss (the teacher trains none)

    def __init__(
        self,
        model: TransformerClassifier,
        label_smoothing: float = 0.0,
        token_dropout: float = 0.0,
        teacher: nn.Module | None = None,
        distill: float = 0.0,
        spans: float = 0.0,
        span_length: str = "review",
        clause_ends: Tensor | None = None,
        rdrop: float = 0.0,
        wide_loss: float = 0.0,
        gce: float = 0.0,
        base: nn.Module | None = None,
        adversarial: float = 0.0,
    ):
        super().__init__()
        self.model = model
        self.label_smoothing, self.token_dropout, self.distill = label_smoothing, token_dropout, distill
        self.spans, self.rdrop, self.wide_loss, self.gce = spans, rdrop, wide_loss, gce
        self.adversarial = adversarial
        if adversarial and rdrop:
            raise ValueError(f"train.adversarial={adversarial} takes no train.rdrop: one of the two passes a step")
        if gce and (label_smoothing or (teacher is not None and distill)):
            raise ValueError(f"train.gce={gce} scores hard labels: it takes no label smoothing and no teacher")
        if wide_loss and model.wide is None:
            raise ValueError(f"train.wide_loss={wide_loss} needs the wide branch: set model.wide_ngrams > 0")
        # review: a span up to its review's length; log: log-uniform up to the longest text the model reads
        self.longest_span = None if span_length == "review" else model.config.max_len - 2
        # clause: the span widened to whole clauses, which end at these tokens
        if span_length == "clause" and clause_ends is None:
            raise ValueError("train.span_length=clause needs the ids of the tokens that end a clause (clause_end_ids)")
        self.clause_ends = clause_ends if span_length == "clause" else None
        self.teacher = teacher.requires_grad_(False).eval() if teacher is not None and distill else None
        self.base = base.requires_grad_(False).eval() if base is not None else None

    @classmethod
    def for_training(
        cls,
        model: TransformerClassifier,
        config: TrainConfig,
        teacher: nn.Module | None = None,
        distill: float = 0.0,
        clause_ends: Tensor | None = None,
        base: Base | None = None,
    ) -> Classification:
        """The objective as ``config`` (the train section) sets its noise and label smoothing; with a ``base``,
        what answers the train texts is added under the network."""
        noise = {"token_dropout": config.token_dropout, "spans": config.spans, "span_length": config.span_length}
        return cls(
            model,
            config.label_smoothing,
            teacher=teacher,
            distill=distill,
            **noise,
            rdrop=config.rdrop,
            clause_ends=clause_ends,
            wide_loss=config.wide_loss,
            gce=config.gce,
            base=None if base is None else base.train,
            adversarial=config.adversarial,
        )

    def train(self, mode: bool = True) -> Classification:
        """Switch the student's mode; a teacher and a base stay in eval mode (no dropout in their answers)."""
        super().train(mode)
        for fitted in (self.teacher, self.base):
            if fitted is not None:
                fitted.eval()
        return self

    def prepare(self, ids: Tensor, labels: Tensor, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        routed = [m for m in (self.teacher, self.base) if isinstance(m, OutOfFold)]
        if routed:
            labels = torch.stack([labels, routed[0].folds(ids)], dim=1)
        if self.spans:
            ids = crop_spans(ids, self.spans, self.model.pad_id, generator, self.longest_span, self.clause_ends)
        if self.token_dropout:
            ids = drop_tokens(ids, self.token_dropout, self.model.pad_id, generator)
        return ids, labels

    def count(self, labels: Tensor) -> int:
        return len(labels)

    def grad_groups(self) -> dict[str, list[nn.Parameter]]:
        return grouped_parameters(self.model)

    def target(self, ids: Tensor, labels: Tensor, num_classes: int, folds: Tensor | None = None) -> Tensor:
        """The labels, or with a teacher the (B, K) mixture of the labels and its probabilities on ``ids``."""
        if self.teacher is None:
            return labels
        with torch.no_grad():
            taught = answer(self.teacher, ids, folds).float().softmax(dim=1)
        onehot = F.one_hot(labels, num_classes).to(taught.dtype)
        return (1 - self.distill) * onehot + self.distill * taught

    def forward(self, ids: Tensor, labels: Tensor) -> StepResult:
        labels, folds = labels.unbind(dim=1) if labels.dim() == 2 else (labels, None)  # (label, fold) rows
        twice = self.rdrop > 0 and self.training  # R-Drop: both copies in one pass, each row under its own masks
        shift = self.zero_shift(ids) if self.adversarial and self.training else None  # what the gradient is taken of
        logits = self.model(torch.cat([ids, ids]) if twice else ids, shift=shift).float()  # (2B or B, K); fp32 loss
        logits, twin = logits.chunk(2) if twice else (logits, None)  # (B, K) each
        base = None
        if self.base is not None:
            with torch.no_grad():
                base = answer(self.base, ids, folds).float()
            logits, twin = logits + base, None if twin is None else twin + base
        target = self.target(ids, labels, logits.size(1), folds)
        loss = self.fit_loss(logits, target)
        if shift is not None:
            loss = loss + self.adversarial_loss(ids, shift, loss, target, base)
        if target is labels and not self.label_smoothing and not self.gce:
            plain = loss.detach()
        else:  # the plain loss on the labels alone, comparable with val_loss
            with torch.no_grad():
                plain = F.cross_entropy(logits, labels, reduction="sum")
        if twin is not None:  # the first pass's answers are what the step reports
            twin_loss = self.fit_loss(twin, target)
            loss = (loss + twin_loss + self.rdrop * symmetric_kl(logits, twin)) / 2
        if self.wide_loss and self.training:  # the wide branch alone (no dropout in it: one pass serves both copies)
            wide = self.model.wide(ids).float()  # (B, K)
            loss = loss + self.wide_loss * self.fit_loss(wide, target)
        return StepResult(loss, plain, (logits.argmax(1) == labels).sum())

    def zero_shift(self, ids: Tensor) -> Tensor:
        """A (B, T, C) zero added to the embeddings, whose gradient is the loss's with respect to them."""
        return torch.zeros(*ids.shape, self.model.config.d_model, device=ids.device, requires_grad=True)

    def adversarial_loss(self, ids: Tensor, shift: Tensor, loss: Tensor, target: Tensor, base: Tensor | None) -> Tensor:
        """The loss on the rows with their embeddings moved ε along the gradient of ``loss`` (each row its own)."""
        (grad,) = torch.autograd.grad(loss, shift, retain_graph=True)  # (B, T, C); the graph serves backward too
        logits = self.model(ids, shift=adversarial_shift(grad, self.adversarial)).float()
        return self.fit_loss(logits if base is None else logits + base, target)

    def fit_loss(self, logits: Tensor, target: Tensor) -> Tensor:
        """The loss the step descends on logits (B, K), summed over the rows: cross-entropy, or with ``gce`` the GCE."""
        if self.gce:
            return generalized_cross_entropy(logits, target, self.gce)
        return F.cross_entropy(logits, target, label_smoothing=self.label_smoothing, reduction="sum")


def answer(fitted: nn.Module, ids: Tensor, folds: Tensor | None) -> Tensor:
    """A fitted model's logits on ``ids``; an out-of-fold one routes each row by ``folds`` (its clean text's)."""
    return fitted(ids, folds) if isinstance(fitted, OutOfFold) and folds is not None else fitted(ids)


def adversarial_shift(grad: Tensor, epsilon: float) -> Tensor:
    """ε · g / ‖g‖ for each row's gradient g of ``grad`` (B, T, C), held fixed: a step of length ε per row."""
    norm = torch.linalg.vector_norm(grad.flatten(1), dim=1).clamp_min(1e-12)  # (B,); a row with no gradient stays
    return (epsilon * grad / norm[:, None, None]).detach()


def generalized_cross_entropy(logits: Tensor, labels: Tensor, q: float) -> Tensor:
    """Σ_rows (1 − p_y^q) / q of the rows' softmax p at their labels y (B,): Zhang & Sabuncu's L_q loss."""
    nll = F.cross_entropy(logits, labels, reduction="none")  # (B,) −log p_y
    return (-torch.expm1(-q * nll) / q).sum()  # 1 − p_y^q = 1 − e^{−q·nll}, without cancelling near q = 0


def symmetric_kl(a: Tensor, b: Tensor) -> Tensor:
    """½ (KL(p ‖ q) + KL(q ‖ p)) of the rows' softmaxes p of ``a`` and q of ``b`` (B, K), summed over the rows."""
    log_p, log_q = a.log_softmax(dim=1), b.log_softmax(dim=1)
    return ((log_p.exp() - log_q.exp()) * (log_p - log_q)).sum() / 2
