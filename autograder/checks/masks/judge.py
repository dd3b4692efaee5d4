"""Judge side of masks.py's checks: misconceptions, models of wrong masks, verdicts."""

from __future__ import annotations

import torch

from ...core import WRONG_DEVICE, WRONG_TYPE, CheckList, Failure, Misconceptions, no_reference
from ...trusted.attention import scaled_dot_product_attention
from ...verdicts import assert_close, close, model, tensor
from . import probe

misconception = Misconceptions(__name__)  # this module's (core.Misconceptions)

CHECKS = CheckList("masks")
# Paid in the worker before any student code, outside every check's CPU seconds
# (limits.warm_ups_of): the device checks call the masks with device='meta'.
WARM_UP = ("meta",)

# --------------------------------------------------------------------------- misconceptions

NOT_BOOL = misconception(
    "mask-not-bool",
    "{what} has dtype {got}; masks in this kit are bool tensors (True = blocked).",
    (
        "A mask in this kit answers yes or no for every (query, key) pair: blocked or not. A "
        "float or int tensor belongs to another convention (added to the scores, or multiplied "
        "with them), and code that uses your mask would read it wrongly.",
        "Build the mask from comparisons (>, >=) and the element-wise |, which give bool tensors, "
        "or create it with dtype=torch.bool.",
        "Your {what} has dtype {got}: compare positions (such as j > i), or pass dtype=torch.bool "
        "when you create the tensor you cut the triangle from.",
    ),
)
CAUSAL_DIAGONAL = misconception(
    "causal-blocks-diagonal",
    "Your causal mask blocks the diagonal: token i cannot attend to itself, and the first token "
    "sees nothing at all.",
    (
        "A token may always attend to itself: causal means no looking ahead, not no looking at "
        "the present. Blocking the diagonal also leaves the first token with no key at all.",
        "Block only the strict upper triangle, the entries where key j > query i. Tensor.triu's "
        "diagonal argument says where the triangle starts.",
        "triu with diagonal=1 (strictly above the diagonal), not diagonal=0 (which includes it). "
        "Check L = 3 by hand: the diagonal must be False.",
    ),
)
CAUSAL_TRANSPOSED = misconception(
    "causal-transposed",
    "Your causal mask is transposed: it blocks the past (key j < query i) instead of the future.",
    (
        "Rows are queries and columns are keys. Query i may look back at the keys j ≤ i; what it "
        "may not see is the future, the keys j > i, which lie above the diagonal.",
        "Block the upper triangle (Tensor.triu), not the lower one (Tensor.tril).",
        "triu(diagonal=1) on an (L, L) bool tensor of ones: row i is True at the columns j > i "
        "and False at the columns j ≤ i.",
    ),
)
CAUSAL_INVERTED = misconception(
    "causal-inverted",
    "Your causal mask marks the allowed keys with True; in this kit True means blocked.",
    (
        "In this kit True means blocked. A mask that marks the allowed keys with True does the "
        "opposite of what every caller of it expects.",
        "Return the keys to block (j > i), not the keys to keep (j ≤ i): negate your current mask "
        "(~), or take the other triangle with the right diagonal.",
        "True strictly above the diagonal, triu(diagonal=1), and False on and below it.",
    ),
)
PADDING_OFF_BY_ONE = misconception(
    "padding-off-by-one",
    "Your padding mask is off by one: with length n, positions 0..n-1 are real tokens and "
    "positions n.. are padding.",
    (
        "Positions count from 0: a sequence of length n has its real tokens at positions 0..n-1, "
        "and the padding starts at position n itself.",
        "Compare every position with its sequence's length using >= (at or past the end), not > "
        "and not against length - 1.",
        "Blocked where position >= length: torch.arange(S) compared with the lengths as a column, "
        "lengths[:, None], gives (B, S).",
    ),
)
PADDING_INVERTED = misconception(
    "padding-inverted",
    "Your padding mask marks the real tokens with True; in this kit True means blocked.",
    (
        "In this kit True means blocked. A padding mask must mark the padding keys, the ones no "
        "query may attend to, not the real tokens.",
        "The padding positions are the ones at or past each sequence's length: make those True, "
        "and the positions before the length False.",
        "True where p >= length (the padding), False where p < length (the real tokens).",
    ),
)
PADDING_AXES = misconception(
    "padding-missing-axes",
    "Your padding mask has shape {got}; it must be (B, 1, 1, S) to broadcast against scores "
    "shaped (B, H, L, S).",
    (
        "The scores of multi-head attention have shape (B, H, L, S). A padding mask depends only "
        "on the sequence b and the key position, so it needs axes of size 1 for the heads and the "
        "queries, and broadcasting repeats it over them.",
        "Insert two new axes of size 1 between the batch axis and the key axis: None indexing, or "
        "Tensor.unsqueeze twice.",
        "Your mask is {got}: index it with [:, None, None, :] to get (B, 1, 1, S).",
    ),
)
CAUSAL_MASK_LEAKS = misconception(
    "causal-mask-leaks",
    "Attention under your causal mask lets later tokens change the outputs of earlier ones.",
    (
        "A causal mask exists so that a position's output depends only on itself and the "
        "positions before it; with yours, later tokens still reach earlier outputs, so some "
        "future key is left unblocked.",
        "Every key j > i must be True in row i: the whole strict upper triangle, in every row.",
        "triu(diagonal=1) of an (L, L) tensor of ones, as bool. Check L = 3 by hand: row 0 must "
        "be [False, True, True], row 2 all False.",
    ),
)
CAUSAL_BLOCKS_PAST = misconception(
    "causal-blocks-past",
    "Under your causal mask, changing the tokens before position {t} did not change the output at "
    "position {t}: your mask blocks the past too.",
    (
        "Causal means that only the future is hidden. Every earlier key must stay visible, or the "
        "model cannot use its context.",
        "Block only the keys j > query i: in row i, the keys j < i and the key j = i must be "
        "False.",
        "Row {t} of your mask must be False at the columns 0..{t}; only the columns after {t} are "
        "True.",
    ),
)
WINDOW_OFF_BY_ONE = misconception(
    "window-off-by-one",
    "Your window is off by one: with window w, a query sees exactly w keys, itself and the w - 1 "
    "before it.",
    (
        "A window of w keys means that a query sees exactly w keys: itself and the w - 1 before "
        "it. Count them on a small case: with w = 2, query 5 sees keys 4 and 5.",
        "The distance back is i - j: block a key when that distance reaches the window size (>=), "
        "not only when it exceeds it.",
        "Blocked when i - j >= window (too far back), not i - j > window, with the query "
        "positions i as a column (L, 1) and the key positions j as a row (1, L).",
    ),
)
WINDOW_NOT_CAUSAL = misconception(
    "window-not-causal",
    "Your sliding window lets queries see future keys: the window must also be causal.",
    (
        "A sliding window is local causal attention: it limits how far back a query looks, and "
        "the future stays hidden as in any causal mask.",
        "Combine two blocked conditions with the element-wise or (|): the future (j > i) and too "
        "far back (i - j >= window).",
        "Add the future, j > i, to your distance condition with |; i is a column (L, 1) and j a "
        "row (1, L) of positions, so both conditions are (L, L).",
    ),
)
WINDOW_NO_ERROR = misconception(
    "window-no-valueerror",
    "sliding_window_mask(L, window={window}) should raise ValueError (a query must see at least "
    "itself), but {got}.",
    (
        "A query must at least see itself, so a window below 1 describes no valid mask. Bad input "
        "deserves a clear error at once, not an all-blocked mask that turns into NaN far away.",
        "Check the window before building anything, and raise ValueError when it is below 1, with "
        "a message that gives the value received.",
        "At the top of the function: when window < 1, raise ValueError with a message such as "
        "f'window must be at least 1, got {{window}}'.",
    ),
)
# --------------------------------------------------------------------------- models
# What a mask with a given mistake holds, to recognise that mistake (left out of the student
# copy: student_copy.py).


