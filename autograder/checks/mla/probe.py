"""Probe side of mla.py's checks: the inputs they draw and the calls they make.

Imported by the process that runs student code: nothing here judges or computes an answer.
While mla is graded, the student's `from .rotary import apply_rotary` (and attention) get the
trusted stand-ins: a bug in rotary.py costs points in rotary only.

Every size, weight, token and position is drawn from the check's generator. The widths D, d_c,
d_c_q, d_head, d_rope and the head count differ from one another, so a mix-up of two axes
shows in the shapes or the values. The absorbed form is run on a fresh module for every call
(the cache is all that links two calls) and, in one check, on a cache and absorbed matrices
the probe draws itself: a step must use what it is given.
"""

from __future__ import annotations

import math

import torch

from ...run.probing import gradients, guarded, load_weights, pair, randn

# (D, H, d_c, d_c_q, d_head, d_rope): d_head and d_rope even, every width distinct.
SHAPES = (
    (24, 3, 10, 12, 8, 6),
    (32, 4, 12, 14, 6, 4),
    (30, 2, 14, 10, 8, 6),
    (28, 4, 10, 16, 6, 8),
)
DTYPES = ("float32", "float16", "bfloat16", "float64")
KINDS = ("mha", "gqa", "mqa", "mla")


def _int(gen, low, high):
    """A draw from low .. high (both included)."""
    return int(torch.randint(low, high + 1, (), generator=gen))


def _pick(gen, options):
    return options[_int(gen, 0, len(options) - 1)]


# --------------------------------------------------------------------------- inputs


def _config(gen):
    D, H, d_c, d_c_q, d_head, d_rope = _pick(gen, SHAPES)
    # never the default (10000): an MLA that ignores self.base and rotates with apply_rotary's
    # default is wrong in every check that compares values
    base = float(_int(gen, 50, 500))
    cfg = {"D": D, "H": H, "d_c": d_c, "d_c_q": d_c_q, "d_head": d_head, "d_rope": d_rope}
    cfg["base"] = base
    return cfg


def state_of(gen, cfg):
    """Weights for every parameter, by its documented name (fan-in scaled; norms near 1)."""
    D, H, d_c, d_c_q = cfg["D"], cfg["H"], cfg["d_c"], cfg["d_c_q"]
    d_head, d_rope = cfg["d_head"], cfg["d_rope"]
    shapes = (
        ("w_dq", d_c_q, D),
        ("q_norm", d_c_q, 0),
        ("w_uq", H * d_head, d_c_q),
        ("w_qr", H * d_rope, d_c_q),
        ("w_dkv", d_c, D),
        ("kv_norm", d_c, 0),
        ("w_uk", H * d_head, d_c),
        ("w_uv", H * d_head, d_c),
        ("w_kr", d_rope, D),
        ("w_o", D, H * d_head),
    )
    state = {}
    for name, rows, cols in shapes:
        if cols == 0:  # an RMSNorm's weight
            state[f"{name}.weight"] = 1 + randn(gen, rows, scale=0.2)
        else:
            state[f"{name}.weight"] = randn(gen, rows, cols, scale=1.5 / math.sqrt(cols))
    return state


def inputs_forward(gen):
    x = _config(gen)
    x["state"] = state_of(gen, x)
    x["x"] = randn(gen, _int(gen, 1, 2), _int(gen, 5, 9), x["D"])
    return x


def inputs_causal(gen):
    """Two inputs equal up to token t and different after it."""
    x = inputs_forward(gen)
    T = x["x"].size(1)
    x["t"] = _int(gen, 1, T - 3)
    x["x2"] = torch.cat([x["x"][:, : x["t"] + 1], randn(gen, *x["x"][:, x["t"] + 1 :].shape)], 1)
    return x


def inputs_rope_part(gen):
    """Weights whose rotary projections (w_qr, w_kr) are zero; x, x with its earlier tokens
    (all but the last) in another order, and x with one earlier token changed."""
    x = inputs_forward(gen)
    for name in ("w_qr.weight", "w_kr.weight"):
        x["state"][name] = torch.zeros_like(x["state"][name])
    T = x["x"].size(1)
    perm = torch.roll(torch.arange(T - 1), _int(gen, 1, T - 2))  # every earlier token moves
    x["shuffled"] = torch.cat([x["x"][:, perm], x["x"][:, -1:]], dim=1)
    changed = x["x"].clone()
    changed[:, _int(gen, 0, T - 2)] = randn(gen, x["x"].size(0), x["D"])
    x["changed"] = changed
    return x


def inputs_absorbed_weights(gen):
    x = _config(gen)
    x["state"] = state_of(gen, x)
    return x


def inputs_given_cache(gen):
    """Two steps, each on a cache and absorbed matrices drawn here (not from any forward):
    one token after p0 cached ones, then 3 tokens after p0' cached ones."""
    x = _config(gen)
    x["state"] = state_of(gen, x)
    B, H, D = _int(gen, 1, 2), x["H"], x["D"]
    d_c, d_c_q, d_rope = x["d_c"], x["d_c_q"], x["d_rope"]
    x["steps"] = []
    for T in (1, 3):
        p0 = _int(gen, 4, 12)
        x["steps"].append(
            {
                "x": randn(gen, B, T, D),
                "c_kv": randn(gen, B, p0, d_c),
                "k_rope": randn(gen, B, p0, d_rope),
                "w_q": randn(gen, H, d_c_q, d_c, scale=1.5 / math.sqrt(d_c_q)),
                "w_o": randn(gen, H, d_c, D, scale=1 / math.sqrt(d_c)),
            }
        )
    return x


