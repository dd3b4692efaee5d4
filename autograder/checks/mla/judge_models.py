"""Models of multi-head latent attention, right and with each named mistake (float64, never in
the process that runs student code); the verdicts are in judge.py.

Every model takes the check's config and weights (the state dict the grader loads) and a tuple
`how` of the mistakes to make, and returns float32, as the student's code does.
"""

from __future__ import annotations

import math

import torch

from ...core.verdicts import model

# A float32 run against a float64 model of the same computation: errors of a few float32
# epsilons times the sizes, far below what a mistake changes.
MODEL_TOL = {"atol": 1e-4, "rtol": 1e-4}
# Two float32 runs of the student's own code, the absorbed form against the naive one: the
# same products associated differently ((c_Q W_UQᵀ) W_UK against c_Q (W_UQᵀ W_UK)), so the
# rounding differs by a few float32 epsilons times the sums' sizes (measured: under 1e-6).
OWN_TOL = {"atol": 2e-5, "rtol": 1e-4}


def _rope(x, positions, base):
    """The rotary model (halves convention), float64."""
    half = x.size(-1) // 2
    theta = float(base) ** (-torch.arange(half, dtype=torch.float64) * (2.0 / x.size(-1)))
    angles = torch.outer(positions.to(torch.float64), theta)
    z = torch.complex(x[..., :half].double(), x[..., half:].double()) * torch.polar(
        torch.ones_like(angles), angles
    )
    return torch.cat([z.real, z.imag], dim=-1)


def _rms(x, weight):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * weight.double()


def _lin(x, state, name):
    return x @ state[f"{name}.weight"].double().T


def _heads(t, H):
    B, T, F = t.shape
    return t.reshape(B, T, H, F // H).transpose(1, 2)


def _query(x, cfg, state, positions, how):
    """(c_Q, q_rope per head): the query latent and the rotated rotary queries."""
    c_q = _lin(x, state, "w_dq")
    if "no-q-norm" not in how:
        c_q = _rms(c_q, state["q_norm.weight"])
    q_rope = _heads(_lin(c_q, state, "w_qr"), cfg["H"])
    if "rope-whole-head" not in how:
        q_rope = _rope(q_rope, positions, cfg["base"])
    return c_q, q_rope


def _kv(x, cfg, state, positions, how):
    """(c_KV, k_rope) of these tokens, as the cache holds them (under the mistakes `how`)."""
    c_kv = _lin(x, state, "w_dkv")
    if "no-kv-norm" not in how and "cache-before-norm" not in how:
        c_kv = _rms(c_kv, state["kv_norm.weight"])
    k_rope = _lin(x, state, "w_kr")
    if "rope-whole-head" not in how:
        k_rope = _rope(k_rope, positions, cfg["base"])
    return c_kv, k_rope


def _attend(scores, mask, values):
    return scores.masked_fill(mask, float("-inf")).softmax(dim=-1) @ values


@model
def naive(x, cfg, state, how=()):
    """MultiHeadLatentAttention.forward on x (float64 inside), with the mistakes `how`:
    no-q-norm, no-kv-norm, scale-nope (1/sqrt(d_head)), rope-whole-head (rotary on the whole
    [nope, rope] head of q and k), no-mask."""
    x = x.double()
    B, T, _ = x.shape
    H, d_head, d_rope = cfg["H"], cfg["d_head"], cfg["d_rope"]
    positions = torch.arange(T)
    c_q, q_rope = _query(x, cfg, state, positions, how)
    c_kv, k_rope = _kv(x, cfg, state, positions, how)
    q = torch.cat([_heads(_lin(c_q, state, "w_uq"), H), q_rope], dim=-1)
    k_rope = k_rope[:, None].expand(B, H, T, d_rope)
    k = torch.cat([_heads(_lin(c_kv, state, "w_uk"), H), k_rope], dim=-1)
    if "rope-whole-head" in how:
        q, k = _rope(q, positions, cfg["base"]), _rope(k, positions, cfg["base"])
    v = _heads(_lin(c_kv, state, "w_uv"), H)
    width = d_head if "scale-nope" in how else d_head + d_rope
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)
    if "no-mask" in how:
        mask = torch.zeros(T, T, dtype=torch.bool)
    heads = _attend(q @ k.transpose(-2, -1) / math.sqrt(width), mask, v)
    return _lin(heads.transpose(1, 2).reshape(B, T, H * d_head), state, "w_o").float()


def _absorb64(cfg, state, how):
    H, d_head, D = cfg["H"], cfg["d_head"], cfg["D"]
    d_c, d_c_q = cfg["d_c"], cfg["d_c_q"]
    w_uq = state["w_uq.weight"].double().view(H, d_head, d_c_q)
    w_uk = state["w_uk.weight"].double()
    w_uk = (
        w_uk.reshape(H, d_c, d_head).transpose(1, 2)
        if "uk-view" in how
        else w_uk.view(H, d_head, d_c)
    )
    w_uv = state["w_uv.weight"].double()
    w_uv = (
        w_uv.reshape(H, d_c, d_head).transpose(1, 2)
        if "uv-view" in how
        else w_uv.view(H, d_head, d_c)
    )
    w_o = state["w_o.weight"].double()
    w_o = w_o.reshape(H, d_head, D) if "o-view" in how else w_o.view(D, H, d_head).permute(1, 2, 0)
    return w_uq.transpose(1, 2) @ w_uk, w_uv.transpose(1, 2) @ w_o


