"""Judge side of masks.py's checks: misconceptions, models of wrong masks, verdicts."""

from __future__ import annotations

import torch

from ...core.check import NO_EVIDENCE, WRONG_DEVICE, WRONG_TYPE, CheckList, Failure, no_reference
from ...core.i18n import N_
from ...core.misconception_data import misconceptions_of
from ...core.verdicts import assert_close, close, model, tensor, variants
from ...trusted.attention import scaled_dot_product_attention
from . import probe

CHECKS = CheckList("masks")
MISTAKES = misconceptions_of(__name__)  # misconceptions.toml: messages and hint ladders

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
        raise Failure(MISTAKES["mask-not-bool"], what=what, got=value.dtype)
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
    # The same call on the CPU must block something, or the device was never shown to matter
    # (torch.zeros(L, L, dtype=torch.bool, device=device) passes the device on too).
    # (Its dtype is the value checks' business: a 0/1 float mask that blocks something counts.)
    cpu = got.get("cpu")
    if not (isinstance(cpu, torch.Tensor) and not cpu.is_complex() and bool((cpu != 0).any())):
        what = call.replace(", device='meta')", ")") + " on the CPU"
        raise Failure(NO_EVIDENCE, what=what, how=N_("blocks nothing (or is not a mask)"))


# --------------------------------------------------------------------------- causal_mask


CAUSAL_MASK = CHECKS.exercise("causal_mask", probe=probe.probe_causal)


@CAUSAL_MASK.check("causal", inputs=probe.inputs_causal)
def verdict_causal(got, want, x):
    # the longest first: at L = 1 tril() and triu(0) agree, so a mistake is named where the
    # candidates differ
    for n, L in sorted(enumerate(x["lengths"]), key=lambda pair: -pair[1]):
        mask = _bool_mask(got, f"m{n}", f"causal_mask({L})", (L, L))
        assert_close(
            mask,
            want[f"m{n}"],
            f"causal_mask({L})",
            [
                (MISTAKES["causal-blocks-diagonal"], lambda L=L: _upper(L, 0), {}),
                (MISTAKES["causal-transposed"], lambda L=L: _upper(L, 1).T, {}),
                (MISTAKES["causal-transposed"], lambda L=L: _upper(L, 0).T, {}),
                (MISTAKES["causal-inverted"], lambda L=L: ~_upper(L, 1), {}),
            ],
        )


@CAUSAL_MASK.check("causal-device", inputs=probe.inputs_device, probe=probe.probe_causal_device)
@no_reference
def verdict_causal_device(got, want, x):
    _device_verdict(got, f"causal_mask({x['L']}, device='meta')")


@CAUSAL_MASK.check(
    "causal-invariance", inputs=probe.inputs_invariance, probe=probe.probe_causal_mask_only
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
        raise Failure(MISTAKES["causal-mask-leaks"])
    if close(out[:, t], out3[:, t]):
        raise Failure(MISTAKES["causal-blocks-past"], t=t)


# --------------------------------------------------------------------------- padding_mask


PADDING_MASK = CHECKS.exercise("padding_mask", probe=probe.probe_padding)


@PADDING_MASK.check("padding", inputs=probe.inputs_padding)
def verdict_padding(got, want, x):
    for name in ("list", "tensor"):
        lengths, S = x[name], x[f"S_{name}"]
        what = f"padding_mask({lengths!r}, {S})"
        lengths = torch.as_tensor(lengths)
        value = tensor(got, name, what)
        if value.dtype != torch.bool:
            raise Failure(MISTAKES["mask-not-bool"], what=what, got=value.dtype)
        if value.dim() != 4 and value.numel() == lengths.numel() * S:
            raise Failure(MISTAKES["padding-missing-axes"], got=tuple(value.shape))
        mask = _bool_mask(got, name, what, (len(lengths), 1, 1, S))
        mistakes = [
            (MISTAKES["padding-off-by-one"], "after"),
            (MISTAKES["padding-off-by-one"], "from-last"),
            (MISTAKES["padding-inverted"], "inverted"),
        ]
        assert_close(mask, want[name], what, variants(_padding, lengths, S, mistakes=mistakes))


# --------------------------------------------------------------------------- sliding window


SLIDING_WINDOW_MASK = CHECKS.exercise("sliding_window_mask", probe=probe.probe_window)


@SLIDING_WINDOW_MASK.check("window", inputs=probe.inputs_window)
def verdict_window(got, want, x):
    L = x["L"]
    for n, w in enumerate(x["windows"]):
        what = f"sliding_window_mask({L}, window={w})"
        mask = _bool_mask(got, f"w{n}", what, (L, L))
        mistakes = [
            (MISTAKES["window-off-by-one"], "wider"),
            (MISTAKES["window-off-by-one"], "narrower"),
            (MISTAKES["window-not-causal"], "two-sided"),
            (MISTAKES["window-not-causal"], "future"),
        ]
        candidates = variants(window_with_mistake, L, w, mistakes=mistakes)
        assert_close(mask, want[f"w{n}"], what, candidates)


@SLIDING_WINDOW_MASK.check(
    "window-errors", inputs=probe.inputs_window_errors, probe=probe.probe_window_errors
)
@no_reference
def verdict_window_errors(got, want, x):
    for n, w in enumerate(x["windows"]):
        if got.get(f"w{n}") != "ValueError":
            raise Failure(MISTAKES["window-no-valueerror"], window=w, got=got.get(f"w{n}"))


@SLIDING_WINDOW_MASK.check(
    "window-device", inputs=probe.inputs_device, probe=probe.probe_window_device
)
@no_reference
def verdict_window_device(got, want, x):
    _device_verdict(got, f"sliding_window_mask({x['L']}, {x['window']}, device='meta')")
