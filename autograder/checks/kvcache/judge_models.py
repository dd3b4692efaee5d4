"""Models of cached decoding, right and with each named mistake (float64, never in the process
that runs student code), and the candidate lists that name a mistake from its output; the
verdicts are in judge.py.
"""

from __future__ import annotations

import math

import torch

from ...core.misconception_data import misconceptions_of
from ...core.verdicts import model
from ..masks.judge import MISTAKES as MASKS_MISTAKES
from ..multihead.judge import MISTAKES as MULTIHEAD_MISTAKES
from ..rotary.judge import MISTAKES as ROTARY_MISTAKES

MISTAKES = misconceptions_of(__name__)  # misconceptions.toml: messages and hint ladders


# --------------------------------------------------------------------------- models
# What cached decoding with a given mistake computes, in float64, to recognise it.

# A float32 run against a float64 model of the same computation (two layers, norms):
# errors of a few float32 epsilons times the sizes, far below what a mistake changes.
MODEL_TOL = {"atol": 1e-4, "rtol": 1e-4}
# Two float32 runs of the student's own code (a cached step, the full recomputation): the
# same operations on differently shaped inputs, so summation orders differ.
OWN_TOL = {"atol": 1e-5, "rtol": 1e-5}


@model
def _rope(x, positions, base=10000.0, interleaved=False):
    """The rotary model (halves convention), float64 in, float64 out: judge-side, because the
    student copy of the kit leaves out rotary's stand-in (it is an exercise). interleaved:
    Meta's convention, pairs (2i, 2i + 1) (rotary's named convention difference)."""
    half = x.size(-1) // 2
    theta = float(base) ** (-torch.arange(half, dtype=torch.float64) * (2.0 / x.size(-1)))
    angles = torch.outer(positions.to(torch.float64), theta)
    if interleaved:
        z = torch.complex(x[..., ::2].double(), x[..., 1::2].double()) * torch.polar(
            torch.ones_like(angles), angles
        )
        return torch.stack([z.real, z.imag], dim=-1).flatten(-2).to(x.dtype)
    z = torch.complex(x[..., :half].double(), x[..., half:].double()) * torch.polar(
        torch.ones_like(angles), angles
    )
    return torch.cat([z.real, z.imag], dim=-1).to(x.dtype)


class _Cache:
    def __init__(self, layers):
        self.k = [None] * layers
        self.v = [None] * layers


def _linear(x, state, name):
    return x @ state[name].double().T


