import logging
import math
import re
from dataclasses import fields

import pytest
import torch
import torch.nn.functional as F
from fixtures import tiny_config
from torch import Tensor, nn

from scratchformer.analysis.evaluation import predict_logits
from scratchformer.config import PretrainConfig, TrainConfig
from scratchformer.data.tokenized_split import TokenizedSplit
from scratchformer.device import pick_device
from scratchformer.files import write_atomic, write_json
from scratchformer.model.checkpoint import load_checkpoint, save_checkpoint
from scratchformer.model.classifier import TransformerClassifier
from scratchformer.model.naive_bayes import OutOfFold, text_folds
from scratchformer.model.ngrams import ngram_ids_upto
from scratchformer.train.augment import crop_spans, drop_tokens
from scratchformer.train.classify import Steps, fit, grad_norm_summary
from scratchformer.train.loop import NOTHING, Loop, Progress, TrainingDivergedError
from scratchformer.train.objective import Base, Classification
from scratchformer.train.optim import Settings, lr_factor, parameter_groups
from scratchformer.train.recording import Recorder


@pytest.mark.parametrize(
    ("cuda", "mps", "expected"), [(True, True, "cuda"), (False, True, "mps"), (False, False, "cpu")]
)
def test_device_auto_prefers_cuda_then_mps_then_cpu(monkeypatch, cuda, mps, expected):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2 if cuda else 0)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)
    assert pick_device("auto") == torch.device(expected)
    assert pick_device("cpu") == torch.device("cpu")  # an explicit name is never second-guessed
    if cuda:
        assert pick_device("cuda:1") == torch.device("cuda", 1)
    else:
        with pytest.raises(ValueError, match="'cuda:1' asked for, but this machine has no CUDA"):
            pick_device("cuda:1")
    if not mps:
        with pytest.raises(ValueError, match="no Apple GPU"):
            pick_device("mps")


def test_lr_schedule_warmup_then_cosine():
    total = 100
    assert lr_factor(0, total, "constant", 0.0) == 1.0
    assert lr_factor(0, total, "cosine", 0.1) == pytest.approx(0.1)
    assert lr_factor(9, total, "cosine", 0.1) == pytest.approx(1.0)
    assert lr_factor(10, total, "cosine", 0.1) == pytest.approx(1.0)
    assert lr_factor(55, total, "cosine", 0.1) == pytest.approx(0.5)
    assert lr_factor(99, total, "cosine", 0.1) < 0.01
    assert lr_factor(50, total, "constant", 0.1) == 1.0


def test_grad_norm_summary():
    s = grad_norm_summary([0.5, 1.5, 0.5, 3.0], clip=1.0)
    assert s["grad_norm_median"] == 0.5 and s["grad_norm_max"] == 3.0 and s["clipped_fraction"] == 0.5
    assert grad_norm_summary([2.0], clip=0)["clipped_fraction"] == 0.0


def test_failed_write_leaves_the_old_file_and_no_temp(tmp_path):
    path = tmp_path / "out.json"
    write_json(path, {"ok": 1})

    def broken(tmp):
        tmp.write_text("half")
        raise RuntimeError("killed mid-write")

    with pytest.raises(RuntimeError):
        write_atomic(path, broken)
    assert path.read_text() == '{\n  "ok": 1\n}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_checkpoint_round_trip(tmp_path):
    torch.manual_seed(0)
    model = TransformerClassifier(tiny_config(pooling="attention", n_layers=2, ff_dim=128, dropout=0.1), 30).eval()
    save_checkpoint(tmp_path / "m.pt", model, epoch=3)
    loaded, info = load_checkpoint(tmp_path / "m.pt")
    ids = torch.randint(1, 30, (2, 9))
    assert torch.equal(loaded(ids), model(ids)) and info["epoch"] == 3
    assert loaded.config == model.config and not loaded.training
    with pytest.raises(FileNotFoundError, match="run `dvc repro` first"):
        load_checkpoint(tmp_path / "missing.pt")


def test_lr_factor_is_never_negative_or_nan():
    assert all(
        0 <= lr_factor(s, 37, "cosine", 0.2) <= 1 and not math.isnan(lr_factor(s, 37, "cosine", 0.2)) for s in range(37)
    )