@model
def absorb(cfg, state, how=()):
    """absorbed_weights() with the mistakes `how`: uk-view, uv-view (w_uk / w_uv viewed as
    (H, d_c, d_head) and transposed: the rows of the heads mixed), o-view (w_o.weight viewed
    as (H, d_head, D) without transposing)."""
    w_q, w_o = _absorb64(cfg, state, how)
    return w_q.float(), w_o.float()


def _step(x, cfg, state, c_kv, k_rope, w_q, w_o, how):
    """One forward_absorbed call in float64: (out, c_kv, k_rope) with the mistakes `how`."""
    x = x.double()
    B, T, _ = x.shape
    p0 = 0 if c_kv is None else c_kv.size(1)
    positions = torch.arange(p0, p0 + T)
    turn = torch.arange(T) if "restart" in how else positions
    c_q, q_rope = _query(x, cfg, state, turn, how)
    new_c, new_k = _kv(x, cfg, state, turn, how)
    if c_kv is not None:
        new_c = torch.cat([c_kv.double(), new_c], dim=1)
        new_k = torch.cat([k_rope.double(), new_k], dim=1)
    c_all, k_all = new_c, new_k
    if "cache-before-norm" in how:  # the norm applied to everything when it is read
        c_all = _rms(c_all, state["kv_norm.weight"])
    if "rope-at-read" in how:  # cached unrotated, every key rotated when it is read
        k_all = _rope(k_all, torch.arange(k_all.size(1)), cfg["base"])
    if "own-weights" in how or w_q is None:
        w_q, w_o = _absorb64(cfg, state, how)
    q_lat = torch.einsum("btq,hqc->bhtc", c_q, w_q.double())
    scores = q_lat @ c_all[:, None].transpose(-2, -1) + q_rope @ k_all[:, None].transpose(-2, -1)
    width = {"scale-latent": cfg["d_c"] + cfg["d_rope"], "scale-nope": cfg["d_head"]}
    scores = scores / math.sqrt(
        next((w for k, w in width.items() if k in how), cfg["d_head"] + cfg["d_rope"])
    )
    S = c_all.size(1)
    mask = torch.arange(S)[None, :] > positions[:, None]
    if "mask-not-offset" in how:
        mask = torch.ones(T, S, dtype=torch.bool).triu(1)
    out = torch.einsum("bhtc,hcd->btd", _attend(scores, mask, c_all[:, None]), w_o.double())
    return out, new_c, new_k


@model
def step(x, cfg, state, c_kv, k_rope, w_q, w_o, how=()):
    """forward_absorbed(x, (c_kv, k_rope), (w_q, w_o)) with the mistakes `how`: no-q-norm,
    no-kv-norm, scale-latent (1/sqrt(d_c + d_rope)), scale-nope, restart (positions from 0),
    mask-not-offset ((T, S) triangle from 0), cache-before-norm (the cache holds the latent
    before its norm, normed when read), rope-at-read (the cache holds k_rope unrotated, all
    rotated when read), own-weights (the absorbed matrices given are ignored); without
    matrices given, absorb's mistakes (uk-view, uv-view, o-view) too."""
    out, c, k = _step(x, cfg, state, c_kv, k_rope, w_q, w_o, how)
    return out.float(), c.float(), k.float()


@model
def calls(xs, cfg, state, how=()):
    """forward_absorbed on each of xs in turn, passing the cache on: every call's output."""
    outs, c_kv, k_rope = [], None, None
    for x in xs:
        out, c_kv, k_rope = _step(x, cfg, state, c_kv, k_rope, None, None, how)
        outs.append(out.float())
    return outs


@model
def cache_bytes(case, how=""):
    """cache_bytes_per_token for one case (kind, H, d_head, H_kv, d_c, d_rope, dtype), with one
    of the mistakes: keys-only, latent-twice, no-rope, rope-per-head, elements, gqa-all-heads."""
    kind, H, d_head, H_kv, d_c, d_rope, dtype = case
    size = 1 if how == "elements" else getattr(torch, dtype).itemsize
    kv = 1 if how == "keys-only" else 2
    if kind == "mla":
        rope = 0 if how == "no-rope" else (H * d_rope if how == "rope-per-head" else d_rope)
        return ((2 if how == "latent-twice" else 1) * d_c + rope) * size
    heads = {"mha": H, "gqa": H if how == "gqa-all-heads" else H_kv, "mqa": 1}[kind]
    return kv * heads * d_head * size
