"""Probe side of multihead.py's checks: the inputs they draw and the calls they make.

Imported by the process that runs student code: nothing here judges or computes an answer.
While multihead is graded, the student's `from .attention import scaled_dot_product_attention`
gets the trusted attention (isolation): a bug in attention.py costs points in attention only.

Shapes (issue 16.5): D = H·d_k is drawn from pairs where D is never a perfect square and
d_k ∈ {5, 6, 7} never equals H, and the lengths L ≠ S avoid d_k, so a divisor of √D, d_k,
√S or √L is named as itself. Every size that a check can vary is drawn from the seed.
"""

from __future__ import annotations

import math

import torch

from ...core.dispatch import MATMUL_OPS, OpCounter
from ...run.probing import gradients, load_weights, pair, raised, randn
from ..attention.probe import random_mask

# (D, H): d_k = D // H is 5, 6 or 7; no D is a perfect square.
SHAPES = ((10, 2), (12, 2), (14, 2), (15, 3), (18, 3), (21, 3), (20, 4), (28, 4))


def _draw(gen, low, high):
    return int(torch.randint(low, high + 1, (), generator=gen))


def _dims(gen):
    return SHAPES[_draw(gen, 0, len(SHAPES) - 1)]


def _lengths(gen, d_k, n, low=3, high=9):
    """n different lengths in [low, high], none equal to d_k."""
    pool = [t for t in range(low, high + 1) if t != d_k]
    order = torch.randperm(len(pool), generator=gen)[:n]
    return [pool[int(i)] for i in order]


def weights_for(gen, D, bias=False, scale=1.0):
    """A state_dict for MultiHeadAttention(D, H, bias=bias), drawn from gen."""
    state = {}
    for name in ("w_q", "w_k", "w_v", "w_o"):
        state[f"{name}.weight"] = randn(gen, D, D, scale=scale / math.sqrt(D))
        if bias:
            state[f"{name}.bias"] = randn(gen, D, scale=0.1)
    return state


