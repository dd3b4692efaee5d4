"""Judge side of masks.py's checks: misconceptions, models of wrong masks, verdicts."""

from __future__ import annotations

import math

import torch

from ...core import WRONG_DEVICE, WRONG_TYPE, CheckList, Failure, misconception
from ...verdicts import assert_close, close, tensor
from . import probe

CHECKS = CheckList("masks")
# Paid in the worker before any student code, outside every check's CPU seconds
# (limits.warm_ups_of): the device checks call the masks with device='meta'.
WARM_UP = ("meta",)

# --------------------------------------------------------------------------- misconceptions

NOT_BOOL = misconception(
    "mask-not-bool",
    "{what} has dtype {got}; masks in this kit are bool tensors (True = blocked).",
    "Build it from comparisons (>, >=) or with dtype=torch.bool; a float or int mask would be "
    "added to or multiplied with the scores, a different convention.",
)
CAUSAL_DIAGONAL = misconception(
    "causal-blocks-diagonal",
    "Your causal mask blocks the diagonal: token i cannot attend to itself, and the first "
    "token sees nothing at all.",
    "Only the strict future is blocked: triu(diagonal=1), not triu(diagonal=0).",
)
CAUSAL_TRANSPOSED = misconception(
    "causal-transposed",
    "Your causal mask is transposed: it blocks the past (key j < query i) instead of the future.",
    "Rows are queries, columns are keys: block j > i, the upper triangle (triu), not tril.",
)
CAUSAL_INVERTED = misconception(
    "causal-inverted",
    "Your causal mask marks the allowed keys with True; in this kit True means blocked.",
    "Return the positions to block (the strict upper triangle), not the ones to keep.",
)
PADDING_OFF_BY_ONE = misconception(
    "padding-off-by-one",
    "Your padding mask is off by one: with length n, positions 0..n-1 are real tokens and "
    "positions n.. are padding.",
    "Block positions p >= length (0-based), not p > length or p >= length - 1.",
)
PADDING_INVERTED = misconception(
    "padding-inverted",
    "Your padding mask marks the real tokens with True; in this kit True means blocked.",
    "Return True at the padding positions, p >= length.",
)
PADDING_AXES = misconception(
    "padding-missing-axes",
    "Your padding mask has shape {got}; it must be (B, 1, 1, S) to broadcast against scores "
    "shaped (B, H, L, S).",
    "Insert the head and query axes: mask[:, None, None, :].",
)
CAUSAL_MASK_LEAKS = misconception(
    "causal-mask-leaks",
    "Attention under your causal mask lets later tokens change the outputs of earlier ones.",
    "Block every key j > i for query i: the strict upper triangle.",
)
CAUSAL_BLOCKS_PAST = misconception(
    "causal-blocks-past",
    "Under your causal mask, changing the tokens before position {t} did not change the "
    "output at position {t}: your mask blocks the past too.",
    "A causal mask blocks only the future (key j > query i); every earlier key stays visible.",
)
WINDOW_OFF_BY_ONE = misconception(
    "window-off-by-one",
    "Your window is off by one: with window w, a query sees exactly w keys, itself and the "
    "w - 1 before it.",
    "Block i - j >= window (too far back), not i - j > window.",
)
WINDOW_NOT_CAUSAL = misconception(
    "window-not-causal",
    "Your sliding window lets queries see future keys: the window must also be causal.",
    "Block j > i as well as i - j >= window, combined with |.",
)
WINDOW_NO_ERROR = misconception(
    "window-no-valueerror",
    "sliding_window_mask(L, window={window}) should raise ValueError (a query must see at "
    "least itself), but {got}.",
    "Start with: if window < 1: raise ValueError(f'window must be at least 1, got {{window}}').",
)
# --------------------------------------------------------------------------- helpers


def _bool_mask(got, key, what, shape):
    value = tensor(got, key, what)
    if value.dtype != torch.bool:
        raise Failure(NOT_BOOL, what=what, got=value.dtype)
    if tuple(value.shape) != tuple(shape):
        tensor(got, key, what, shape=shape)  # raises the shape failure
    return value


def _upper(L, diagonal):
    return torch.ones(L, L, dtype=torch.bool).triu(diagonal)


def _attend(q, k, v, mask):
    """Attention in float64 under a bool mask (fully blocked rows give 0): the judge runs it
    itself, so only the student's mask decides the outputs."""
    scores = q.double() @ k.double().transpose(-2, -1) / math.sqrt(q.size(-1))
    weights = scores.masked_fill(mask, float("-inf")).softmax(dim=-1)
    weights = weights.masked_fill(mask.all(dim=-1, keepdim=True), 0.0)
    return weights @ v.double()


