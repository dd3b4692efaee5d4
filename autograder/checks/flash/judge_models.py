"""Models of flash.py's computations, right and with each named mistake (float64, here only:
never in the process that runs student code), and the candidate lists that name a mistake from
its output; the verdicts are in judge.py.
"""

from __future__ import annotations

import math

import torch

from ...core.check import WRONG_DTYPE, Failure
from ...core.misconception_data import misconceptions_of
from ...core.verdicts import model, tensor

MISTAKES = misconceptions_of(__name__)  # misconceptions.toml: messages and hint ladders


def _floating(got, key, what, shape):
    """got[key]: a tensor of `shape` with a floating dtype, or a Failure naming why."""
    value = tensor(got, key, what, shape=shape)
    if not value.is_floating_point():
        raise Failure(WRONG_DTYPE, what=what, got=value.dtype, expected="a floating dtype")
    return value


def _scores(q, k, scale, causal, qs, qe, ks, ke, *, local=False):
    """A tile's scaled scores in float64, masked when causal (local: the mask compares the
    positions inside the tile, 0.., instead of the absolute ones)."""
    s = q[..., qs:qe, :] @ k[..., ks:ke, :].transpose(-2, -1) * scale
    if causal and ke - 1 > qs:  # the tile crosses the diagonal
        rows = torch.arange(qe - qs)[:, None] + (0 if local else qs)
        cols = torch.arange(ke - ks)[None, :] + (0 if local else ks)
        s = s.masked_fill(cols > rows, float("-inf"))
    return s


@model
def _forward(x, causal, bq, bk, *, mistake="", keys="k"):
    """(out, lse) of the tiled forward pass with a chosen mistake, float64, cast to q's dtype.

    mistake: "" (none), "no rescale", "no rescale l", "no rescale acc", "scale 1", "scale d",
    "skips diagonal" (the tile on the diagonal is skipped too), "local mask", "lse is log l",
    "lse is max", "causal ignored".
    """
    q, k, v = x["q"].double(), x[keys].double(), x["v"].double()
    T, d = q.shape[-2:]
    scale = {"scale 1": 1.0, "scale d": 1.0 / d}.get(mistake, 1.0 / math.sqrt(d))
    causal = causal and mistake != "causal ignored"
    outs, lses = [], []
    for qs in range(0, T, bq):
        qe = min(qs + bq, T)
        m = torch.full((*q.shape[:-2], qe - qs, 1), -math.inf, dtype=torch.float64)
        l = torch.zeros_like(m)
        acc = torch.zeros((*q.shape[:-2], qe - qs, v.size(-1)), dtype=torch.float64)
        stop = (qs if mistake == "skips diagonal" else qe) if causal else T
        for ks in range(0, stop, bk):
            ke = min(ks + bk, T)
            s = _scores(q, k, scale, causal, qs, qe, ks, ke, local=mistake == "local mask")
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
            alpha = torch.exp(m - m_new)
            p = torch.exp(s - m_new)
            keep_l = mistake in ("no rescale", "no rescale l")
            keep_acc = mistake in ("no rescale", "no rescale acc")
            l = (l if keep_l else alpha * l) + p.sum(dim=-1, keepdim=True)
            acc = (acc if keep_acc else alpha * acc) + p @ v[..., ks:ke, :]
            m = m_new
        outs.append(acc / l)
        lse = {"lse is log l": torch.log(l), "lse is max": m}.get(mistake, m + torch.log(l))
        lses.append(lse.squeeze(-1))
    dtype = x["q"].dtype
    return torch.cat(outs, dim=-2).to(dtype), torch.cat(lses, dim=-1).to(dtype)


