"""The sections that train: the optimizer settings that training and pretraining share, the train and
pretrain sections built on them, and the NB model that joins or teaches the Transformers (``nb``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from scratchformer.config.checks import DEVICE, MAX_BUCKETS, require


@dataclass(frozen=True)
class OptimConfig:
    """What every training loop of the pipeline is given: epochs, batches, AdamW and its lr schedule.

    Declared once here, checked once here; ``TrainConfig`` and ``PretrainConfig`` add their
    own keys (and pretraining its own defaults). ``prefix`` names the keys in an error.
    """

    prefix: ClassVar[str] = "train"

    epochs: int = 4
    batch_size: int = 32
    lr: float = 2e-3
    weight_decay: float = 0.02
    grad_clip: float = 1.0  # max global gradient norm; 0 disables clipping
    schedule: Literal["constant", "cosine"] = "constant"
    warmup_ratio: float = 0.0  # fraction of all steps spent warming the lr up linearly
    bucket_by_length: bool = False  # batch texts of similar length together (less padding)

    def __post_init__(self) -> None:
        at = self.prefix
        require(self.batch_size >= 1, f"{at}.batch_size", self.batch_size, "must be >= 1")
        require(self.lr > 0, f"{at}.lr", self.lr, "must be > 0")
        require(self.weight_decay >= 0, f"{at}.weight_decay", self.weight_decay, "must be >= 0")
        require(self.grad_clip >= 0, f"{at}.grad_clip", self.grad_clip, "must be >= 0")
        require(0 <= self.warmup_ratio < 1, f"{at}.warmup_ratio", self.warmup_ratio, "must be in [0, 1)")


@dataclass(frozen=True)
class TrainConfig(OptimConfig):
    """The classifier's training: the shared optimizer keys, then what only the train stage reads."""

    device: str = "auto"  # auto = cuda, then mps, then cpu
    label_smoothing: float = 0.0
    rdrop: float = 0.0  # α > 0: each batch passes twice, and the two passes' answers are pulled together (R-Drop)
    wide_loss: float = 0.0  # β > 0: the wide branch's own cross-entropy, times β, joins the loss
    gce: float = 0.0  # q in (0, 1]: the generalized cross-entropy (1 - p_y^q) / q in place of cross-entropy
    adversarial: float = 0.0  # ε > 0: each row also scored with its embeddings moved ε up its loss's gradient
    token_dropout: float = 0.0  # chance that a training token is hidden (turned into PAD) each step
    spans: float = 0.5  # chance that a training review is cropped to a random span of itself each step
    span_length: Literal["review", "log", "clause"] = "log"  # log-uniform to max_len; review: up to its review's;
    # clause: log-uniform, then widened to whole clauses (punctuation-ended)
    ema_decay: float = 0.0  # validate and save an exponential moving average of the weights (0 = off)
    sparse_ngrams: bool = True  # the n-gram table: sparse gradients, lazy AdamW and EMA on the rows a batch uses
    ngram_decay: float = 0.0  # weight decay of the hashed n-gram table (0 = none, as for every embedding table)
    ngram_lr: float = 1.0  # the n-gram table's learning rate, as a multiple of lr (the schedule scales both)
    ensemble: int = 2  # models trained from seeds seed, seed+1, …; their mean probability predicts
    teachers: int = 0  # k > 0: k networks (seeds seed+1..seed+k) train first and teach the one that is saved (seed)
    distill: float = 0.5  # with teachers: their mean probability's weight in the saved network's targets
    select: Literal["val_loss", "val_accuracy"] = "val_loss"  # which epoch's weights are kept
    nproc: int = 1  # data-parallel processes (torch.distributed); the global batch stays batch_size
    precision: Literal["fp32", "bf16", "fp16"] = "fp32"  # bf16: autocast; fp16: autocast + loss scaling (CUDA)
    log_every: int = 1  # steps between reads of the logged values from the device (one host sync each)

    def __post_init__(self) -> None:
        require(self.epochs >= 1, "train.epochs", self.epochs, "must be >= 1")
        super().__post_init__()
        require(self.ngram_decay >= 0, "train.ngram_decay", self.ngram_decay, "must be >= 0")
        require(self.ngram_lr > 0, "train.ngram_lr", self.ngram_lr, "must be > 0 (1 = the rest's lr)")
        require(
            DEVICE.fullmatch(self.device) is not None,
            "train.device",
            self.device,
            "must be auto, cpu, mps, cuda or cuda:N",
        )
        require(0 <= self.label_smoothing < 1, "train.label_smoothing", self.label_smoothing, "must be in [0, 1)")
        self.check_loss_terms()
        require(0 <= self.token_dropout < 1, "train.token_dropout", self.token_dropout, "must be in [0, 1)")
        require(0 <= self.spans <= 1, "train.spans", self.spans, "must be in [0, 1]")
        require(0 <= self.ema_decay < 1, "train.ema_decay", self.ema_decay, "must be in [0, 1)")
        require(self.ensemble >= 1, "train.ensemble", self.ensemble, "must be >= 1")
        require(self.teachers >= 0, "train.teachers", self.teachers, "must be >= 0 (0 = no distillation)")
        require(0 < self.distill <= 1, "train.distill", self.distill, "must be in (0, 1]")
        if self.teachers:
            require(
                self.ensemble == 1,
                "train.ensemble",
                self.ensemble,
                f"must be 1 with train.teachers={self.teachers}: the teachers teach one network",
            )
            require(
                self.nproc == 1,
                "train.nproc",
                self.nproc,
                f"must be 1 with train.teachers={self.teachers}: rank 0 alone keeps a teacher's best epoch",
            )
        require(self.nproc >= 1, "train.nproc", self.nproc, "must be >= 1")
        require(
            self.batch_size >= self.nproc,
            "train.batch_size",
            self.batch_size,
            f"must be >= train.nproc ({self.nproc}): each process takes a share of every batch",
        )
        require(self.log_every >= 1, "train.log_every", self.log_every, "must be >= 1")
        require(
            not self.sparse_ngrams or self.nproc == 1,
            "train.sparse_ngrams",
            self.sparse_ngrams,
            f"needs train.nproc 1 (it is {self.nproc}): sparse gradients are not all-reduced here",
        )

    def check_loss_terms(self) -> None:
        """The terms the step's loss may add: each in its range, and no two that cannot go together."""
        require(self.rdrop >= 0, "train.rdrop", self.rdrop, "must be >= 0 (0 = off)")
        require(self.wide_loss >= 0, "train.wide_loss", self.wide_loss, "must be >= 0 (0 = off)")
        require(0 <= self.gce <= 1, "train.gce", self.gce, "must be in [0, 1] (0 = cross-entropy)")
        require(self.adversarial >= 0, "train.adversarial", self.adversarial, "must be >= 0 (0 = off)")
        require(
            not (self.adversarial and self.rdrop),
            "train.adversarial",
            self.adversarial,
            f"takes no train.rdrop (it is {self.rdrop}): each uses the step's second pass",
        )
        require(
            not (self.gce and (self.label_smoothing or self.teachers)),
            "train.gce",
            self.gce,
            f"scores hard labels: it takes no train.label_smoothing (it is {self.label_smoothing}) "
            f"and no train.teachers (it is {self.teachers})",
        )


