"""The optimizer, the lr schedule and the forward pass's precision that the training loop uses, and the
:class:`Settings` it reads them from."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable
from dataclasses import dataclass, fields

import torch
from torch import nn
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

from scratchformer.config import OptimConfig, PretrainConfig, TrainConfig
from scratchformer.model.ngrams import HashedNgramEmbedding
from scratchformer.train.lazy import LazyAdamW, dense_only, pay_before_reading


def parameter_groups(
    modules: Iterable[nn.Module],
    weight_decay: float,
    exclude: Iterable[nn.Parameter] = (),
    ngram_decay: float = 0.0,
    ngram_lr: float | None = None,
) -> list[dict]:
    """AdamW groups: the weight matrices of linear layers decay, and by default nothing else.

    Weight decay pulls a weight towards 0, which regularises the matrices that
    mix features. Biases, LayerNorm gains, embedding tables (token, n-gram and
    learned positional rows: each row is only updated when its token occurs, so
    decay would shrink rare tokens towards nothing) and the pooling query are
    offsets and scales, not mixers, and are left alone (as in nanoGPT's
    ``configure_optimizers``, with embeddings in the no-decay group). A
    parameter shared by two modules (a tied embedding) is listed once; a frozen
    one (a distillation teacher) is not listed, nor one in ``exclude`` (a table
    another optimizer updates: :func:`sparse_tables`).

    ``ngram_decay`` > 0 puts the hashed n-gram tables in a third group that
    decays at that rate. Shrinking the rows of rare n-grams towards nothing is
    then the point: a row that a handful of train texts fit is an n-gram the
    model should trust less, as the L2 penalty of an n-gram logistic regression
    makes it. ``ngram_lr`` (not None) puts them there too, with that lr of their own.
    """
    modules = list(modules)
    own_group = ngram_decay or ngram_lr is not None
    tables = {id(t.weight) for m in modules for t in ngram_tables(m)} if own_group else set()
    decay, no_decay, ngrams, seen = [], [], [], {id(p) for p in exclude}
    for module in modules:
        for sub in module.modules():
            for name, p in sub.named_parameters(recurse=False):
                if id(p) in seen or not p.requires_grad:
                    continue
                seen.add(id(p))
                if isinstance(sub, nn.Linear) and name == "weight":
                    decay.append(p)
                elif id(p) in tables:
                    ngrams.append(p)
                else:
                    no_decay.append(p)
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    own_lr = {} if ngram_lr is None else {"lr": ngram_lr}
    return groups + ([{"params": ngrams, "weight_decay": ngram_decay, **own_lr}] if ngrams else [])


def adamw(groups: list[dict], lr: float, device: torch.device | str) -> torch.optim.AdamW:
    """AdamW over ``parameter_groups``, with the fused kernel where PyTorch has one.

    The fused update is one pass over each tensor instead of a chain of
    elementwise ops, which matters for large embedding tables: every row is
    updated every step (benchmarks/encoder_throughput.py prints the ratio).
    """
    return torch.optim.AdamW(groups, lr=lr, fused=torch.device(device).type in ("cpu", "cuda"))


def ngram_tables(model: nn.Module) -> list[nn.Embedding]:
    """The hashed n-gram embedding tables of ``model``: the rows that sparse gradients and ``ngram_decay`` act on."""
    return [m.table for m in model.modules() if isinstance(m, HashedNgramEmbedding)]


def sparse_tables(model: nn.Module) -> list[nn.Parameter]:
    """Give the model's hashed n-gram tables sparse gradients; return their weights.

    A step reads a few thousand of a table's rows, but a dense gradient is the
    size of the whole table: building it, AdamW's update and the moments all
    cost O(rows) every step, so a table of 2^20 rows more than doubles a step
    (benchmarks/ngram_table.py). With ``sparse`` set, the lookup's gradient
    holds only the rows the batch used, and
    :class:`~scratchformer.train.lazy.LazyAdamW` updates only those: a row's
    moments move when its n-gram occurs (lazy Adam), where dense AdamW would
    keep moving every row by its momentum; its weight decay
    (``train.ngram_decay``) and its moving average are paid when the row is next
    used. Only the training copy changes: ``sparse`` is not in the state dict,
    so the saved model is as before.
    """
    tables = ngram_tables(model)
    for table in tables:
        table.sparse = True
    return [table.weight for table in tables]


def optimizers_and_average(
    objective: nn.Module, settings: Settings, device: torch.device
) -> tuple[list[torch.optim.Optimizer], AveragedModel | None]:
    """AdamW over ``objective``'s parameter groups, lazy AdamW for sparse n-gram tables, and the EMA.

    With ``settings.sparse_ngrams`` the tables leave AdamW for
    :class:`~scratchformer.train.lazy.LazyAdamW`, which also keeps their moving average;
    the EMA (``AveragedModel``) then averages the rest. One lr schedule drives both optimizers;
    the tables' lr is ``settings.ngram_lr`` times the rest's, either way.
    """
    tables = sparse_tables(objective.model) if settings.sparse_ngrams else []
    table_lr = settings.lr * settings.ngram_lr
    groups = parameter_groups(
        [objective],
        settings.weight_decay,
        exclude=tables,
        ngram_decay=settings.ngram_decay,
        ngram_lr=None if settings.ngram_lr == 1 else table_lr,
    )
    average = get_ema_multi_avg_fn(settings.ema_decay)
    ema = (
        AveragedModel(objective.model, multi_avg_fn=dense_only(average, tables) if tables else average)
        if settings.ema_decay
        else None
    )
    optimizers: list[torch.optim.Optimizer] = [adamw(groups, settings.lr, device)]
    if tables:
        averages = [t.weight for t in ngram_tables(ema.module)] if ema is not None else None
        lazy = LazyAdamW(tables, table_lr, settings.ngram_decay, averages=averages, ema_decay=settings.ema_decay)
        for table in ngram_tables(objective.model):
            pay_before_reading(table, lazy)
        optimizers.append(lazy)
    return optimizers, ema


def lr_factor(step: int, total: int, schedule: str, warmup_ratio: float) -> float:
    """Multiplier of the base lr at ``step``: linear warm-up, then constant or cosine to 0."""
    warmup = int(total * warmup_ratio)
    if step < warmup:
        return (step + 1) / warmup
    if schedule == "constant":
        return 1.0
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    """The forward pass's precision: fp32 as is, or autocast to bf16 / fp16.

    Under autocast, matrix products run in the low precision while reductions
    that need range (softmax, LayerNorm, the loss) stay fp32; the attention
    module computes its softmax in fp32 explicitly, so a fully blocked row stays
    finite whatever autocast decides.
    """
    if precision == "fp32":
        return contextlib.nullcontext()
    if precision == "fp16" and device.type != "cuda":
        raise ValueError(
            f"train.precision=fp16 needs CUDA (its gradients need loss scaling); on {device.type} use bf16 or fp32"
        )
    return torch.autocast(device.type, dtype=torch.bfloat16 if precision == "bf16" else torch.float16)


@dataclass(frozen=True)
class Settings:
    """What the loop reads: a section's optimizer keys (:class:`~scratchformer.config.OptimConfig`) and the rest.

    Build it with :meth:`training` or :meth:`pretraining`; every field is named there, so a
    renamed config key fails at once instead of falling back to a default here.
    """

    epochs: int
    batch_size: int
    lr: float
    weight_decay: float
    grad_clip: float = 1.0  # 0 = off
    schedule: str = "constant"  # constant | cosine
    warmup_ratio: float = 0.0
    bucket_by_length: bool = False
    ema_decay: float = 0.0
    sparse_ngrams: bool = False  # the n-gram table by lazy Adam on sparse gradients (optim.sparse_tables)
    ngram_decay: float = 0.0  # weight decay of the n-gram table (optim.parameter_groups)
    ngram_lr: float = 1.0  # the n-gram table's lr, as a multiple of lr
    precision: str = "fp32"  # fp32 | bf16 | fp16
    log_every: int = 1

    @classmethod
    def training(cls, train: TrainConfig) -> Settings:
        """The classifier's loop: the train section's optimizer keys, EMA, n-gram table, precision, logging."""
        return cls(
            **_optim(train),
            ema_decay=train.ema_decay,
            sparse_ngrams=train.sparse_ngrams,
            ngram_decay=train.ngram_decay,
            ngram_lr=train.ngram_lr,
            precision=train.precision,
            log_every=train.log_every,
        )

    @classmethod
    def pretraining(cls, pretrain: PretrainConfig, train: TrainConfig) -> Settings:
        """The masked-LM loop: the pretrain section's optimizer keys; precision and logging are ``train``'s
        (every loop of the pipeline shares them); no EMA and a dense n-gram table."""
        return cls(**_optim(pretrain), precision=train.precision, log_every=train.log_every)


def _optim(config: OptimConfig) -> dict:
    """The optimizer keys that every training section declares (:class:`~scratchformer.config.OptimConfig`)."""
    return {f.name: getattr(config, f.name) for f in fields(OptimConfig)}