def mha_inputs(gen, *, cross=True, bias=False, scale=1.0, B=2):
    D, H = _dims(gen)
    L, S = _lengths(gen, D // H, 2)
    x = {"H": H, "state": weights_for(gen, D, bias=bias), "query": randn(gen, B, L, D, scale=scale)}
    if cross:
        x["key"] = randn(gen, B, S, D, scale=scale)
        x["value"] = randn(gen, B, S, D)
    return x


# --------------------------------------------------------------------------- inputs


def inputs_self(gen):
    return mha_inputs(gen, cross=False)


def inputs_cross(gen):
    return mha_inputs(gen)


def inputs_mask(gen):
    x = mha_inputs(gen)
    x["mask"] = random_mask(gen, x["query"].size(1), x["key"].size(1))  # no blocked row
    return x


def inputs_blocked_row(gen):
    x = mha_inputs(gen)
    L, S = x["query"].size(1), x["key"].size(1)
    x["row"] = _draw(gen, 0, L - 1)
    x["mask"] = random_mask(gen, L, S, blocked_row=x["row"])
    return x


def inputs_padding(gen):
    x = mha_inputs(gen, cross=False)
    T = x["query"].size(1)
    lengths = torch.tensor([T, _draw(gen, 1, T - 1)])  # one sequence without padding
    x["mask"] = (torch.arange(T) >= lengths[:, None])[:, None, None, :]
    return x


def inputs_bias(gen):
    return mha_inputs(gen, bias=True)


def inputs_scale(gen):
    # Small inputs: no weight saturates, so the weights reveal the divisor.
    return mha_inputs(gen, cross=False, scale=0.5, B=3)


def inputs_defaults(gen):
    x = mha_inputs(gen, cross=False)
    # S = L here: one call passes the query as the value, to recognise value = query.
    x["memory"], x["memory2"] = (randn(gen, *x["query"].shape) for _ in range(2))
    return x


def inputs_wo(gen):
    D, H = _dims(gen)
    x = {
        "H": H,
        "state": weights_for(gen, D),
        "query": randn(gen, 1, _lengths(gen, D // H, 1, 4, 8)[0], D),
    }
    x["delta"] = randn(gen, D, D, scale=1.0)  # added to one head's rows of w_q
    return x


def inputs_vector(gen):
    return {"query": randn(gen, 2, _draw(gen, 4, 8), 32), "state": weights_for(gen, 32)}


def inputs_dropout(gen):
    D, H = _dims(gen)
    T = _lengths(gen, D // H, 1, 6, 10)[0]  # B·H·T·T >= 288 weights, enough to count drops
    x = {"H": H, "state": weights_for(gen, D), "query": randn(gen, 4, T, D)}
    x["p"] = 0.3
    x["torch_seed"] = _draw(gen, 0, 2**31 - 1)
    return x


def inputs_split(gen):
    cases = []
    for _ in range(3):
        D, H = _dims(gen)
        B, T = _draw(gen, 1, 3), _lengths(gen, H, 1, 2, 6)[0]  # T ≠ H
        cases.append((B, T, D, H))
    cases.append((1, _draw(gen, 2, 6), 2 * _draw(gen, 2, 5), 1))  # H = 1: one head owns all
    x = {"cases": cases}
    x.update({f"x{i}": randn(gen, B, T, D) for i, (B, T, D, _) in enumerate(cases)})
    return x


def inputs_merge(gen):
    cases = []
    for _ in range(2):
        D, H = _dims(gen)
        cases.append((_draw(gen, 1, 3), H, _lengths(gen, H, 1, 2, 6)[0], D // H))
    x = {"cases": cases}
    x.update({f"x{i}": randn(gen, *shape) for i, shape in enumerate(cases)})
    return x


def inputs_split_error(gen):
    H = _draw(gen, 3, 4)
    D = H * _draw(gen, 2, 4) + _draw(gen, 1, H - 1)  # not divisible by H
    return {"H": H, "x": randn(gen, 1, 2, D)}


# --------------------------------------------------------------------------- probes


def model_of(mod, x, dropout=0.0):
    """The student's MultiHeadAttention with the check's weights loaded, in eval mode."""
    bias = "w_q.bias" in x["state"]
    model = mod.MultiHeadAttention(x["query"].size(-1), x["H"], dropout=dropout, bias=bias)
    load_weights(model, x["state"])
    return model.to(x["query"].device).eval()


def call(model, *args, grad=False, **kwargs):
    with torch.set_grad_enabled(grad):
        result = model(*args, **kwargs)
    out, weights = pair(result, "MultiHeadAttention's result")
    return {"out": out, "weights": weights}


def own_split_merge(mod, x, got):
    """Where the student's own split_heads and merge_heads send each feature, at this check's
    sizes (B = 1, on index tensors): the judge grades MultiHeadAttention with these, so a
    mistake in split_heads or merge_heads is charged in their own checks only. Nothing when
    either fails (the forward's own call fails the same way)."""
    query = x["query"]
    H, (L, D), S = x["H"], query.shape[1:], x.get("key", query).size(1)
    found = {}
    try:
        for tag, T in (("L", L), ("S", S)):
            index = torch.arange(T * D, dtype=torch.float64, device=query.device)
            found[f"own_split/{tag}"] = mod.split_heads(index.reshape(1, T, D), H)
        heads = torch.arange(L * D, dtype=torch.float64, device=query.device)
        found["own_merge"] = mod.merge_heads(heads.reshape(1, H, L, D // H))
    except Exception:  # noqa: BLE001 (no evidence: judged without it)
        return
    got.update(found)


def probe_mha(mod, x):
    model = model_of(mod, x)
    got = call(model, x["query"], x.get("key"), x.get("value"), mask=x.get("mask"))
    own_split_merge(mod, x, got)
    return got


def probe_split(mod, x):
    return {f"x{i}": mod.split_heads(x[f"x{i}"], H) for i, (_, _, _, H) in enumerate(x["cases"])}


def probe_merge(mod, x):
    return {f"x{i}": mod.merge_heads(x[f"x{i}"]) for i in range(len(x["cases"]))}


def probe_split_error(mod, x):
    outcome, text = raised(lambda: mod.split_heads(x["x"], x["H"]), "returned a tensor")
    return {"outcome": outcome, "text": text}


# The calls of the defaults check: (tag, the arguments, by name of the input).
DEFAULT_CALLS = (
    ("self", ("query",)),
    ("self3", ("query", "query", "query")),
    ("kv", ("query", "memory")),
    ("kv3", ("query", "memory", "memory")),
    ("kvq", ("query", "memory", "query")),
    ("kvm2", ("query", "memory", "memory2")),
)


def probe_defaults(mod, x):
    model = model_of(mod, x)
    got = {}
    for tag, names in DEFAULT_CALLS:
        got.update({f"{tag}/{k}": v for k, v in call(model, *(x[n] for n in names)).items()})
    return got


def probe_wo(mod, x):
    """The output with W_O = I and with a random W_O, and after changing one head's queries."""
    D, H = x["query"].size(-1), x["H"]
    d_k = D // H
    got = {}
    for tag, w_o in (("identity", torch.eye(D)), ("random", x["state"]["w_o.weight"])):
        state = {**x["state"], "w_o.weight": w_o.to(x["query"].device)}
        got[f"{tag}/base"] = call(model_of(mod, {**x, "state": state}), x["query"])["out"]
        for h in range(H):
            w_q = state["w_q.weight"].clone()
            rows = slice(h * d_k, (h + 1) * d_k)
            w_q[rows] += x["delta"][rows].to(w_q.device)
            changed = model_of(mod, {**x, "state": {**state, "w_q.weight": w_q}})
            got[f"{tag}/h{h}"] = call(changed, x["query"])["out"]
    return got


def probe_vector(mod, x):
    # Op counts are recorded in the student's process: evidence its code could forge (see
    # the judge), so this check weighs little.
    got = {}
    for H in (2, 8):
        model = model_of(mod, {**x, "H": H})
        with torch.no_grad(), OpCounter() as ops:
            result = model(x["query"])
        got[f"mm{H}"], got[f"ops{H}"] = ops.count(*MATMUL_OPS), ops.count()
        got[f"weights{H}"] = pair(result, "MultiHeadAttention's result")[1]
    return got


def probe_dropout(mod, x):
    q = x["query"]
    got = {f"p0/{k}": v for k, v in call(model_of(mod, x), q).items()}
    model = model_of(mod, x, dropout=x["p"])
    got.update({f"eval/{k}": v for k, v in call(model, q).items()})
    got.update({f"eval-grad/{k}": v for k, v in call(model, q, grad=True).items()})
    model.train()
    torch.manual_seed(x["torch_seed"])  # the drops are random, but reproducible
    got.update({f"train/{k}": v for k, v in call(model, q).items()})
    got.update({f"train2/{k}": v for k, v in call(model, q).items()})
    # Training mode learns: a backward pass through the dropped weights reaches every weight.
    got.update(gradients(model, lambda: model(q)))
    return got