@model
def _upper(L, diagonal):
    return torch.ones(L, L, dtype=torch.bool).triu(diagonal)


@model
def _padding(lengths, S, how):
    """padding_mask with a mistake: `how` is "after" (p > length), "from-last" (p >= length
    - 1) or "inverted" (p < length)."""
    pos, ends = torch.arange(S), lengths[:, None]
    mask = {"after": pos > ends, "from-last": pos >= ends - 1, "inverted": pos < ends}[how]
    return mask[:, None, None]


@model
def window_with_mistake(L, w, how):
    """sliding_window_mask with a mistake: `how` is "wider" (i - j > w), "narrower" (i - j
    >= w - 1), "two-sided" (|i - j| >= w) or "future" (i - j >= w, the future let in).
    efficient's local_attention judge names the same mistakes with it."""
    i, j = torch.arange(L)[:, None], torch.arange(L)[None, :]
    if how == "wider":
        return (j > i) | (i - j > w)
    if how == "narrower":
        return (j > i) | (i - j >= w - 1)
    if how == "two-sided":
        return (i - j).abs() >= w
    return i - j >= w


# --------------------------------------------------------------------------- helpers


def _bool_mask(got, key, what, shape):
    value = tensor(got, key, what)
    if value.dtype != torch.bool:
        raise Failure(NOT_BOOL, what=what, got=value.dtype)
    if tuple(value.shape) != tuple(shape):
        tensor(got, key, what, shape=shape)  # raises the shape failure
    return value


