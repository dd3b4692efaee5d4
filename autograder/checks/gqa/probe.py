"""Probe side of gqa.py's checks: the inputs they draw and the calls they make.

Imported by the process that runs student code: nothing here judges or computes an answer.
While gqa is graded, the student's `from .attention import scaled_dot_product_attention` gets
the trusted attention (isolation): a bug in attention.py costs points in attention only.

Shapes: (D, H, H_kv) come from GROUPED, where n_rep = H / H_kv is never H_kv (so repeating by
the wrong count never gives the right number of heads), d_k ∈ {5, 7}, and no D, d_k or
H_kv·d_k is a perfect square or equal to another, so a divisor of √D, √(H_kv·d_k) or √T is
named as itself. Every size that a check can vary is drawn from the seed.
"""

from __future__ import annotations

import contextlib
import inspect
import math

import torch

from ...run.probing import fits, gradients, load_weights, pair, raised, randn

# (D, H, H_kv) with 1 < H_kv < H and n_rep = H // H_kv ≠ H_kv; d_k = D // H is 5 or 7.
GROUPED = ((30, 6, 2), (42, 6, 2), (30, 6, 3), (42, 6, 3), (40, 8, 2), (56, 8, 2))
# Multi-query (H_kv = 1) and multi-head (H_kv = H) shapes.
MQA = ((20, 4, 1), (28, 4, 1), (30, 6, 1))
MHA = ((15, 3, 3), (20, 4, 4), (21, 3, 3))
DTYPES = ("float32", "float16", "bfloat16", "float64")


def _draw(gen, low, high):
    return int(torch.randint(low, high + 1, (), generator=gen))


def _pick(gen, options):
    return options[_draw(gen, 0, len(options) - 1)]


def _length(gen, d_k, low=3, high=9):
    """A sequence length in [low, high] other than d_k."""
    pool = [t for t in range(low, high + 1) if t != d_k]
    return _pick(gen, pool)