def test_drop_tokens_hides_a_share_of_tokens_but_never_the_first():
    torch.manual_seed(0)
    ids = torch.randint(1, 100, (200, 50))
    ids[:, 40:] = 0  # PADs stay PADs
    dropped = drop_tokens(ids, 0.25, pad_id=0)
    hidden = (dropped == 0) & (ids != 0)
    assert torch.all(dropped[:, 0] == ids[:, 0])
    assert torch.all(dropped[:, 40:] == 0)
    assert torch.all((dropped == ids) | hidden)  # a token is either kept or became PAD
    assert hidden[:, 1:40].float().mean().item() == pytest.approx(0.25, abs=0.02)


@pytest.mark.parametrize("longest", [None, 20])
def test_crop_spans_keeps_cls_and_sep_around_a_contiguous_span_of_the_text(longest):
    g = torch.Generator().manual_seed(0)
    CLS, SEP, PAD = 101, 102, 0
    rows, T = 300, 40
    n = torch.randint(0, 37, (rows,), generator=g)  # each row's own tokens, some rows empty
    texts = [torch.randperm(60, generator=g)[:k] + 1000 for k in n.tolist()]  # distinct ids: a span is findable
    ids = torch.full((rows, T), PAD)
    for i, text in enumerate(texts):
        ids[i, : len(text) + 2] = torch.cat([torch.tensor([CLS]), text, torch.tensor([SEP])])
    cropped = crop_spans(ids, 0.5, PAD, torch.Generator().manual_seed(1), longest)
    changed = 0
    for i, text in enumerate(texts):
        row = cropped[i][cropped[i] != PAD]
        assert row[0] == CLS and row[-1] == SEP, i
        span = row[1:-1]
        assert len(span) >= min(4, len(text)), i
        assert longest is None or len(span) <= longest or len(span) == len(text), i  # cropped, or left whole
        starts = [s for s in range(len(text) - len(span) + 1) if torch.equal(text[s : s + len(span)], span)]
        assert starts, f"row {i}: {span.tolist()} is not a contiguous span of {text.tolist()}"
        assert torch.all(cropped[i][len(row) :] == PAD), i
        changed += len(span) < len(text)
    # about half of the rows are cropped, and a cropped row is shorter unless its span is all of it
    assert 0.3 < changed / rows < 0.5
    assert torch.equal(crop_spans(ids, 0.0, PAD, torch.Generator().manual_seed(1), longest), ids)
    lengths = (crop_spans(ids, 1.0, PAD, torch.Generator().manual_seed(2), longest) != PAD).sum(1) - 2
    long = n >= 30
    assert lengths[long].float().mean() < 0.7 * n[long].float().mean()  # uniform lengths: about half


def _span_lengths(n: int, rows: int, longest: int | None, seed: int) -> Tensor:
    """The lengths of the spans ``crop_spans`` cuts from ``rows`` reviews of ``n`` tokens each."""
    ids = torch.zeros(rows, n + 2, dtype=torch.long)
    ids[:, 0], ids[:, 1:-1], ids[:, -1] = 101, torch.arange(n) + 1000, 102
    return (crop_spans(ids, 1.0, 0, torch.Generator().manual_seed(seed), longest) != 0).sum(1) - 2


def test_log_span_lengths_are_one_distribution_for_every_review_length():
    """With ``longest``, a short span is as likely from a long review as from a shorter one.

    Up to the review's length, the short spans come mostly from short reviews; log-uniform
    on [4, 126], 16 tokens or fewer is ln(17/4) / ln(127/4) of the draws for any review of
    at least 16 tokens.
    """
    expected = math.log(17 / 4) / math.log(127 / 4)  # 0.42
    shares = [(_span_lengths(n, 4000, 126, n) <= 16).float().mean().item() for n in (30, 120)]
    assert shares == pytest.approx([expected, expected], abs=0.03)
    review = [(_span_lengths(n, 4000, None, n) <= 16).float().mean().item() for n in (30, 120)]
    assert review == pytest.approx([13 / 27, 13 / 117], abs=0.03)  # uniform up to each review's own length
    lengths = _span_lengths(120, 4000, 126, 1)
    assert lengths.min() == 4 and lengths.max() == 120  # from the shortest span to the whole review (cut at n)