@dataclass(frozen=True)
class PretrainConfig(OptimConfig):
    """Pretraining of the encoder on the training texts; 0 epochs = off.

    ``objective``: ``mlm`` (masked-language modelling, BERT's) or ``electra`` (replaced-token
    detection: a small generator fills the masked positions, the encoder tells which tokens
    were replaced). The optimizer keys are :class:`OptimConfig`'s; only their defaults differ here.
    """

    prefix: ClassVar[str] = "pretrain"

    epochs: int = 0
    batch_size: int = 64
    lr: float = 1e-3
    weight_decay: float = 0.01
    schedule: Literal["constant", "cosine"] = "cosine"
    warmup_ratio: float = 0.05
    bucket_by_length: bool = True
    mask_prob: float = 0.15
    objective: Literal["mlm", "electra"] = "mlm"
    generator_layers: int = 1  # electra: the generator's blocks (its width and token embedding are the encoder's)
    detection_weight: float = 50.0  # electra: the replaced-token loss's weight against the generator's (ELECTRA's 50)
    corpora: tuple[str, ...] = ()  # more unlabeled text: every text of these corpora joins the train texts

    def __post_init__(self) -> None:
        require(self.epochs >= 0, "pretrain.epochs", self.epochs, "must be >= 0 (0 = no pretraining)")
        super().__post_init__()
        require(0 < self.mask_prob < 1, "pretrain.mask_prob", self.mask_prob, "must be in (0, 1)")
        require(self.generator_layers >= 1, "pretrain.generator_layers", self.generator_layers, "must be >= 1")
        require(self.detection_weight > 0, "pretrain.detection_weight", self.detection_weight, "must be > 0")
        corpora = self.corpora if self.corpora is not None else ()
        require(
            isinstance(corpora, (list, tuple)) and all(isinstance(c, str) and c.strip() for c in corpora),
            "pretrain.corpora",
            corpora,
            "must be a list of hub dataset ids or local folders, e.g. [online-shopping]",
        )
        require(len(set(corpora)) == len(corpora), "pretrain.corpora", list(corpora), "names a corpus twice")
        object.__setattr__(self, "corpora", tuple(corpora))