def _attend(q, k, v, mask):
    """Attention in float64 under a bool mask (fully blocked rows give 0), the trusted one
    (kept in the student copy): the judge runs it itself, so only the student's mask decides
    the outputs."""
    return scaled_dot_product_attention(q.double(), k.double(), v.double(), mask)[0]


def _device_verdict(got, call):
    kind = got.get("type")
    if kind != "Tensor":
        raise Failure(WRONG_TYPE, what=f"{call}'s result", expected="a torch.Tensor", got=kind)
    if got.get("device") != "meta":
        raise Failure(WRONG_DEVICE, what=f"{call}'s mask", got=got.get("device"), expected="meta")


# --------------------------------------------------------------------------- causal_mask


CAUSAL_MASK = CHECKS.exercise("causal_mask", probe=probe.probe_causal)


@CAUSAL_MASK.check(
    "causal",
    "causal_mask matches the reference: True exactly where key j > query i "
    "(L = 1, 2 and two drawn lengths)",
    2,
    inputs=probe.inputs_causal,
)
def verdict_causal(got, want, x):
    for n, L in enumerate(x["lengths"]):
        mask = _bool_mask(got, f"m{n}", f"causal_mask({L})", (L, L))
        assert_close(
            mask,
            want[f"m{n}"],
            f"causal_mask({L})",
            [
                (CAUSAL_DIAGONAL, lambda L=L: _upper(L, 0), {}),
                (CAUSAL_TRANSPOSED, lambda L=L: _upper(L, 1).T, {}),
                (CAUSAL_TRANSPOSED, lambda L=L: _upper(L, 0).T, {}),
                (CAUSAL_INVERTED, lambda L=L: ~_upper(L, 1), {}),
            ],
        )


@CAUSAL_MASK.check(
    "causal-device",
    "causal_mask puts the mask on the device it is given (device='meta')",
    1,
    inputs=probe.inputs_device,
    probe=probe.probe_causal_device,
)
@no_reference
def verdict_causal_device(got, want, x):
    _device_verdict(got, f"causal_mask({x['L']}, device='meta')")