def _tiny_run(ema_decay):
    g = torch.Generator().manual_seed(0)
    split = TokenizedSplit.from_sequences(
        [torch.randint(1, 30, (int(n),), generator=g) for n in torch.randint(3, 12, (40,), generator=g)],
        torch.randint(0, 2, (40,), generator=g),
    )
    torch.manual_seed(0)
    model = TransformerClassifier(tiny_config(dropout=0.1), 30)
    trajectory, handed = [], []

    class Weights(Recorder):
        def step(self, record):  # the model's weights after each update
            trajectory.append(model.head.weight.detach().clone())

        def epoch(self, record, evaluated):  # the weights handed over
            handed.append((evaluated, evaluated.head.weight.detach().clone()))

    config = TrainConfig(epochs=1, batch_size=8, lr=1e-2, ema_decay=ema_decay)
    fit(model, split, split, config, 0, torch.device("cpu"), recorder=Weights())
    return model, trajectory, handed


def test_ema_model_is_validated_and_handed_over_and_holds_the_average():
    decay = 0.5
    model, trajectory, handed = _tiny_run(decay)
    expected = trajectory[0]  # the recorder sees the weights after each update
    for weights in trajectory[1:]:
        expected = decay * expected + (1 - decay) * weights
    (m0, _), (m1, w1) = handed
    assert m1 is not model and m0 is m1
    assert torch.allclose(w1, expected, atol=1e-6)
    assert not torch.allclose(w1, model.head.weight)
    plain, _, plain_handed = _tiny_run(0.0)
    assert plain_handed[-1][0] is plain and torch.equal(plain.head.weight, model.head.weight)


def _split(n, seed, vocab=30, flip=False):
    """``n`` sequences whose label is whether token 1 or token 2 is more frequent (learnable)."""
    g = torch.Generator().manual_seed(seed)
    ids, labels = [], []
    for _ in range(n):
        x = torch.randint(1, 3, (int(torch.randint(4, 12, (1,), generator=g)),), generator=g)
        ids.append(x)
        labels.append(int((x == 1).sum() > (x == 2).sum()) ^ int(flip))
    return TokenizedSplit.from_sequences(ids, labels)


def _model():
    torch.manual_seed(0)
    return TransformerClassifier(tiny_config(dropout=0.1), 30)


def test_a_non_finite_loss_stops_training_and_names_where(monkeypatch):
    split = _split(32, 0)
    model = _model()
    config = TrainConfig(epochs=2, batch_size=8, lr=1e30, grad_clip=0)
    with pytest.raises(TrainingDivergedError) as err:
        fit(model, split, split, config, 0, torch.device("cpu"), member=2)
    message = str(err.value)
    # step 0 took the huge step; step 1 overflowed
    assert "training diverged in member 2, epoch 1, step 1 at lr 1e+30" in message
    assert "Lower train.lr" in message


def test_the_saved_model_is_the_best_epoch_not_the_last(tmp_path):
    # Validation labels are the opposite of what training teaches: the more the model
    # learns, the worse validation gets, so the first epoch is the best one.
    train, validation = _split(64, 0), _split(32, 1, flip=True)
    model = _model()
    logits = {}

    class Logits(Recorder):
        def epoch(self, record, evaluated):
            logits[record["epoch"]] = predict_logits(evaluated, validation, 64)

    history = fit(model, train, validation, TrainConfig(epochs=3, batch_size=8, lr=1e-2), 0, "cpu", recorder=Logits())
    losses = [r["val_loss"] for r in history.epochs]
    assert history.best_epoch == 1 and losses[0] < losses[-1]
    assert not torch.equal(logits[1], logits[3])
    model.load_state_dict(history.best_state)  # what stages/train.py saves
    save_checkpoint(tmp_path / "m.pt", model)
    saved, _ = load_checkpoint(tmp_path / "m.pt")
    assert torch.equal(predict_logits(saved, validation, 64), logits[1])


def test_select_keeps_the_epoch_of_the_chosen_metric():
    # Seed and data picked so that the lowest validation loss and the highest accuracy
    # fall on different epochs (asserted below, so the test cannot pass vacuously).
    train, validation = _split(48, 3), _split(24, 4)
    runs = {}
    for select in ("val_loss", "val_accuracy"):
        config = TrainConfig(epochs=4, batch_size=8, lr=1e-2, select=select)
        runs[select] = fit(_model(), train, validation, config, 0, torch.device("cpu"))
    epochs = runs["val_loss"].epochs
    assert epochs == runs["val_accuracy"].epochs  # same training, only the choice differs
    by_loss = 1 + min(range(len(epochs)), key=lambda i: epochs[i]["val_loss"])
    by_accuracy = 1 + max(range(len(epochs)), key=lambda i: epochs[i]["val_accuracy"])
    assert by_loss != by_accuracy
    assert runs["val_loss"].best_epoch == by_loss and runs["val_accuracy"].best_epoch == by_accuracy


