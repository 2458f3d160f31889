"""What training does to a batch before the model reads it: hide tokens, crop reviews to spans.

Both run in :meth:`~scratchformer.train.objective.Classification.prepare` on the whole global
batch with the loop's generator, so every process of a data-parallel run sees the same
corruption and a resumed run draws the same noise.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def drop_tokens(input_ids: Tensor, p: float, pad_id: int, generator: torch.Generator | None = None) -> Tensor:
    """Turn each real token but the first ([CLS]) into PAD with probability ``p``.

    A PAD is invisible to attention and pooling, so the model must classify the
    review from the remaining words ("word dropout"); it cannot lean on any
    single character or n-gram it has memorised.
    """
    drop = torch.rand(input_ids.shape, generator=generator, device=input_ids.device) < p  # (B, T)
    drop[:, 0] = False
    return input_ids.masked_fill(drop, pad_id)


SHORTEST_SPAN = 4  # tokens: a span shorter than this is rarely a phrase with a sentiment of its own
CLAUSE_ENDS = "，。！？；,.!?;~～…"  # the punctuation that ends a clause, in Chinese and Western text


def clause_end_ids(vocab: dict[str, int]) -> Tensor:
    """The ids of the tokens of ``vocab`` (a tokenizer's ``get_vocab()``) that are one of :data:`CLAUSE_ENDS`."""
    return torch.tensor(sorted(vocab[c] for c in CLAUSE_ENDS if c in vocab), dtype=torch.long)


def _whole_clauses(input_ids: Tensor, start: Tensor, span: Tensor, n: Tensor, ends: Tensor) -> tuple[Tensor, Tensor]:
    """The span ``start``, ``span`` widened to whole clauses: from its clause's first token to its last's end.

    A clause ends at a token of ``ends`` or at the text's last token ``n``; the next begins
    after it. The start moves back to the beginning of its clause and the last token forward
    to the end of its clause, so a span is one clause or more, never part of one.
    """
    T = input_ids.size(1)
    position = torch.arange(T, device=input_ids.device)[None, :]  # (1, T)
    text = (position >= 1) & (position <= n[:, None])  # (B, T) t_1 … t_n
    last_of_clause = (torch.isin(input_ids, ends.to(input_ids.device)) & text) | (position == n[:, None])
    first_of_clause = text & ((position == 1) | torch.nn.functional.pad(last_of_clause, (1, 0))[:, :-1])
    latest_first = torch.where(first_of_clause, position, 0).cummax(dim=1).values  # (B, T) clause start at or before
    next_last = torch.where(last_of_clause, position, T).flip(1).cummin(dim=1).values.flip(1)  # clause end at or after
    first = latest_first.gather(1, start[:, None]).squeeze(1)  # (B,)
    last = next_last.gather(1, (start + span - 1).clamp(min=0, max=T - 1)[:, None]).squeeze(1)  # (B,)
    return first, (last - first + 1).clamp(min=0)


def crop_spans(
    input_ids: Tensor,
    p: float,
    pad_id: int,
    generator: torch.Generator | None = None,
    longest: int | None = None,
    clause_ends: Tensor | None = None,
) -> Tensor:
    """Replace each row, with probability ``p``, by a random contiguous span of its text.

    A row is ``[CLS] t_1 … t_n [SEP]`` then PAD. A cropped row is ``[CLS] t_s … t_{s+l-1} [SEP]``,
    its start ``s`` uniform among the places the span fits; the label stays the review's.
    Reviews are long and the texts a reader types are short: training on spans too puts
    short texts in distribution, the way a bag of n-grams never minds the length.

    The span length ``l``:

    - ``longest`` None: uniform from ``min(4, n)`` to ``n``. A review's span is then as short
      as the review is, so the short spans come mostly from short reviews, and their label
      share becomes what the model expects of any short text;
    - ``longest`` L: log-uniform from 4 to L tokens, cut at ``n``: one distribution for every
      review, so a span's length says nothing of the review it came from, and about two in
      five spans are under 16 tokens at L = 126.

    With ``clause_ends`` (token ids, :func:`clause_end_ids`), the span drawn is then widened to
    whole clauses (it starts where its first clause starts and ends where its last clause
    ends): a short draw is one clause of the review, a sentence as a reader would type it,
    not a window that cuts words and clauses apart.
    """
    B, T = input_ids.shape
    lengths = (input_ids != pad_id).sum(dim=1)  # (B,) [CLS] and [SEP] included
    n = (lengths - 2).clamp(min=0)  # (B,) the text's own tokens
    shortest = n.clamp(max=SHORTEST_SPAN)
    u = torch.rand((3, B), generator=generator, device=input_ids.device)
    if longest is None:
        span = shortest + (u[0] * (n - shortest + 1)).long().clamp(max=n - shortest)  # (B,) in [shortest, n]
    else:
        low, high = math.log(SHORTEST_SPAN), math.log(max(longest, SHORTEST_SPAN) + 1)
        drawn = torch.exp(low + u[0] * (high - low)).long().clamp(SHORTEST_SPAN, max(longest, SHORTEST_SPAN))
        span = torch.minimum(drawn, n)  # (B,) in [shortest, n]: drawn >= 4
    start = 1 + (u[1] * (n - span + 1)).long().clamp(max=n - span)  # (B,) in [1, n - span + 1]
    if clause_ends is not None:
        start, span = _whole_clauses(input_ids, start, span, n, clause_ends)
    position = torch.arange(T, device=input_ids.device)  # (T,)
    source = (start[:, None] + position[None, :] - 1).clamp(0, T - 1)  # (B, T): position j reads t_{s+j-1}
    cropped = input_ids.gather(1, source)
    cropped[:, 0] = input_ids[:, 0]  # [CLS]
    sep = input_ids.gather(1, (lengths - 1).clamp(min=0)[:, None])  # (B, 1) each row's [SEP]
    cropped = torch.where(position[None, :] == span[:, None] + 1, sep, cropped)
    cropped = cropped.masked_fill(position[None, :] > span[:, None] + 1, pad_id)
    chosen = (u[2] < p) & (n > 0)  # (B,)
    return torch.where(chosen[:, None], cropped, input_ids)
