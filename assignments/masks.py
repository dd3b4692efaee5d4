# Generated from solutions/masks.py by `make stubs`. Fill in the TODO regions, then run
# `make grade` (or `make grade EX=masks`).
"""Exercise group 2: attention masks.

Mask convention: a bool tensor, True = blocked (the query may not attend to that key).
Masks broadcast to the scores' shape (..., L, S): row i is query i, column j is key j.
"""

import torch


def causal_mask(L, device=None):
    """The causal (look-ahead) mask: query i may attend to keys 0..i only.

    Returns:
        (L, L) bool tensor, True where key j > query i (the strict upper triangle).
        The diagonal is allowed: a token always sees itself.
    """
    # TODO (causal_mask): one line. torch.ones(L, L, dtype=torch.bool, device=device)
    #   and .triu(diagonal=...) give the strict upper triangle; think about which diagonal.
    raise NotImplementedError("causal_mask: not attempted yet")


def padding_mask(lengths, S):
    """Block the padding keys at the end of each sequence in a batch.

    Args:
        lengths: B true lengths, a list of ints or a 1-D integer tensor.
        S: the padded key length.

    Returns:
        (B, 1, 1, S) bool tensor, True at key positions >= lengths[b]. The two 1s let it
        broadcast over heads and query rows of scores shaped (B, H, L, S).
    """
    # TODO (padding_mask): about 3 lines.
    #   1. lengths = torch.as_tensor(lengths) accepts both a list and a tensor.
    #   2. Compare torch.arange(S) (positions, shape (S,)) with lengths[:, None] (shape (B, 1)):
    #      broadcasting gives (B, S). Position p is padding when p >= length (0-based!).
    #   3. Insert the head and query axes: [:, None, None, :] -> (B, 1, 1, S).
    raise NotImplementedError("padding_mask: not attempted yet")


def sliding_window_mask(L, window, device=None):
    """Causal local attention: query i sees keys i - window + 1 .. i (window keys at most).

    Returns:
        (L, L) bool tensor, True where key j > i (the future) or i - j >= window (too far back).

    Raises:
        ValueError: when window < 1 (a query must at least see itself).
    """
    # TODO (sliding_window_mask): about 5 lines.
    #   1. Raise ValueError with a message naming the window you got when window < 1.
    #   2. i = torch.arange(L)[:, None] (queries, as a column), j = torch.arange(L)[None, :].
    #   3. Blocked: the future (j > i) or too far back (i - j >= window). Combine with |.
    raise NotImplementedError("sliding_window_mask: not attempted yet")
