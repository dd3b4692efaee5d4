"""Checks for masks.py: causal_mask, padding_mask, sliding_window_mask."""

from __future__ import annotations

import torch

from ..core import WRONG_DEVICE, Check, Failure, misconception
from ..trusted.attention import scaled_dot_product_attention as trusted_attention
from ..verdicts import assert_close, close, tensor
from ._common import randn

MODULE = "masks"
ORDER = 20

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


def _bool_mask(got, key, what, shape):
    value = tensor(got, key, what)
    if value.dtype != torch.bool:
        raise Failure(NOT_BOOL, what=what, got=value.dtype)
    if tuple(value.shape) != tuple(shape):
        tensor(got, key, what, shape=shape)  # raises the shape failure
    return value


def _upper(L, diagonal):
    return torch.ones(L, L, dtype=torch.bool).triu(diagonal)


# --------------------------------------------------------------------------- causal_mask

# Sizes are drawn from the seed (as every input is), so that the hidden tier asks for
# masks the public reference outputs never showed.


def _draw(gen, low, high):
    return int(torch.randint(low, high + 1, (), generator=gen))


def inputs_device(gen):
    return {"like": torch.zeros(1)}  # carries the grading device to the probe


def inputs_causal(gen):
    return {"lengths": [1, 2, _draw(gen, 3, 9), _draw(gen, 10, 16)]}


def probe_causal(mod, x):
    return {f"m{n}": mod.causal_mask(L) for n, L in enumerate(x["lengths"])}


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


def probe_causal_device(mod, x):
    device = x["like"].device  # the grading device (--device)
    mask = mod.causal_mask(3, device=device)
    # Tensors come back to the CPU after the probe, so record where the mask was made.
    return {"mask": mask, "mask_device": str(getattr(mask, "device", None)), "device": str(device)}


def verdict_causal_device(got, want, x):
    mask = _bool_mask(got, "mask", "causal_mask(3, device=...)", (3, 3))
    if got.get("mask_device") != got.get("device"):
        raise Failure(
            WRONG_DEVICE, what="the mask", got=got.get("mask_device"), expected=got.get("device")
        )
    assert_close(mask, want["mask"], "causal_mask(3)")


def probe_causal_invariance(mod, x):
    mask = mod.causal_mask(x["q"].size(-2))
    if type(mask) is not torch.Tensor or mask.dtype != torch.bool:
        raise Failure(NOT_BOOL, what="causal_mask(6)", got=getattr(mask, "dtype", type(mask)))
    got = {}
    for tag in ("", "2"):
        out, _ = trusted_attention(x["q" + tag], x["k" + tag], x["v" + tag], mask=mask)
        got["out" + tag] = out
    return got


def inputs_invariance(gen):
    T = 6
    x = {n: randn(gen, 2, T, 8) for n in ("q", "k", "v")}
    for n in ("q", "k", "v"):
        x[n + "2"] = x[n].clone()
        x[n + "2"][:, 3:] = randn(gen, 2, T - 3, 8, scale=3.0)
    return x


def verdict_causal_invariance(got, want, x):
    out = tensor(got, "out", "attention under your causal mask", shape=want["out"].shape)
    out2 = tensor(got, "out2", "attention under your causal mask", shape=want["out"].shape)
    if not close(out[:, :3], out2[:, :3]):
        raise Failure(CAUSAL_MASK_LEAKS)
    assert_close(out, want["out"], "attention under your causal mask")


# --------------------------------------------------------------------------- padding_mask


def inputs_padding(gen):
    S1, S2 = _draw(gen, 4, 9), _draw(gen, 4, 9)
    as_list = [S1, 1] + [_draw(gen, 1, S1) for _ in range(2)]  # one full, one of length 1
    as_tensor = torch.randint(1, S2 + 1, (3,), generator=gen)
    return {"list": as_list, "S_list": S1, "tensor": as_tensor, "S_tensor": S2}


def probe_padding(mod, x):
    return {name: mod.padding_mask(x[name], x[f"S_{name}"]) for name in ("list", "tensor")}


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


def inputs_window(gen):
    L = _draw(gen, 5, 10)
    return {"L": L, "windows": [1, 2, _draw(gen, 3, L - 1), L, L + 3]}


def probe_window(mod, x):
    return {f"w{n}": mod.sliding_window_mask(x["L"], w) for n, w in enumerate(x["windows"])}


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


def probe_window_errors(mod, x):
    got = {}
    for w in (0, -2):
        try:
            mod.sliding_window_mask(4, w)
            got[f"w{w}"] = "returned a mask"
        except ValueError:
            got[f"w{w}"] = "ValueError"
        except NotImplementedError:
            raise
        except Exception as e:  # the wrong exception is a finding, not a crash
            got[f"w{w}"] = f"raised {type(e).__name__}"
    return got


def verdict_window_errors(got, want, x):
    for w in (0, -2):
        if got.get(f"w{w}") != "ValueError":
            raise Failure(WINDOW_NO_ERROR, window=w, got=got.get(f"w{w}"))


CHECKS = [
    Check(
        MODULE,
        "causal",
        "causal_mask blocks exactly the future (L = 1, 2 and two drawn lengths)",
        2,
        inputs_causal,
        probe_causal,
        verdict_causal,
        "causal_mask",
    ),
    Check(
        MODULE,
        "causal-device",
        "causal_mask puts the mask on the device it is given",
        1,
        inputs_device,
        probe_causal_device,
        verdict_causal_device,
        "causal_mask",
    ),
    Check(
        MODULE,
        "causal-invariance",
        "attention under causal_mask: the future cannot change the past",
        1,
        inputs_invariance,
        probe_causal_invariance,
        verdict_causal_invariance,
        "causal_mask",
    ),
    Check(
        MODULE,
        "padding",
        "padding_mask from a list and from a tensor, shape (B, 1, 1, S)",
        2,
        inputs_padding,
        probe_padding,
        verdict_padding,
        "padding_mask",
    ),
    Check(
        MODULE,
        "window",
        "sliding_window_mask for windows 1, 2, one drawn, L and L + 3",
        2,
        inputs_window,
        probe_window,
        verdict_window,
        "sliding_window_mask",
    ),
    Check(
        MODULE,
        "window-errors",
        "sliding_window_mask rejects window < 1 with ValueError",
        1,
        inputs_device,
        probe_window_errors,
        verdict_window_errors,
        "sliding_window_mask",
    ),
]