def test_weight_decay_reaches_linear_weights_only():
    model = TransformerClassifier(
        tiny_config(pooling="attention", positional="learned", ngram_max=2, ngram_buckets=8, ff_dim=128, dropout=0.1),
        30,
    )
    decay, no_decay = parameter_groups([model], 0.1)
    names = {id(p): n for n, p in model.named_parameters()}
    decayed = sorted(names[id(p)] for p in decay["params"])
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    assert decayed == sorted(
        [
            "blocks.0.attn.qkv.weight",
            "blocks.0.attn.proj.weight",
            "blocks.0.ffn.up.weight",
            "blocks.0.ffn.down.weight",
            "head.weight",
        ]
    )
    assert len(decay["params"]) + len(no_decay["params"]) == len(list(model.parameters()))
    kept = {names[id(p)] for p in no_decay["params"]}
    assert {"embed.weight", "position.embedding.weight", "pool.query", "ln_f.weight", "head.bias"} <= kept
    assert any(n.startswith("ngrams.") for n in kept)


@pytest.mark.parametrize("ngram_decay", [0.0, 0.5])
def test_ngram_decay_shrinks_the_rows_no_batch_read_and_only_those_tables(ngram_decay):
    torch.manual_seed(0)
    model = TransformerClassifier(tiny_config(ngram_max=2, ngram_buckets=64), 30)
    groups = parameter_groups([model], 0.1, ngram_decay=ngram_decay)
    assert len(groups) == (3 if ngram_decay else 2)
    if ngram_decay:
        (decayed,) = groups[2]["params"]
        assert decayed is model.ngrams.table.weight and groups[2]["weight_decay"] == ngram_decay
    table, embed = model.ngrams.table.weight, model.embed.weight
    before, embed_before = table.detach().clone(), embed.detach().clone()
    optimizer = torch.optim.AdamW(groups, lr=0.1)
    ids = torch.tensor([[1, 5, 6, 7, 2, 0], [1, 8, 9, 2, 0, 0]])
    F.cross_entropy(model(ids), torch.tensor([0, 1])).backward()
    unread = (table.grad == 0).all(dim=1)
    assert 0 < unread.sum() < len(unread) - 1  # the batch read some rows and left most alone
    optimizer.step()
    # AdamW moves an unread row by decay alone: w <- w (1 - lr * decay); no decay leaves it as it was
    torch.testing.assert_close(table[unread], before[unread] * (1 - 0.1 * ngram_decay), rtol=0, atol=1e-7)
    unread_tokens = (embed.grad == 0).all(dim=1)
    assert torch.equal(embed[unread_tokens], embed_before[unread_tokens])  # the token table never decays


def test_checkpoint_bytes_do_not_depend_on_the_temporary_name(tmp_path):
    model = _model()
    save_checkpoint(tmp_path / "a.pt", model)
    save_checkpoint(tmp_path / "b.pt", model)  # another random temporary name, another target
    assert (tmp_path / "a.pt").read_bytes() == (tmp_path / "b.pt").read_bytes()


def test_a_killed_write_leaves_a_temporary_that_the_next_write_removes(tmp_path):
    path = tmp_path / "model.pt"
    (tmp_path / ".model.pt.abc123.tmp").write_text("half")  # what SIGKILL mid-write leaves
    (tmp_path / ".other.pt.x.tmp").write_text("not ours")
    write_json(path, {"ok": 1})
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.pt.x.tmp", "model.pt"]