def _split(t, n):
    B, T, F = t.shape
    return t.reshape(B, T, n, F // n).transpose(1, 2)


@model
def _mask(how, T, S, positions, key_positions):
    if "no-mask" in how:
        return torch.zeros(T, S, dtype=torch.bool)
    if "mask-not-offset" in how:
        return torch.ones(T, S, dtype=torch.bool).triu(1)
    if "restart-mask" in how:
        return key_positions[None, :] > torch.arange(T)[:, None]
    if "blocks-diagonal" in how:  # >= for >: masks' mistake, made again in this layer's mask
        return key_positions[None, :] >= positions[:, None]
    return key_positions[None, :] > positions[:, None]


@model
def _layer64(x, cfg, state, prefix, cache, layer, how=()):
    """One CachedAttention call in float64, with the mistakes named in `how`."""
    x = x.double()
    B, T, D = x.shape
    H, H_kv, base = cfg["H"], cfg["H_kv"], cfg["base"]
    old = cache.k[layer] if cache is not None else None
    p0 = 0 if old is None else old.size(2)
    positions = torch.arange(p0, p0 + T)
    turn = torch.arange(T) if ("restart" in how or "restart-mask" in how) else positions
    pairs = "interleaved" in how
    q = _rope(_split(_linear(x, state, prefix + "w_q.weight"), H), turn, base, pairs)
    k = _split(_linear(x, state, prefix + "w_k.weight"), H_kv)
    v = _split(_linear(x, state, prefix + "w_v.weight"), H_kv)
    if "unrotated" not in how:
        k = _rope(k, turn, base, pairs)
    if "values-rotated" in how:
        v = _rope(v, turn, base)
    keys, values = k, v
    if cache is not None:
        if old is not None:
            keys, values = torch.cat([old, k], dim=2), torch.cat([cache.v[layer], v], dim=2)
        cache.k[layer], cache.v[layer] = keys, values
        if "new-only" in how:
            keys, values = k, v
    S = keys.size(2)
    if "twice" in how:
        keys = _rope(keys, torch.arange(S), base)
    mask = _mask(how, T, S, positions, torch.arange(S))
    n_rep = H // H_kv
    keys, values = keys.repeat_interleave(n_rep, 1), values.repeat_interleave(n_rep, 1)
    scores = (q @ keys.transpose(-2, -1) / math.sqrt(D // H)).masked_fill(mask, float("-inf"))
    # a fully blocked row (the first token, under a mask that blocks the diagonal): zero
    # weights, attention.py's promise
    weights = scores.softmax(dim=-1).masked_fill(mask.all(dim=-1, keepdim=True), 0.0)
    heads = weights @ values
    if "merge-view" not in how:  # merge-view: multihead's merge without a transpose
        heads = heads.transpose(1, 2)
    return _linear(heads.reshape(B, T, D), state, prefix + "w_o.weight")


@model
def _rms(x, weight):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-6) * weight.double()


@model
def _decoder64(x, calls, how=(), cache=None):
    """TinyDecoder in float64 on each call's tokens in turn (sharing `cache` when given)."""
    state, outs = x["state"], []
    for tokens in calls:
        h = state["token_embed.weight"].double()[tokens]
        for i in range(x["L"]):
            normed = _rms(h, state[f"norms.{i}.weight"])
            h = h + _layer64(normed, x, state, f"layers.{i}.", cache, i, how)
        outs.append(_linear(_rms(h, state["norm.weight"]), state, "lm_head.weight"))
    return outs


# The mistakes a decoding run can show, each with the misconception that names it.
# A single step whose mask lets it see key 0 only outputs that key's value whatever the
# rotation: the mask mistake is named before the restart that also restarts the mask.
LAYER_MISTAKES = (
    (MISTAKES["kv-positions-restart"], ("restart",)),
    (MISTAKES["kv-mask-not-offset"], ("mask-not-offset",)),
    (MISTAKES["kv-positions-restart"], ("restart-mask",)),
    (MISTAKES["kv-keys-used-unrotated"], ("unrotated",)),
    (MISTAKES["kv-keys-rotated-twice"], ("twice",)),
    (MISTAKES["kv-prefill-no-mask"], ("no-mask",)),
    (MISTAKES["kv-append-new-only"], ("new-only",)),
    (ROTARY_MISTAKES["rope-rotates-v"], ("values-rotated",)),
    # the earlier modules' mistakes, made again where this layer does their work itself
    (MASKS_MISTAKES["causal-blocks-diagonal"], ("blocks-diagonal",)),
    (MULTIHEAD_MISTAKES["merge-view-no-transpose"], ("merge-view",)),
    (ROTARY_MISTAKES["rope-interleaved-pairs"], ("interleaved",)),
)


@model
def _layer_runs(x, how=()):
    """Each call's output and the final cache, in float64, for the layer checks' inputs."""
    cache = _Cache(2)
    outs = [_layer64(xi, x, x["state"], "", cache, x["layer"], how) for xi in x["xs"]]
    return outs, cache


@model
def _attend_given(x, cfg, state, prefix, p0, keys, values):
    """One CachedAttention call in float64, right given what the student's own cache did: the
    new tokens x at positions p0, p0 + 1, ... (p0: what the cache's length() said), the
    queries attending to the keys and values the cache's append returned (S of them, key j
    taken to sit at position j). Returns (out, k, v), k (rotated) and v being what the call
    should append."""
    x = x.double()
    B, T, D = x.shape
    H, H_kv, base = cfg["H"], cfg["H_kv"], cfg["base"]
    positions = torch.arange(p0, p0 + T)
    q = _rope(_split(_linear(x, state, prefix + "w_q.weight"), H), positions, base)
    k = _rope(_split(_linear(x, state, prefix + "w_k.weight"), H_kv), positions, base)
    v = _split(_linear(x, state, prefix + "w_v.weight"), H_kv)
    n_rep = H // H_kv
    keys = keys.double().repeat_interleave(n_rep, 1)
    values = values.double().repeat_interleave(n_rep, 1)
    mask = torch.arange(keys.size(2))[None, :] > positions[:, None]
    scores = (q @ keys.transpose(-2, -1) / math.sqrt(D // H)).masked_fill(mask, float("-inf"))
    weights = scores.softmax(dim=-1).masked_fill(mask.all(dim=-1, keepdim=True), 0.0)
    heads = (weights @ values).transpose(1, 2).reshape(B, T, D)
    return _linear(heads, state, prefix + "w_o.weight"), k, v


@model
def _layer_given(x, i, p0, keys, values):
    """Call i of the layer checks, right given the cache's p0, keys and values (_attend_given)."""
    return _attend_given(x["xs"][i], x, x["state"], "", p0, keys, values)


@model
def _decoder_given(x, calls, given):
    """TinyDecoder in float64 on each call's tokens in turn, each layer right given what the
    student's own cache did at that call (given[call][layer] = (p0, keys, values)): the last
    position's logits of every call (B, calls, V), and the (k, v) every layer should append,
    [call][layer]."""
    state, logits, appended = x["state"], [], []
    for s, tokens in enumerate(calls):
        h = state["token_embed.weight"].double()[tokens]
        appended.append([])
        for i in range(x["L"]):
            normed = _rms(h, state[f"norms.{i}.weight"])
            out, k, v = _attend_given(normed, x, state, f"layers.{i}.", *given[s][i])
            h = h + out
            appended[-1].append((k, v))
        logits.append(_linear(_rms(h, state["norm.weight"]), state, "lm_head.weight")[:, -1])
    return torch.stack(logits, dim=1), appended


def _details(x, i, what):
    p0 = sum(xi.size(1) for xi in x["xs"][:i])
    T = x["xs"][i].size(1)
    details = {"p0": p0, "T": T, "S": p0 + T}
    return details if what is None else {"what": what, **details}


def _layer_candidates(x, i, what=None):
    """(misconception, lazy float32 output of call i under that mistake, details); `what` is
    left to assert_close when None."""

    def lazy(how):
        return lambda: _layer_runs(x, how)[0][i].float()

    return [(m, lazy(how), _details(x, i, what)) for m, how in LAYER_MISTAKES]
