"""Probe side of attention.py's checks: the inputs they draw and the calls they make.

Imported by the process that runs student code: nothing here judges or computes an answer.
"""

from __future__ import annotations

import torch

from ...run.probing import gradients, pair, randn

# Shapes: the reference and scale checks use L ≠ S and d_k ≠ d_v, with √d_k, √d_v, √S and √L
# all different, so a wrong divisor is named; every other check uses d_k = d_v (= 12), so a
# divisor of √d_v is charged where it is named, and only there (docs/principles.md, principle 10).


def _qkv(gen, batch, L, S, d_k, d_v, dtype=torch.float32, scale=1.0):
    return {
        "q": randn(gen, *batch, L, d_k, dtype=dtype, scale=scale),
        "k": randn(gen, *batch, S, d_k, dtype=dtype, scale=scale),
        "v": randn(gen, *batch, S, d_v, dtype=dtype),
    }


def random_mask(gen, L, S, blocked_row=None):
    """An (L, S) bool mask, about 40% blocked, every row keeping a key (but `blocked_row`)."""
    mask = torch.rand(L, S, generator=gen) < 0.4
    mask[torch.arange(L), torch.randint(S, (L,), generator=gen)] = False  # one key per row
    if blocked_row is not None:
        mask[blocked_row] = True
    return mask


def inputs_basic(gen):
    return _qkv(gen, (2,), 5, 7, 16, 9)


def inputs_same_width(gen):
    return _qkv(gen, (2,), 5, 7, 12, 12)


def inputs_batch_dims(gen):
    return {"4d": _qkv(gen, (2, 3), 4, 6, 12, 12), "2d": _qkv(gen, (), 4, 6, 12, 12)}


def inputs_float64(gen):
    return _qkv(gen, (2,), 5, 7, 12, 12, dtype=torch.float64)


def inputs_scale(gen):
    # Small q, k: no weight saturates, so the weights reveal the scores and the scale.
    return _qkv(gen, (3,), 5, 7, 16, 9, scale=0.5)


def inputs_mask_2d(gen):
    x = _qkv(gen, (2,), 5, 7, 12, 12)
    x["mask"] = random_mask(gen, 5, 7)
    return x


def inputs_mask_4d(gen):
    x = _qkv(gen, (2, 2), 4, 6, 12, 12)
    lengths = torch.randint(1, 6, (2,), generator=gen)
    lengths[0] = 6  # one sequence without padding, one with
    x["mask"] = (torch.arange(6) >= lengths[:, None])[:, None, None, :]
    return x


def inputs_blocked_row(gen):
    x = _qkv(gen, (2,), 5, 7, 12, 12)
    x["row"] = int(torch.randint(5, (), generator=gen))
    x["mask"] = random_mask(gen, 5, 7, blocked_row=x["row"])
    return x


def inputs_blocked_keys(gen):
    # float64: the third run has scores of order -1e4, where float32 keeps no decimals.
    x = _qkv(gen, (2,), 5, 7, 12, 12, dtype=torch.float64)
    x["key"] = int(torch.randint(7, (), generator=gen))
    x["mask"] = random_mask(gen, 5, 7)
    x["mask"][:, x["key"]] = True  # this key is blocked for every query
    x["mask"][torch.arange(5), (x["key"] + 1) % 7] = False  # and every row keeps another
    # Second run: only the blocked key changes, to a key every query likes and a huge value.
    x["k2"], x["v2"] = x["k"].clone(), x["v"].clone()
    x["k2"][:, x["key"]] = x["q"].sum(dim=1) * 50.0
    x["v2"][:, x["key"]] = 1e3
    # Third run: every key points away from the queries (scores near -2e4). A finite fill
    # such as -1e4 now beats every allowed key, so the blocked key would get the weight.
    x["k3"] = x["k"] - x["q"].sum(dim=1, keepdim=True) * 5e3
    return x


def inputs_causal(gen):
    T = 6
    x = _qkv(gen, (2,), T, T, 12, 12)
    x["mask"] = torch.ones(T, T, dtype=torch.bool).triu(1)
    x["t"] = int(torch.randint(1, T - 1, (), generator=gen))  # positions >= t change
    x["q2"], x["k2"], x["v2"] = (t.clone() for t in (x["q"], x["k"], x["v"]))
    for name in ("q2", "k2", "v2"):
        x[name][:, x["t"] :] = randn(gen, 2, T - x["t"], 12, scale=3.0)
    return x


def inputs_bias(gen):
    x = _qkv(gen, (2,), 5, 7, 12, 12)
    x["bias"] = randn(gen, 5, 7, scale=2.0)
    return x


def inputs_bias_mask(gen):
    x = inputs_bias(gen)
    x["mask"] = random_mask(gen, 5, 7, blocked_row=int(torch.randint(5, (), generator=gen)))
    return x


# --------------------------------------------------------------------------- probes


def sdpa(mod, x):
    # Fresh copies per call: code that changes an argument in place does not change the next
    # call's inputs (the reference check charges that, changed-input, once).
    q, k, v = (x[n].clone() for n in ("q", "k", "v"))
    result = mod.scaled_dot_product_attention(q, k, v, mask=x.get("mask"))
    out, weights = pair(result, "scaled_dot_product_attention's result")
    return {"out": out, "weights": weights}


def probe_sdpa(mod, x):
    return sdpa(mod, x)


def probe_reference(mod, x):
    """sdpa, and the gradients that reach q, k and v from its output."""
    run = lambda q, k, v: mod.scaled_dot_product_attention(q, k, v)  # noqa: E731
    return {**sdpa(mod, x), **gradients(None, run, {n: x[n] for n in ("q", "k", "v")})}


def probe_batch_dims(mod, x):
    got = {}
    for shape, xs in x.items():
        got.update({f"{shape}/{k}": v for k, v in sdpa(mod, xs).items()})
    return got


def probe_blocked_keys(mod, x):
    first = sdpa(mod, x)
    second = sdpa(mod, {**x, "k": x["k2"], "v": x["v2"]})
    third = sdpa(mod, {**x, "k": x["k3"]})
    return {
        **first,
        "out2": second["out"],
        "weights2": second["weights"],
        "out3": third["out"],
        "weights3": third["weights"],
    }


def probe_causal(mod, x):
    first = sdpa(mod, x)
    second = sdpa(mod, {"q": x["q2"], "k": x["k2"], "v": x["v2"], "mask": x["mask"]})
    return {**first, "out2": second["out"], "weights2": second["weights"]}


def probe_bias(mod, x):
    q, k, v, bias = (x[n].clone() for n in ("q", "k", "v", "bias"))  # fresh, as in sdpa
    result = mod.attention_with_bias(q, k, v, bias, mask=x.get("mask"))
    out, weights = pair(result, "attention_with_bias's result")
    return {"out": out, "weights": weights}


def probe_bias_gradients(mod, x):
    """probe_bias, and the gradients that reach q, k, v and the bias from the output."""
    run = lambda q, k, v, bias: mod.attention_with_bias(q, k, v, bias)  # noqa: E731
    names = ("q", "k", "v", "bias")
    return {**probe_bias(mod, x), **gradients(None, run, {n: x[n] for n in names})}