@pytest.mark.parametrize(("sparse", "decay"), [(False, 0.0), (True, 0.0), (True, 0.3)])
def test_a_resumed_fit_ends_bit_identical_to_an_uninterrupted_one(tmp_path, sparse, decay):
    # Dropout, word dropout, the EMA, a cosine schedule with warm-up and a shuffled order:
    # every random generator and every piece of optimizer state (both optimizers with a
    # sparse n-gram table, the lazy one's owed decay and average too) has to come back.
    config = TrainConfig(
        epochs=3,
        batch_size=8,
        lr=1e-2,
        schedule="cosine",
        warmup_ratio=0.2,
        token_dropout=0.2,
        ema_decay=0.9,
        sparse_ngrams=sparse,
        ngram_decay=decay,
    )
    train, validation = _split(40, 0), _split(16, 1)

    def model():
        torch.manual_seed(0)
        config_ = tiny_config(dropout=0.2, ngram_max=3 if sparse else 1, ngram_buckets=64)
        return TransformerClassifier(config_, 30)

    states = []

    class Keep(Recorder):
        def state(self, state):  # through a real file, as the stage does
            save_checkpoint_state = tmp_path / f"state{len(states)}.pt"
            torch.save(state, save_checkpoint_state)
            states.append(torch.load(save_checkpoint_state, weights_only=True))

    whole = fit(model(), train, validation, config, 0, torch.device("cpu"), recorder=Keep())
    assert [s["epoch"] for s in states] == [1, 2, 3]
    torch.manual_seed(123)  # the resumed run must not depend on the generator it finds
    resumed_model = model()
    resumed = fit(resumed_model, train, validation, config, 0, torch.device("cpu"), resume=states[0])
    assert resumed.steps == whole.steps and resumed.epochs == whole.epochs
    assert resumed.best_epoch == whole.best_epoch
    for name, value in whole.best_state.items():
        assert torch.equal(resumed.best_state[name], value), name


def test_every_step_logs_each_layers_gradient_norm_before_clipping(monkeypatch):
    # Measure every gradient independently just before clipping, and what clipping leaves.
    measured, clipped = [], []
    clip = torch.nn.utils.clip_grads_with_norm_

    def spy(parameters, max_norm, total_norm, **kwargs):
        parameters = list(parameters)
        grads = torch.cat([p.grad.flatten() for p in parameters if p.grad is not None])
        measured.append(torch.linalg.vector_norm(grads).item())
        clip(parameters, max_norm, total_norm, **kwargs)
        clipped.append(torch.linalg.vector_norm(torch.cat([p.grad.flatten() for p in parameters])).item())

    monkeypatch.setattr(torch.nn.utils, "clip_grads_with_norm_", spy)
    split = _split(16, 0)
    records = []
    config = TrainConfig(epochs=1, batch_size=8, lr=1e-3, grad_clip=1e-3)  # clips every step
    fit(_model(), split, split, config, 0, torch.device("cpu"), recorder=Steps(records, NOTHING))
    assert len(measured) == len(records) == 2
    for record, before, after in zip(records, measured, clipped, strict=True):
        layers = [v for k, v in record.items() if k.startswith("layer_grad_norm/")]
        assert len(layers) == 3  # embedding, layer0, head
        assert math.sqrt(sum(v**2 for v in layers)) == pytest.approx(record["grad_norm"], rel=1e-4)
        assert record["grad_norm"] == pytest.approx(before, rel=1e-5)  # the norm the gradients really had
        assert record["grad_norm"] > 10 * config.grad_clip
        assert after == pytest.approx(config.grad_clip, rel=1e-3)  # and clipping used it


def test_epoch_train_loss_is_plain_cross_entropy_while_steps_log_the_smoothed_objective():
    # A learning rate too small to move the weights and no dropout: the training loss of
    # the epoch is then the untrained model's loss on the training split.
    split = _split(16, 0)
    torch.manual_seed(0)
    model = TransformerClassifier(tiny_config(), 30)
    plain = F.cross_entropy(predict_logits(model, split, 64), split.labels).item()
    smoothed = F.cross_entropy(predict_logits(model, split, 64), split.labels, label_smoothing=0.3).item()
    assert abs(plain - smoothed) > 1e-3
    records = []
    config = TrainConfig(epochs=1, batch_size=8, lr=1e-12, label_smoothing=0.3, spans=0.0)  # whole texts
    history = fit(model, split, split, config, 0, torch.device("cpu"), recorder=Steps(records, NOTHING))
    assert history.epochs[0]["train_loss"] == pytest.approx(plain, abs=2e-5)
    assert sum(r["loss"] for r in records) / len(records) == pytest.approx(smoothed, abs=1e-4)