def inputs_calls(gen):
    """A prefill of several tokens, single steps and a chunk of 2 tokens."""
    x = _config(gen)
    x["state"] = state_of(gen, x)
    B = _int(gen, 1, 2)
    x["xs"] = [randn(gen, B, T, x["D"]) for T in (_int(gen, 3, 6), 1, 2, 1)]
    return x


def inputs_bytes(gen):
    """One case per kind, in a drawn order, each with another dtype."""
    cases = []
    kinds = torch.randperm(len(KINDS), generator=gen).tolist()
    dtypes = torch.randperm(len(DTYPES), generator=gen).tolist()
    for j in range(2 * len(KINDS)):
        H = _pick(gen, (4, 8, 16, 32))
        H_kv = _pick(gen, [h for h in (2, 4, 8) if h < H])
        d_head = _pick(gen, (32, 64, 128))
        d_c = _pick(gen, (64, 128, 256, 512)) + 16 * _int(gen, 0, 3)
        d_rope = _pick(gen, (16, 32, 64))
        dtype = DTYPES[(dtypes[j % len(KINDS)] + j // len(KINDS)) % len(DTYPES)]
        cases.append((KINDS[kinds[j % len(KINDS)]], H, d_head, H_kv, d_c, d_rope, dtype))
    return {"cases": cases}


# --------------------------------------------------------------------------- running


def module_of(mod, x):
    """A fresh student module with the check's weights loaded, in eval mode."""
    cfg = [x[k] for k in ("D", "H", "d_c", "d_c_q", "d_head", "d_rope")]
    layer = mod.MultiHeadLatentAttention(*cfg, base=x["base"])
    load_weights(layer, x["state"])
    return layer.eval()


def probe_forward(mod, x):
    """The output, and the gradients that reach x and the weights from it."""
    layer = module_of(mod, x)
    with torch.no_grad():
        got = {"out": layer(x["x"])}
    return {**got, **gradients(layer, layer, {"x": x["x"]})}


def probe_causal(mod, x):
    layer = module_of(mod, x)
    with torch.no_grad():
        return {"out": layer(x["x"]), "out2": layer(x["x2"])}


def probe_rope_part(mod, x):
    layer = module_of(mod, x)
    with torch.no_grad():
        return {name: layer(x[key]) for name, key in
                (("out", "x"), ("shuffled", "shuffled"), ("changed", "changed"))}  # fmt: skip


def probe_absorbed_weights(mod, x):
    with torch.no_grad():
        result = module_of(mod, x).absorbed_weights()
    w_q, w_o = pair(result, "absorbed_weights()", "(w_q_absorbed, w_o_absorbed)")
    return {"w_q": w_q, "w_o": w_o}


def _cache_parts(cache, key):
    """The returned cache as plain data: its two tensors, or what it was instead."""
    if not isinstance(cache, (tuple, list)) or len(cache) != 2:
        kind = type(cache).__name__
        size = f" of length {len(cache)}" if isinstance(cache, (tuple, list)) else ""
        return {f"{key}/cache": f"a {kind}{size}"}
    got = {}
    for name, value in zip(("c_kv", "k_rope"), cache, strict=True):
        if type(value) is torch.Tensor:
            got[f"{key}/{name}"] = value
        else:
            got[f"{key}/{name}"] = f"a {type(value).__name__}"
    return got


def probe_given_cache(mod, x):
    got = {}
    for i, step in enumerate(x["steps"]):
        layer = module_of(mod, x)
        cache, absorbed = (step["c_kv"], step["k_rope"]), (step["w_q"], step["w_o"])
        with torch.no_grad():
            result, error = guarded(lambda: layer.forward_absorbed(step["x"], cache, absorbed))  # noqa: B023
        if error:
            return {**got, "error": error, "error-at": i}
        out, new = pair(result, "forward_absorbed's result", "(out, cache)")
        got[f"{i}/out"] = out
        got.update(_cache_parts(new, str(i)))
    return got


def probe_calls(mod, x):
    """forward_absorbed on each call, a fresh module each time, passing on the cache it
    returned; then forward (the naive form) on all the tokens."""
    got, cache = {}, None
    with torch.no_grad():
        for i, xi in enumerate(x["xs"]):
            layer = module_of(mod, x)
            result, error = guarded(lambda: layer.forward_absorbed(xi, cache))  # noqa: B023
            if error:
                return {**got, "error": error, "error-at": i}
            out, cache = pair(result, "forward_absorbed's result", "(out, cache)")
            got[f"{i}/out"] = out
            got.update(_cache_parts(cache, str(i)))
        full, error = guarded(lambda: module_of(mod, x)(torch.cat(x["xs"], dim=1)))
    if error:
        return {**got, "error": error, "error-at": "full"}
    got["full"] = full
    return got


def probe_bytes(mod, x):
    got = {}
    for i, (kind, H, d_head, H_kv, d_c, d_rope, dtype) in enumerate(x["cases"]):
        value = mod.cache_bytes_per_token(
            kind, H, d_head, num_kv_heads=H_kv, d_c=d_c, d_rope=d_rope, dtype=getattr(torch, dtype)
        )
        exact = type(value) is int and abs(value) < 2**62  # bounded for the wire
        got[f"bytes{i}"] = value if exact else repr(value)[:100]
    return got