@model
def _backward(x, prefix, causal, bq, bk, *, mistake=""):
    """(dq, dk, dv) of the tiled backward pass with a chosen mistake, float64, cast to q's
    dtype. mistake: "" (none), "no D", "D per tile", "D rowsum dO", "dV not transposed",
    "scale twice", "scale missing", "softmax per tile", "skips diagonal", "causal ignored"."""
    q, k, v = (x[prefix + n].double() for n in ("q", "k", "v"))
    c = int(causal)
    out, lse = x[f"{prefix}out{c}"].double(), x[f"{prefix}lse{c}"].double()
    do = x[prefix + "grad_out"].double()
    T, d = q.shape[-2:]
    scale = 1.0 / math.sqrt(d)
    grad_scale = {"scale twice": scale * scale, "scale missing": 1.0}.get(mistake, scale)
    D = do.sum(dim=-1) if mistake == "D rowsum dO" else (do * out).sum(dim=-1)
    if mistake == "no D":
        D = torch.zeros_like(D)
    causal = causal and mistake != "causal ignored"
    dq = torch.zeros_like(q)
    dks, dvs = [], []
    for ks in range(0, T, bk):
        ke = min(ks + bk, T)
        k_j, v_j = k[..., ks:ke, :], v[..., ks:ke, :]
        dk_j, dv_j = torch.zeros_like(k_j), torch.zeros_like(v_j)
        start = (ks // bq) * bq if causal else 0
        if causal and mistake == "skips diagonal":
            start = (ks // bq + 1) * bq  # the query tile that holds key ks is skipped too
        for qs in range(start, T, bq):
            qe = min(qs + bq, T)
            q_i, do_i = q[..., qs:qe, :], do[..., qs:qe, :]
            s = _scores(q, k, scale, causal, qs, qe, ks, ke)
            if mistake == "softmax per tile":
                p = torch.nan_to_num(torch.softmax(s, dim=-1))
            else:
                p = torch.exp(s - lse[..., qs:qe, None])
            dv_j = dv_j + (p if mistake == "dV not transposed" else p.transpose(-2, -1)) @ do_i
            dp = do_i @ v_j.transpose(-2, -1)
            D_i = D[..., qs:qe, None]
            if mistake == "D per tile":
                D_i = (p * dp).sum(dim=-1, keepdim=True)
            ds = p * (dp - D_i)
            dq[..., qs:qe, :] += ds @ k_j * grad_scale
            dk_j = dk_j + ds.transpose(-2, -1) @ q_i * grad_scale
        dks.append(dk_j)
        dvs.append(dv_j)
    dtype = x[prefix + "q"].dtype
    return tuple(t.to(dtype) for t in (dq, torch.cat(dks, dim=-2), torch.cat(dvs, dim=-2)))


@model
def _quadratic(x, causal, dtype_name="float32", prefix=""):
    """(out, dq, dk, dv) of autograd through quadratic attention (float64), cast to dtype."""
    leaves = [x[prefix + n].double().requires_grad_() for n in ("q", "k", "v")]
    q, k, v = leaves
    T = q.size(-2)
    s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if causal:
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    out = s.softmax(dim=-1) @ v
    grads = torch.autograd.grad(out, leaves, x[prefix + "grad_out"].double())
    dtype = getattr(torch, dtype_name)
    return tuple(t.detach().to(dtype) for t in (out, *grads))


def _forward_candidates(x, causal, bq, bk, which):
    """[(misconception, lazy output, details)]: which = 0 (out) or 1 (lse)."""
    T, d = x["q"].shape[-2:]
    found = []

    def add(mistake, name, **details):
        found.append((mistake, lambda: _forward(x, causal, bq, bk, mistake=name)[which], details))

    if causal:
        add(MISTAKES["flash-causal-ignored"], "causal ignored")
        if bq < T or bk < T:
            add(MISTAKES["flash-causal-mask-local-positions"], "local mask")
    add(MISTAKES["flash-scale-wrong"], "scale 1", used="1 (no scaling)", d=d)
    add(MISTAKES["flash-scale-wrong"], "scale d", used=f"d = {d}", d=d)
    if bk < T:
        for name in ("no rescale", "no rescale l", "no rescale acc"):
            add(MISTAKES["flash-no-rescale"], name)
    if which == 1:
        add(MISTAKES["flash-lse-missing-max"], "lse is log l")
        add(MISTAKES["flash-lse-is-max"], "lse is max")
    return found


def _backward_candidates(x, prefix, causal, bq, bk):
    """[(misconception, lazy (dq, dk, dv), details)]."""
    found = []
    T = x[prefix + "q"].size(-2)

    def add(mistake, name, **details):
        found.append((mistake, lambda: _backward(x, prefix, causal, bq, bk, mistake=name), details))

    add(MISTAKES["flash-dS-missing-D"], "no D")
    if bk < T:
        add(MISTAKES["flash-D-per-tile"], "D per tile")
    add(MISTAKES["flash-D-wrong"], "D rowsum dO")
    if bq == bk and T % bq == 0:  # P @ dO fits square tiles only
        add(MISTAKES["flash-dV-not-transposed"], "dV not transposed")
    add(MISTAKES["flash-backward-scale"], "scale twice", how="twice (1/d instead of 1/√d)")
    add(MISTAKES["flash-backward-scale"], "scale missing", how="not at all")
    add(MISTAKES["flash-backward-softmax-per-tile"], "softmax per tile")
    if causal:
        add(MISTAKES["flash-causal-ignored"], "causal ignored")
        add(MISTAKES["flash-causal-skips-diagonal"], "skips diagonal", block=bq)
    return found


@model
def _exact(x, causal, keys="k"):
    """(out, lse) of quadratic attention, float64 (no tiles), cast to q's dtype."""
    q, k, v = x["q"].double(), x[keys].double(), x["v"].double()
    T = q.size(-2)
    s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if causal:
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    out = torch.exp(s - lse[..., None]) @ v
    return out.to(x["q"].dtype), lse.to(x["q"].dtype)