def test_the_loop_settings_come_from_the_section_and_the_train_sections_precision():
    train = TrainConfig(precision="bf16", log_every=3, ema_decay=0.5, grad_clip=2.0, schedule="constant")
    pretrain = PretrainConfig(epochs=2, grad_clip=0.5, schedule="constant", bucket_by_length=False, warmup_ratio=0.1)
    assert Settings.pretraining(pretrain, train) == Settings(
        epochs=2,
        batch_size=pretrain.batch_size,
        lr=pretrain.lr,
        weight_decay=pretrain.weight_decay,
        grad_clip=0.5,
        schedule="constant",
        warmup_ratio=0.1,
        bucket_by_length=False,
        ema_decay=0.0,  # pretraining keeps no moving average
        precision="bf16",
        log_every=3,
    )
    assert Settings.training(train) == Settings(**{f.name: getattr(train, f.name) for f in fields(Settings)})
    # The defaults are what pretraining hard-coded before they were params.
    default = Settings.pretraining(PretrainConfig(), TrainConfig())
    assert (default.grad_clip, default.schedule, default.bucket_by_length) == (1.0, "cosine", True)


class CountTeacher(nn.Module):
    """A fitted model stand-in: confident that a text is class 1 when token 1 outnumbers token 2."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.tensor(5.0))

    def forward(self, ids):
        margin = ((ids == 1).sum(1) - (ids == 2).sum(1)).float()
        return torch.stack([-margin, margin], dim=1) * self.scale


def test_the_distillation_target_mixes_the_labels_with_the_teachers_probabilities():
    model, teacher = _model(), CountTeacher()
    ids, labels = torch.tensor([[1, 1, 2], [2, 2, 1]]), torch.tensor([0, 0])
    target = Classification(model, teacher=teacher, distill=0.25).target(ids, labels, 2)
    taught = teacher(ids).softmax(1)
    assert torch.allclose(target, 0.75 * F.one_hot(labels, 2).float() + 0.25 * taught)
    assert Classification(model, teacher=teacher, distill=0.0).target(ids, labels, 2) is labels  # off: the labels


class Sure(nn.Module):
    """A fitted model stand-in that is sure of one class whatever the text."""

    def __init__(self, label: int):
        super().__init__()
        self.label = label

    def forward(self, ids):
        return F.one_hot(torch.full((len(ids),), self.label), 2).float() * 20


def test_an_out_of_fold_teacher_answers_each_row_from_the_fold_of_its_clean_text():
    teacher = OutOfFold([Sure(0), Sure(1)], pad_id=0)  # the model of fold j says class j
    objective = Classification(_model(), token_dropout=0.5, teacher=teacher, distill=1.0)
    ids = torch.randint(1, 30, (64, 12), generator=torch.Generator().manual_seed(0))
    noised, rows = objective.prepare(ids, torch.zeros(64, dtype=torch.long), torch.Generator().manual_seed(1))
    labels, folds = rows.unbind(1)
    assert torch.equal(folds, text_folds(ids, 2, 0))  # read before the noise ...
    assert not torch.equal(text_folds(noised, 2, 0), folds)  # ... which would have moved some rows
    assert torch.equal(objective.target(noised, labels, 2, folds).argmax(1), folds)
    assert objective(noised, rows).loss.isfinite()


def test_an_out_of_fold_base_adds_to_each_rows_logits_from_the_fold_of_its_clean_text():
    base = OutOfFold([Sure(0), Sure(1)], pad_id=0)  # the model of fold j says class j, with logits of 20
    objective = Classification(_model(), token_dropout=0.5, base=base)
    ids = torch.randint(1, 30, (64, 12), generator=torch.Generator().manual_seed(0))
    folds = text_folds(ids, 2, 0)
    noised, rows = objective.prepare(ids, folds, torch.Generator().manual_seed(1))  # labels: the folds
    assert torch.equal(rows[:, 1], folds)  # the folds of the clean texts travel with the labels
    result = objective(noised, rows)
    assert result.hits.item() == 64 and result.loss.item() < 1e-4  # the base's answer, added before the loss
    against = objective(noised, torch.stack([1 - folds, folds], dim=1))
    assert against.hits.item() == 0 and against.loss.item() > 64 * 10  # the base is frozen in, not averaged
    assert not any(p.requires_grad for p in base.parameters())


def test_validation_scores_a_network_with_its_base():
    """A network trained for a step hardly reads anything; with a base that knows the rule, validation says so."""
    split, honest = _split(64, 0), _split(128, 1)
    config = TrainConfig(epochs=1, batch_size=16, lr=1e-6)
    alone = fit(_model(), split, honest, config, 0, torch.device("cpu"))
    teacher = CountTeacher()
    based = fit(_model(), split, honest, config, 0, torch.device("cpu"), base=Base(teacher, teacher))
    # Ties (as many 1s as 2s, labelled 0) get no margin from the base: the rest it reads right.
    assert based.epochs[0]["val_accuracy"] > 0.75 > 0.5 > alone.epochs[0]["val_accuracy"]
    assert based.epochs[0]["train_accuracy"] > 0.75  # the train steps add it too


@pytest.mark.parametrize("distill", [0.0, 1.0])
def test_a_student_taught_by_a_teacher_follows_it_and_leaves_it_untrained(distill):
    """Labels say the opposite of the teacher: with distill = 1 the student learns the teacher's rule."""
    flipped, honest = _split(256, 0, flip=True), _split(128, 1)
    model, teacher = _model(), CountTeacher()
    config = TrainConfig(epochs=6, batch_size=16, lr=5e-3, token_dropout=0.2)
    fit(model, flipped, honest, config, 0, torch.device("cpu"), teacher=teacher, distill=distill)
    agrees = (predict_logits(model, honest, 64).argmax(1) == honest.labels).float().mean().item()
    if distill:
        assert agrees > 0.75  # the teacher's rule, learnt against the labels
        assert teacher.scale.item() == 5.0 and not teacher.scale.requires_grad  # frozen: never trained
    else:
        assert agrees < 0.25  # the labels' (flipped) rule