@dataclass(frozen=True)
class NBConfig:
    """The NB-weighted n-gram model of the train stage (:mod:`scratchformer.model.naive_bayes`).

    Fit on the train split before the Transformers, it joins their ensemble (``role``
    member), or only teaches them (teacher, with ``distill`` > 0): every member's targets
    then mix in its probabilities, and the saved model is the Transformers alone. As the
    base (``role`` base) its logits are added to each network's, in training and after:
    the networks learn what it leaves (stacking; with ``distill_folds`` > 1 out of fold).
    """

    ngrams: int = 3  # > 0: a logistic regression over token 1..ngrams-grams is fit (0 = none)
    c: float = 10.0  # its inverse L2 strength, as scikit-learn's C (10: the TF-IDF LR baseline's)
    buckets: int = 1 << 20  # rows its 2..n-grams are hashed into
    scaling: Literal["nb", "tfidf"] = "tfidf"  # nb: presence × NB log-count ratio (NBSVM) | tfidf: TF-IDF LR's
    role: Literal["member", "teacher", "base"] = "member"  # teacher: it only teaches | base: networks add to it
    distill: float = 0.0  # weight of its probabilities on each step's (noised) batch in the target
    distill_folds: int = 1  # k > 1: k models, each fit without one k-th of train; each text answered out of fold
    fit_len: int | None = None  # tokens of each train review the fit reads (None: tokenizer.max_len, the model's cut)
    special_tokens: bool = False  # false: [CLS] and [SEP] are read as padding (the text's n-grams only, as TF-IDF LR's)

    def __post_init__(self) -> None:
        require(self.ngrams >= 0, "nb.ngrams", self.ngrams, "must be >= 0 (0 = no NB model)")
        require(self.c > 0, "nb.c", self.c, "must be > 0")
        require(1 <= self.buckets <= MAX_BUCKETS, "nb.buckets", self.buckets, f"must be in 1..{MAX_BUCKETS} (2**24)")
        require(0 <= self.distill <= 1, "nb.distill", self.distill, "must be in [0, 1]")
        require(
            self.distill == 0 or self.ngrams > 0,
            "nb.distill",
            self.distill,
            "needs a teacher: set nb.ngrams > 0 (the NB model's n-gram order)",
        )
        require(
            self.role != "teacher" or self.distill > 0,
            "nb.role",
            self.role,
            "teacher needs nb.distill > 0: a teacher that teaches nothing would be fit for nothing",
        )
        require(
            self.role != "base" or self.distill == 0,
            "nb.role",
            self.role,
            "base takes nb.distill 0: the networks already learn on top of its logits",
        )
        require(self.fit_len is None or self.fit_len >= 3, "nb.fit_len", self.fit_len, "must be >= 3 or null")
        require(self.distill_folds >= 1, "nb.distill_folds", self.distill_folds, "must be >= 1 (1 = one teacher)")
        require(
            self.distill_folds == 1 or self.role != "member",
            "nb.distill_folds",
            self.distill_folds,
            "needs nb.role teacher or base: out-of-fold models teach or answer train, they do not join the vote",
        )
