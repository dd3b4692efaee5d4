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
    # TODO (causal_mask): one line.
    #   Goal: an (L, L) bool tensor, True strictly above the diagonal (key j > query i).
    #   Use: torch.ones (dtype=torch.bool, device=device) and Tensor.triu. Check L = 3 by hand:
    #   is the diagonal allowed? (It must be: a token always sees itself.)
    ### BEGIN SOLUTION
    return torch.ones(L, L, dtype=torch.bool, device=device).triu(diagonal=1)
    ### END SOLUTION


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
    #   Goal: result[b, 0, 0, p] is True when position p >= lengths[b] (positions count from 0).
    #   1. Accept both a list and a tensor for lengths.  Use: torch.as_tensor.
    #   2. Compare every position (S,) with every length (B,) by broadcasting: give one of the
    #      two a new axis so the comparison comes out (B, S).  Use: torch.arange, None indexing.
    #   3. Add the head and query axes: (B, S) -> (B, 1, 1, S).
    ### BEGIN SOLUTION
    lengths = torch.as_tensor(lengths)
    positions = torch.arange(S, device=lengths.device)  # (S,)
    blocked = positions >= lengths[:, None]  # (S,) vs (B, 1) -> (B, S)
    return blocked[:, None, None, :]  # (B, 1, 1, S)
    ### END SOLUTION


def sliding_window_mask(L, window, device=None):
    """Causal local attention: query i sees keys i - window + 1 .. i (window keys at most).

    Returns:
        (L, L) bool tensor, True where key j > i (the future) or i - j >= window (too far back).

    Raises:
        ValueError: when window < 1 (a query must at least see itself).
    """
    # TODO (sliding_window_mask): about 5 lines.
    #   Goal: (L, L) bool, True where key j lies in the future (j > i) or too far back
    #   (i - j >= window).
    #   1. window < 1: raise ValueError with a message that gives the window you got.
    #   2. Query positions as a column (L, 1) and key positions as a row (1, L), on `device`:
    #      any comparison of the two broadcasts to (L, L).  Use: torch.arange, None indexing.
    #   3. Combine the two blocked conditions with the element-wise or, |.
    ### BEGIN SOLUTION
    if window < 1:
        raise ValueError(f"window must be at least 1 (a query always sees itself), got {window}")
    i = torch.arange(L, device=device)[:, None]  # (L, 1) query positions
    j = torch.arange(L, device=device)[None, :]  # (1, L) key positions
    return (j > i) | (i - j >= window)  # (L, L)
    ### END SOLUTION