def _ngram_loop(sparse):
    """A Loop over a tiny model with a hashed n-gram table (bigrams and trigrams in 64 rows)."""
    torch.manual_seed(0)
    model = TransformerClassifier(tiny_config(ngram_max=3, ngram_buckets=64), 30)
    settings = Settings(epochs=2, batch_size=8, lr=1e-2, weight_decay=0.0, sparse_ngrams=sparse)
    return model, Loop(Classification(model), settings, seed=0, steps_per_epoch=1, device=torch.device("cpu"))


def _batch(seed):
    """One batch of 8 random texts of 6 tokens over 30: many distinct n-grams, so two batches use different rows."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, 30, (8, 6), generator=g)
    return ids, TokenizedSplit.from_sequences(list(ids), torch.randint(0, 2, (8,), generator=g))


class _Steps(Recorder):
    def __init__(self):
        self.records = []

    def step(self, record):
        self.records.append(record)


def test_sparse_ngram_tables_move_only_the_rows_a_batch_uses_and_log_the_true_gradient_norm():
    (ids1, first), (ids2, second) = _batch(1), _batch(2)

    def rows(ids):
        """The table rows a batch reads (row 0, "no n-gram", never trains)."""
        found = torch.zeros(65, dtype=torch.bool)
        found[torch.cat([o.flatten() for o in ngram_ids_upto(ids, 3, 64, 0)])] = True
        found[0] = False
        return found

    used, earlier = rows(ids2), rows(ids1) & ~rows(ids2)  # earlier: read by the first batch only
    norms, moved = {}, {}
    for sparse in (False, True):
        model, loop = _ngram_loop(sparse)
        steps = _Steps()
        loop.run_epoch(first, steps)
        before = model.ngrams.table.weight.detach().clone()
        loop.run_epoch(second, steps)
        if sparse:
            assert model.ngrams.table.weight.grad.is_sparse
        moved[sparse] = (model.ngrams.table.weight.detach() != before).any(dim=1)
        norms[sparse] = steps.records[0]["grad_norm"]
    assert earlier.sum() > 5 and moved[True][used].all()
    assert not moved[True][earlier].any()  # lazy Adam: a row waits for its n-gram
    assert moved[False][earlier].all()  # dense AdamW moves every row it has moments for
    assert norms[True] == pytest.approx(norms[False], rel=1e-5)  # same first step, same gradient norm


def test_each_epoch_logs_one_compact_line_with_time_and_an_estimate(caplog):
    with caplog.at_level(logging.INFO, logger="scratchformer.train.classify"):
        history = fit(_model(), _split(48, 3), _split(24, 4), TrainConfig(epochs=3, batch_size=8, lr=1e-2), 0, "cpu")
    lines = [r.getMessage() for r in caplog.records if r.name == "scratchformer.train.classify"]
    assert len(lines) == 3
    shape = (
        r"epoch (\d)/3  train loss \d\.\d{4} acc \d\.\d{4}  val loss (\d\.\d{4}) acc (\d\.\d{4})"
        r"  \S+ elapsed, ~\S+ left"
    )
    for line, record in zip(lines, history.epochs, strict=True):
        epoch, val_loss, val_accuracy = re.fullmatch(shape, line).groups()
        assert (int(epoch), float(val_loss), float(val_accuracy)) == (
            record["epoch"],
            round(record["val_loss"], 4),
            round(record["val_accuracy"], 4),
        )
        assert len(line) <= 120
    assert lines[-1].endswith("~0s left")


def test_where_no_bar_shows_a_progress_line_comes_at_least_every_interval(caplog, monkeypatch):
    monkeypatch.setattr(Progress, "every", 0.0)
    with caplog.at_level(logging.INFO, logger="scratchformer.train.loop"):
        Progress("epoch 1/2", 10, quiet=False).tick(4, 0.5)
        Progress("epoch 1/2", 10, quiet=True).tick(4, 0.5)  # a terminal: tqdm's bar says it
    assert [r.getMessage() for r in caplog.records] == ["epoch 1/2: step 4/10, loss 0.500, ~0s left in this epoch"]


@pytest.mark.parametrize(("span_length", "longest"), [("review", None), ("log", 30)])
def test_the_objective_crops_spans_as_train_span_length_says(span_length, longest):
    model = TransformerClassifier(tiny_config(max_len=32), vocab_size=50)
    objective = Classification(model, spans=1.0, span_length=span_length)
    assert objective.longest_span == longest  # log: up to the longest text the model reads, [CLS] and [SEP] aside


def test_clause_spans_are_whole_clauses_and_a_short_draw_is_one_clause():
    """``span_length=clause``: every span starts where a clause starts and ends where one ends."""
    from scratchformer.train.augment import crop_spans

    end, pad = 7, 0
    clauses = [5, 9, 3, 14, 6, 11]  # tokens of each clause, its closing punctuation included but the last's
    text = []
    for k, size in enumerate(clauses):
        text += [1000 + 100 * k + j for j in range(size - 1)] + [end]
    text = text[:-1]  # the review's last clause has no closing mark
    n = len(text)
    firsts = {1} | {1 + i + 1 for i, t in enumerate(text) if t == end}  # positions (after [CLS]) a clause starts at
    lasts = {1 + i for i, t in enumerate(text) if t == end} | {n}
    ids = torch.tensor([[101, *text, 102, pad, pad]] * 3000)
    cropped = crop_spans(ids, 1.0, pad, torch.Generator().manual_seed(0), 126, torch.tensor([end]))
    one_clause = 0
    for row in cropped.tolist():
        length = sum(t != pad for t in row) - 2
        assert row[0] == 101 and row[length + 1] == 102
        first = text.index(row[1]) + 1  # the position in the review the span starts at
        assert first in firsts and first + length - 1 in lasts, row
        assert row[1 : length + 1] == text[first - 1 : first - 1 + length]  # contiguous, as in the review
        one_clause += end not in row[1:length]  # no clause ends before the span's last token
    assert 0.1 < one_clause / len(cropped) < 0.5  # short draws: one clause; long ones: several or all
    windows = crop_spans(ids, 1.0, pad, torch.Generator().manual_seed(0), 126)  # without: windows cut clauses
    assert any((text.index(row[1]) + 1) not in firsts for row in windows.tolist())


def test_clause_spans_need_the_tokens_that_end_a_clause_and_training_crops_at_them():
    model = TransformerClassifier(tiny_config(), 30)
    with pytest.raises(ValueError, match="span_length=clause needs"):
        Classification(model, spans=0.5, span_length="clause")
    ids = torch.tensor([[1, 10, 11, 12, 13, 5, 14, 15, 16, 17, 18, 19, 2]] * 200)  # clauses 10..5 and 14..19
    for span_length, whole in (("clause", True), ("log", False)):
        objective = Classification(model, spans=1.0, span_length=span_length, clause_ends=torch.tensor([5]))
        cropped, _ = objective.prepare(ids, torch.zeros(200, dtype=torch.long), torch.Generator().manual_seed(0))
        starts = {row[1] for row in cropped.tolist()}
        assert (starts <= {10, 14}) == whole, starts  # a clause's first token, or anywhere in a window
