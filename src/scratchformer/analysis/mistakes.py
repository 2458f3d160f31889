"""Why is it wrong: the validation mistakes a model is surest of, and the tokens they share.

Two views of the same mistakes:

1. The ``n`` most confident mistakes — wrong answers given with the highest
   probability — each with the tokens its decision rested on (the signed token
   relevance of :mod:`scratchformer.analysis.relevance`, the one ``predict`` prints,
   toward the wrong class predicted; the ``highlight`` tokens of largest magnitude
   are marked, whichever way they pushed).
   Confident mistakes are where label noise, sarcasm and spurious cues show up
   first: a review labelled positive that reads negative, or a word that the
   training data taught the wrong sentiment.
2. The tokens over-represented in the mistakes against the correct answers.
   Each token counts once per review (document frequency), so one long review
   repeating a word cannot dominate. With M mistakes of which m contain the
   token, and C correct answers of which c do, the score is the log-ratio of
   the add-one smoothed rates,

       score = ln((m + 1) / (M + 2)) − ln((c + 1) / (C + 2)),

   > 0 when the token is commoner in mistakes. A token must occur in at least
   ``min_count`` mistakes: a token seen in one mistake and no correct answer
   would otherwise top the table on a single review.

A mistake can be the label's rather than the model's: a review labelled negative that
reads "东西不错…赞一个". The download stage ranks every validation label by how unlikely
an n-gram model that never saw it finds it (:mod:`scratchformer.analysis.label_issues`);
a mistake whose label cleanlab flags there is marked ``suspect``, and the flagged labels
are listed on their own, with the model's answer beside them.

Nothing here draws or writes files (see :mod:`scratchformer.render.mistakes_page`).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd
import torch
from torch import Tensor
from transformers import PreTrainedTokenizerBase

from scratchformer.analysis.relevance import explain
from scratchformer.config import ErrorsConfig
from scratchformer.data.tokenized_split import TokenizedSplit, batches, pad_batch
from scratchformer.model.checkpoint import CorruptFileError
from scratchformer.model.classifier import Classifier, eval_mode

DECIMALS = 4  # probabilities and relevances are written, and ranked, at this precision


@dataclass(frozen=True)
class Token:
    text: str  # the vocabulary item ("##" marks a word piece that continues the previous one)
    relevance: float  # signed, toward the predicted class: > 0 pushed toward the mistake, < 0 against it
    marked: bool  # one of the text's ``highlight`` tokens of largest |relevance|


@dataclass(frozen=True)
class Mistake:
    row: int  # position in the split
    true: str
    predicted: str
    probability: float  # of the predicted class
    tokens: list[Token]  # the tokens the model read, [CLS]/[SEP] left out, in order
    suspect: bool = False  # the label itself looks wrong (cleanlab flags it; see SuspectLabel)


@dataclass(frozen=True)
class SuspectLabel:
    """A validation label that looks wrong: one row of plots/label_issues/validation.csv that cleanlab flags."""

    row: int  # position in the split
    label: str  # the label the corpus gives
    suggested: str  # NB-LR's most probable class
    score: float  # cleanlab's label quality score (the given label's probability), low = suspect
    text: str
    model: str = ""  # what the model answers for the review


@dataclass(frozen=True)
class OverRepresented:
    token: str
    in_mistakes: int  # mistakes containing the token
    in_correct: int  # correct answers containing it
    score: float  # smoothed log-ratio of the two rates (module docstring)


@dataclass(frozen=True)
class ErrorReport:
    split: str
    total: int  # examples in the split
    n_mistakes: int
    mistakes: list[Mistake]  # the most confident first, at most config.n
    tokens: list[OverRepresented]  # the most over-represented first, at most config.tokens
    config: ErrorsConfig
    suspects: list[SuspectLabel] = field(default_factory=list)  # most suspect first, at most config.n
    n_suspects: int = 0  # validation labels cleanlab flags in all


def read_suspects(path: str | Path) -> list[SuspectLabel]:
    """The rows cleanlab flags in a label-issue CSV (plots/label_issues/<split>.csv), in its order."""
    frame = pd.read_csv(path, dtype={"text": str, "label": str, "suggested": str}, keep_default_na=False)
    missing = {"row", "text", "label", "suggested", "score", "issue"} - set(frame.columns)
    if missing:
        raise CorruptFileError(f"{path}: no column {', '.join(sorted(missing))}; run `dvc repro download`")
    flagged = frame[frame["issue"].astype(str) == "True"]
    return [
        SuspectLabel(int(r.row), r.label, r.suggested, float(r.score), r.text) for r in flagged.itertuples(index=False)
    ]


def most_confident_mistakes(probabilities: Tensor, labels: Tensor, n: int) -> list[int]:
    """Rows of the ``n`` wrong answers with the highest predicted probability.

    ``probabilities`` is (N, K). Ranking is on the probability rounded to
    ``DECIMALS`` (what the report prints), ties by row, so the order is the same
    on machines whose float arithmetic differs in the last bits.
    """
    confidence, predicted = probabilities.max(dim=1)  # (N,), (N,)
    wrong = (predicted != labels).nonzero().flatten().tolist()
    return sorted(wrong, key=lambda i: (-round(float(confidence[i]), DECIMALS), i))[:n]


def over_represented(
    in_mistakes: list[set[str]], in_correct: list[set[str]], min_count: int, top: int
) -> list[OverRepresented]:
    """The ``top`` tokens most over-represented in the mistakes (score > 0), best first.

    Each argument holds one set of tokens per review; see the module docstring
    for the score.
    """
    m_count, c_count = Counter(t for s in in_mistakes for t in s), Counter(t for s in in_correct for t in s)
    M, C = len(in_mistakes), len(in_correct)
    rows = []
    for token, m in m_count.items():
        if m < min_count:
            continue
        c = c_count[token]
        score = round(math.log((m + 1) / (M + 2)) - math.log((c + 1) / (C + 2)), DECIMALS)
        if score > 0:
            rows.append(OverRepresented(token, m, c, score))
    rows.sort(key=lambda r: (-r.score, -r.in_mistakes, r.token))
    return rows[:top]


def _relevance(sequences: list[Tensor], model: Classifier, fixed: set[int], batch_size: int) -> list[Tensor]:
    """The signed relevance (T_r,) of each sequence toward its predicted class; ``fixed`` ids get none."""
    out: list[Tensor] = []
    for start in range(0, len(sequences), batch_size):
        batch = sequences[start : start + batch_size]
        relevance = explain(model, pad_batch(batch, model.pad_id), fixed).relevance  # (B, T)
        out += [row[: len(x)] for row, x in zip(relevance, batch, strict=True)]
    return out


@torch.no_grad()
def analyse(
    model: Classifier,
    split: TokenizedSplit,
    tokenizer: PreTrainedTokenizerBase,
    names: list[str],
    config: ErrorsConfig,
    split_name: str = "validation",
    batch_size: int = 256,
    suspects: list[SuspectLabel] = (),
) -> ErrorReport:
    """Run ``model`` over ``split`` and collect its most confident mistakes and their tokens.

    ``suspects``: the split's labels that look wrong, most suspect first; the mistakes
    among them are marked, and the first ``config.n`` are listed with the model's answer.
    """
    if len(split) == 0:
        raise ValueError(f"the {split_name} split is empty: there is nothing to analyse")
    if len(names) != model.config.num_classes:
        raise ValueError(f"{len(names)} class names for a model with {model.config.num_classes} outputs")
    probabilities = []
    with eval_mode(model):
        for ids, _ in batches(split, batch_size, model.pad_id):  # in the split's order
            probabilities.append(model(ids).float().softmax(dim=-1))  # (B, K)
    probs = torch.cat(probabilities)  # (N, K)
    # [UNK] stays: a character the vocabulary lacks is part of what the model read.
    structural = set(tokenizer.all_special_ids) - {tokenizer.unk_token_id}
    sequences = [split.sequence(r) for r in range(len(split))]  # (T_r,) each; a validation split is small
    kept = [[i for i, t in enumerate(x.tolist()) if t not in structural] for x in sequences]
    words = [set(tokenizer.convert_ids_to_tokens(x[kept[r]].tolist())) for r, x in enumerate(sequences)]
    wrong = probs.argmax(dim=1) != split.labels  # (N,)
    outside = [s.row for s in suspects if not 0 <= s.row < len(split)]
    if outside:
        raise ValueError(f"label issue row {outside[0]} is not in the {split_name} split of {len(split)} rows")
    suspect_rows = {s.row for s in suspects}

    mistakes = []
    chosen = most_confident_mistakes(probs, split.labels, config.n)
    relevance = _relevance([sequences[r] for r in chosen], model, structural, batch_size)  # explained: the n only
    for r, row_relevance in zip(chosen, relevance, strict=True):
        ids, scores = sequences[r][kept[r]].tolist(), row_relevance[kept[r]].tolist()
        order = sorted(range(len(ids)), key=lambda i: (-round(abs(scores[i]), DECIMALS), i))
        marked = set(order[: config.highlight])
        tokens = [
            Token(t, round(s, DECIMALS), i in marked)
            for i, (t, s) in enumerate(zip(tokenizer.convert_ids_to_tokens(ids), scores, strict=True))
        ]
        k = int(probs[r].argmax())
        p = round(float(probs[r, k]), DECIMALS)
        mistakes.append(Mistake(r, names[int(split.labels[r])], names[k], p, tokens, r in suspect_rows))
    table = over_represented(
        [words[r] for r in range(len(split)) if wrong[r]],
        [words[r] for r in range(len(split)) if not wrong[r]],
        config.min_count,
        config.tokens,
    )
    answered = [replace(s, model=names[int(probs[s.row].argmax())]) for s in suspects[: config.n]]
    return ErrorReport(split_name, len(split), int(wrong.sum()), mistakes, table, config, answered, len(suspects))