@CAUSAL_MASK.check(
    "causal-invariance",
    "attention under causal_mask: the future cannot change the past, the past reaches later "
    "positions",
    1,
    inputs=probe.inputs_invariance,
    probe=probe.probe_causal_mask_only,
)
@no_reference
def verdict_causal_invariance(got, want, x):
    """Judged on the student's mask alone, with attention run here: whether the mask is
    exactly the reference is the "causal" check's business, not this one's."""
    T, t = x["T"], x["t"]
    mask = tensor(got, "mask", f"causal_mask({T})", shape=(T, T))
    if mask.dtype != torch.bool:  # a 0/1 mask is the "causal" check's finding, not this one's
        mask = mask != 0
    out, out2, out3 = (
        _attend(x["q" + tag], x["k" + tag], x["v" + tag], mask) for tag in ("", "2", "3")
    )
    if not close(out[:, :t], out2[:, :t]):
        raise Failure(CAUSAL_MASK_LEAKS)
    if close(out[:, t], out3[:, t]):
        raise Failure(CAUSAL_BLOCKS_PAST, t=t)


# --------------------------------------------------------------------------- padding_mask


PADDING_MASK = CHECKS.exercise("padding_mask", probe=probe.probe_padding)


@PADDING_MASK.check(
    "padding",
    "padding_mask matches the reference from a list and from a tensor, shape (B, 1, 1, S)",
    2,
    inputs=probe.inputs_padding,
)
def verdict_padding(got, want, x):
    for name in ("list", "tensor"):
        lengths, S = x[name], x[f"S_{name}"]
        what = f"padding_mask({lengths!r}, {S})"
        lengths = torch.as_tensor(lengths)
        value = tensor(got, name, what)
        if value.dtype != torch.bool:
            raise Failure(NOT_BOOL, what=what, got=value.dtype)
        if value.dim() != 4 and value.numel() == lengths.numel() * S:
            raise Failure(PADDING_AXES, got=tuple(value.shape))
        mask = _bool_mask(got, name, what, (len(lengths), 1, 1, S))
        assert_close(
            mask,
            want[name],
            what,
            [
                (PADDING_OFF_BY_ONE, lambda n=lengths, S=S: _padding(n, S, "after"), {}),
                (PADDING_OFF_BY_ONE, lambda n=lengths, S=S: _padding(n, S, "from-last"), {}),
                (PADDING_INVERTED, lambda n=lengths, S=S: _padding(n, S, "inverted"), {}),
            ],
        )


# --------------------------------------------------------------------------- sliding window


SLIDING_WINDOW_MASK = CHECKS.exercise("sliding_window_mask", probe=probe.probe_window)


@SLIDING_WINDOW_MASK.check(
    "window",
    "sliding_window_mask matches the reference for windows 1, 2, one drawn, L and beyond L",
    2,
    inputs=probe.inputs_window,
)
def verdict_window(got, want, x):
    L = x["L"]
    for n, w in enumerate(x["windows"]):
        what = f"sliding_window_mask({L}, window={w})"
        mask = _bool_mask(got, f"w{n}", what, (L, L))
        assert_close(
            mask,
            want[f"w{n}"],
            what,
            [
                (WINDOW_OFF_BY_ONE, lambda w=w: window_with_mistake(L, w, "wider"), {}),
                (WINDOW_OFF_BY_ONE, lambda w=w: window_with_mistake(L, w, "narrower"), {}),
                (WINDOW_NOT_CAUSAL, lambda w=w: window_with_mistake(L, w, "two-sided"), {}),
                (WINDOW_NOT_CAUSAL, lambda w=w: window_with_mistake(L, w, "future"), {}),
            ],
        )


@SLIDING_WINDOW_MASK.check(
    "window-errors",
    "sliding_window_mask rejects window < 1 with ValueError",
    1,
    inputs=probe.inputs_window_errors,
    probe=probe.probe_window_errors,
)
@no_reference
def verdict_window_errors(got, want, x):
    for n, w in enumerate(x["windows"]):
        if got.get(f"w{n}") != "ValueError":
            raise Failure(WINDOW_NO_ERROR, window=w, got=got.get(f"w{n}"))


@SLIDING_WINDOW_MASK.check(
    "window-device",
    "sliding_window_mask puts the mask on the device it is given (device='meta')",
    1,
    inputs=probe.inputs_device,
    probe=probe.probe_window_device,
)
@no_reference
def verdict_window_device(got, want, x):
    _device_verdict(got, f"sliding_window_mask({x['L']}, {x['window']}, device='meta')")