def _device_verdict(got, call):
    kind = got.get("type")
    if kind != "Tensor":
        raise Failure(WRONG_TYPE, what=f"{call}'s result", expected="a torch.Tensor", got=kind)
    if got.get("device") != "meta":
        raise Failure(WRONG_DEVICE, what=f"{call}'s mask", got=got.get("device"), expected="meta")


# --------------------------------------------------------------------------- causal_mask


@CHECKS.check(
    "causal",
    "causal_mask matches the reference: True exactly where key j > query i "
    "(L = 1, 2 and two drawn lengths)",
    2,
    inputs=probe.inputs_causal,
    probe=probe.probe_causal,
    exercise="causal_mask",
)
def verdict_causal(got, want, x):
    for n, L in enumerate(x["lengths"]):
        mask = _bool_mask(got, f"m{n}", f"causal_mask({L})", (L, L))
        assert_close(
            mask,
            want[f"m{n}"],
            f"causal_mask({L})",
            [
                (CAUSAL_DIAGONAL, _upper(L, 0), {}),
                (CAUSAL_TRANSPOSED, _upper(L, 1).T, {}),
                (CAUSAL_TRANSPOSED, _upper(L, 0).T, {}),
                (CAUSAL_INVERTED, ~_upper(L, 1), {}),
            ],
        )


@CHECKS.check(
    "causal-device",
    "causal_mask puts the mask on the device it is given (device='meta')",
    1,
    inputs=probe.inputs_device,
    probe=probe.probe_causal_device,
    exercise="causal_mask",
)
def verdict_causal_device(got, want, x):
    _device_verdict(got, f"causal_mask({x['L']}, device='meta')")


@CHECKS.check(
    "causal-invariance",
    "attention under causal_mask: the future cannot change the past, the past reaches later "
    "positions",
    1,
    inputs=probe.inputs_invariance,
    probe=probe.probe_causal_mask_only,
    exercise="causal_mask",
)
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


@CHECKS.check(
    "padding",
    "padding_mask matches the reference from a list and from a tensor, shape (B, 1, 1, S)",
    2,
    inputs=probe.inputs_padding,
    probe=probe.probe_padding,
    exercise="padding_mask",
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
        pos = torch.arange(S)
        assert_close(
            mask,
            want[name],
            what,
            [
                (PADDING_OFF_BY_ONE, (pos > lengths[:, None])[:, None, None], {}),
                (PADDING_OFF_BY_ONE, (pos >= lengths[:, None] - 1)[:, None, None], {}),
                (PADDING_INVERTED, (pos < lengths[:, None])[:, None, None], {}),
            ],
        )


# --------------------------------------------------------------------------- sliding window


@CHECKS.check(
    "window",
    "sliding_window_mask matches the reference for windows 1, 2, one drawn, L and beyond L",
    2,
    inputs=probe.inputs_window,
    probe=probe.probe_window,
    exercise="sliding_window_mask",
)
def verdict_window(got, want, x):
    L = x["L"]
    i, j = torch.arange(L)[:, None], torch.arange(L)[None, :]
    for n, w in enumerate(x["windows"]):
        what = f"sliding_window_mask({L}, window={w})"
        mask = _bool_mask(got, f"w{n}", what, (L, L))
        assert_close(
            mask,
            want[f"w{n}"],
            what,
            [
                (WINDOW_OFF_BY_ONE, (j > i) | (i - j > w), {}),
                (WINDOW_OFF_BY_ONE, (j > i) | (i - j >= w - 1), {}),
                (WINDOW_NOT_CAUSAL, (i - j).abs() >= w, {}),
                (WINDOW_NOT_CAUSAL, i - j >= w, {}),
            ],
        )


@CHECKS.check(
    "window-errors",
    "sliding_window_mask rejects window < 1 with ValueError",
    1,
    inputs=probe.inputs_window_errors,
    probe=probe.probe_window_errors,
    exercise="sliding_window_mask",
)
def verdict_window_errors(got, want, x):
    for n, w in enumerate(x["windows"]):
        if got.get(f"w{n}") != "ValueError":
            raise Failure(WINDOW_NO_ERROR, window=w, got=got.get(f"w{n}"))


@CHECKS.check(
    "window-device",
    "sliding_window_mask puts the mask on the device it is given (device='meta')",
    1,
    inputs=probe.inputs_device,
    probe=probe.probe_window_device,
    exercise="sliding_window_mask",
)
def verdict_window_device(got, want, x):
    _device_verdict(got, f"sliding_window_mask({x['L']}, {x['window']}, device='meta')")