def weights_for(gen, D, H, H_kv, bias=False, scale=1.0):
    """A state_dict for GroupedQueryAttention(D, H, H_kv, bias=bias), drawn from gen."""
    kv = H_kv * (D // H)
    state = {}
    for name, rows in (("w_q", D), ("w_k", kv), ("w_v", kv), ("w_o", D)):
        state[f"{name}.weight"] = randn(gen, rows, D, scale=scale / math.sqrt(D))
        if bias:
            state[f"{name}.bias"] = randn(gen, rows, scale=0.1)
    return state


def gqa_inputs(gen, shapes=GROUPED, *, bias=False, scale=1.0, B=2):
    D, H, H_kv = _pick(gen, shapes)
    T = _length(gen, D // H)
    return {
        "H": H,
        "H_kv": H_kv,
        "state": weights_for(gen, D, H, H_kv, bias=bias),
        "x": randn(gen, B, T, D, scale=scale),
    }


# --------------------------------------------------------------------------- inputs


def inputs_repeat(gen):
    cases = []
    for n_rep in (_draw(gen, 2, 4), _draw(gen, 2, 4), 1):
        H_kv = _pick(gen, [h for h in (2, 3, 4) if h != n_rep])
        cases.append((_draw(gen, 1, 3), H_kv, _draw(gen, 2, 6), _draw(gen, 2, 5), n_rep))
    x = {"cases": cases}
    x.update({f"x{i}": randn(gen, B, H_kv, T, d) for i, (B, H_kv, T, d, _) in enumerate(cases)})
    return x


def inputs_grouped(gen):
    return gqa_inputs(gen)


def inputs_mqa(gen):
    return gqa_inputs(gen, MQA)


def inputs_mha(gen):
    return gqa_inputs(gen, MHA)


def inputs_bias(gen):
    return gqa_inputs(gen, bias=True)


def inputs_mask(gen):
    x = gqa_inputs(gen)
    T = x["x"].size(1)
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)  # causal
    mask = mask | (torch.rand(2, 1, T, T, generator=gen) < 0.3)  # and some keys per sequence
    mask[..., torch.arange(T), torch.arange(T)] = False  # every query keeps itself
    x["mask"] = mask
    return x


def inputs_scale(gen):
    # Small inputs: no weight saturates, so the weights reveal the divisor.
    return gqa_inputs(gen, scale=0.5, B=3)


def inputs_groups(gen):
    x = gqa_inputs(gen, B=1)
    D, H_kv = x["x"].size(-1), x["H_kv"]
    x["delta"] = randn(gen, H_kv * (D // x["H"]), D)  # added to one key head's rows of w_k
    return x


def inputs_sizes_error(gen):
    H_kv = _draw(gen, 3, 4)
    H = H_kv * _draw(gen, 1, 3) + _draw(gen, 1, H_kv - 1)  # H_kv does not divide H
    kv_case = (H * _draw(gen, 2, 5), H, H_kv)  # but H divides D
    H = _draw(gen, 3, 4)
    D = H * _draw(gen, 2, 5) + _draw(gen, 1, H - 1)  # H does not divide D
    H_kv = _pick(gen, [h for h in range(1, H + 1) if H % h == 0])  # but H_kv divides H
    return {"kv": kv_case, "d_model": (D, H, H_kv)}


def inputs_kv_bytes(gen):
    cases = []
    order = torch.randperm(len(DTYPES), generator=gen)  # every dtype once, in a drawn order
    for shapes, i in zip((GROUPED, MQA, GROUPED, MHA), order, strict=True):
        D, H, H_kv = _pick(gen, shapes)
        cases.append((D, H, H_kv, _draw(gen, 1, 4096), DTYPES[int(i)]))
    return {"cases": cases}


# --------------------------------------------------------------------------- probes


def _shapes_of(model):
    """The shapes of the student's parameters, as int tensors (what the judge compares)."""
    return {
        f"param/{name}": torch.tensor(tuple(value.shape), dtype=torch.long)
        for name, value in model.state_dict().items()
    }


def model_of(mod, x):
    """The student's GroupedQueryAttention with the check's weights loaded, in eval mode, and
    its parameter shapes; the model is None when the shapes do not fit the check's weights."""
    bias = "w_q.bias" in x["state"]
    model = mod.GroupedQueryAttention(x["x"].size(-1), x["H"], x["H_kv"], bias=bias)
    shapes = _shapes_of(model)
    if not fits(model, x["state"]):
        return None, shapes
    load_weights(model, x["state"])
    return model.to(x["x"].device).eval(), shapes


def call(mod, model, x, H, mask=None):
    """(out, weights) of one forward call, with the number of key heads that the student's code
    passed to scaled_dot_product_attention recorded (to name a wrong group count when the
    call fails). A failure with the right number of key heads is re-raised as it is."""
    seen = []
    # The globals the student's forward runs with: its module, or a notebook's namespace;
    # through its decorators (functools.wraps: @torch.no_grad(), a timer).
    names = getattr(inspect.unwrap(type(model).forward), "__globals__", None)
    names = names if isinstance(names, dict) else vars(mod)
    trusted = names.get("scaled_dot_product_attention")

    def recording(q, k, v, mask=None):
        seen.append(tuple(int(n) for n in k.shape))
        return trusted(q, k, v, mask)

    if callable(trusted):
        names["scaled_dot_product_attention"] = recording
    try:
        with torch.no_grad():
            result = model(x, mask=mask)
    except (RuntimeError, IndexError) as e:
        heads = seen[0][-3] if seen and len(seen[0]) >= 3 else 0
        if seen and heads != H:
            shape = torch.tensor(seen[0][:8], dtype=torch.long)
            return {"kv_heads_seen": heads, "kv_shape_seen": shape, "error": type(e).__name__}
        raise
    finally:
        if callable(trusted):
            names["scaled_dot_product_attention"] = trusted
    out, weights = pair(result, "GroupedQueryAttention's result")
    shape = {"kv_shape_seen": torch.tensor(seen[0][:8], dtype=torch.long)} if seen else {}
    return {"out": out, "weights": weights, **shape}


def probe_gqa(mod, x):
    model, shapes = model_of(mod, x)
    if model is None:
        return shapes
    return {**shapes, **call(mod, model, x["x"], x["H"], x.get("mask"))}


def _repeat_gradient(mod, t, n_rep):
    """The gradient that reaches t from repeat_kv(t, n_rep)'s output, under "repeat/"."""
    found = gradients(None, lambda t_: mod.repeat_kv(t_, n_rep), {"x": t})
    return {f"repeat/{key}": value for key, value in found.items()}


def probe_grouped(mod, x):
    """probe_gqa's run, the gradients that reach x and the weights from the output, and the one
    that reaches x through the student's own repeat_kv (where that one is cut, the repeat-kv
    check charges it, and w_k and w_v are not asked for one here)."""
    model, shapes = model_of(mod, x)
    if model is None:
        return shapes
    got = {**shapes, **call(mod, model, x["x"], x["H"], x.get("mask"))}
    got.update(gradients(model, lambda t: model(t, mask=x.get("mask")), {"x": x["x"]}))
    B, T, D = x["x"].shape
    kv = x["x"].new_ones(B, x["H_kv"], T, D // x["H"])
    with contextlib.suppress(NotImplementedError):  # repeat_kv's own check says so
        got.update(_repeat_gradient(mod, kv, x["H"] // x["H_kv"]))
    return got


def probe_groups(mod, x):
    """The weights, and the weights after one key head's rows of w_k changed, for each key head."""
    model, shapes = model_of(mod, x)
    if model is None:
        return shapes
    got = {**shapes, **call(mod, model, x["x"], x["H"])}
    d_k = x["x"].size(-1) // x["H"]
    for g in range(x["H_kv"]):
        w_k = x["state"]["w_k.weight"].clone()
        rows = slice(g * d_k, (g + 1) * d_k)
        w_k[rows] += x["delta"][rows].to(w_k.device)
        changed, _ = model_of(mod, {**x, "state": {**x["state"], "w_k.weight": w_k}})
        got.update({f"g{g}/{k}": v for k, v in call(mod, changed, x["x"], x["H"]).items()})
    return got


def probe_repeat(mod, x):
    got = {f"x{i}": mod.repeat_kv(x[f"x{i}"], c[-1]) for i, c in enumerate(x["cases"])}
    return {**got, **_repeat_gradient(mod, x["x0"], x["cases"][0][-1])}


def _sizes_outcome(mod, D, H, H_kv):
    return raised(lambda: mod.GroupedQueryAttention(D, H, H_kv), "built a module")


def probe_sizes_error(mod, x):
    got = {}
    for case in ("kv", "d_model"):
        got[f"{case}/outcome"], got[f"{case}/text"] = _sizes_outcome(mod, *x[case])
    return got


def probe_kv_bytes(mod, x):
    got = {}
    for i, (D, H, H_kv, T, dtype) in enumerate(x["cases"]):
        value = mod.kv_cache_bytes(D, H, H_kv, T, getattr(torch, dtype))
        exact = type(value) is int and abs(value) < 2**62  # bounded for the wire
        got[f"bytes{i}"] = value if exact else repr(value)[:100]
    return got
