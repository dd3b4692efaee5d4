"""Models of efficient.py's computations, right and with each named mistake (float64, here only:
never in the process that runs student code), and the candidate lists that name a mistake from
its output; the verdicts are in judge.py.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ...core.check import WRONG_DTYPE, Failure
from ...core.misconception_data import misconceptions_of
from ...core.verdicts import ModelUnavailable, close, model, tensor

MISTAKES = misconceptions_of(__name__)  # misconceptions.toml: messages and hint ladders


# --------------------------------------------------------------------------- models
# What a computation, right or with a known mistake, gives: float64, cast to the inputs' dtype
# (the expected dtype; verdicts cast the student's result to it, never the reverse).


def _dtype(x):
    return x["q"].dtype


def _floating(got, key, what, shape):
    """got[key]: a tensor of `shape` with a floating dtype, or a Failure naming why."""
    value = tensor(got, key, what, shape=shape)
    if not value.is_floating_point():
        raise Failure(WRONG_DTYPE, what=what, got=value.dtype, expected="a floating dtype")
    return value


def _positions(T):
    return torch.arange(T)[:, None], torch.arange(T)[None, :]  # i (T, 1), j (1, T)


@model
def _attend(q, k, v, blocked=None, scale=None):
    """(out, weights) of softmax attention in float64; fully blocked rows give NaN."""
    q, k, v = q.double(), k.double(), v.double()
    s = q @ k.transpose(-2, -1) / (math.sqrt(q.size(-1)) if scale is None else scale)
    if blocked is not None:
        s = s.masked_fill(blocked, float("-inf"))
    w = s.softmax(dim=-1)
    return w @ v, w


@model
def _masked(x, blocked):
    """(out, weights) under `blocked` (True = blocked), fully blocked rows zero."""
    out, w = _attend(x["q"], x["k"], x["v"], blocked)
    return torch.nan_to_num(out).to(_dtype(x)), torch.nan_to_num(w).to(_dtype(x))


@model
def _strided_blocked(T, s, mistake):
    """The (T, T) mask (True = blocked) of strided attention with a named mistake."""
    i, j = _positions(T)
    dist = i - j
    past = dist >= 0
    kept = {
        "no band": lambda: past & (dist % s == 0),
        "no columns": lambda: past & (dist < s),
        "centred": lambda: (dist.abs() < s) | (dist.abs() % s == 0),
        "future": lambda: (dist < s) | (dist % s == 0),
        # the past test around the band only: dist % s == 0 also holds for -s, -2s, ...
        "columns-future": lambda: (past & (dist < s)) | (dist % s == 0),
        # (dist <= s is no mistake: dist == s is a multiple of s anyway.)
        "stride + 1": lambda: past & ((dist < s + 1) | (dist % (s + 1) == 0)),
        "band - 1": lambda: past & ((dist < s - 1) | (dist % s == 0)),
        "absolute": lambda: past & ((dist < s) | (j % s == 0)),
    }[mistake]()
    return ~kept


def _pattern_candidates(x, which, wrong):
    """[(misconception, lazy output, details)] for each (misconception, lazy blocked mask,
    details)."""
    index = 0 if which == "out" else 1
    return [(m, (lambda b=b: _masked(x, b())[index]), details) for m, b, details in wrong]


PHI = {
    "elu(x) + 1": lambda t: F.elu(t) + 1,
    "elu(x)": F.elu,
    "relu(x)": F.relu,
    "x (no map)": lambda t: t,
    "exp(x)": torch.exp,
    "relu(x) + 1": lambda t: F.relu(t) + 1,
    "softplus(x)": F.softplus,
}


@model
def _linear(x, *, phi="elu(x) + 1", causal=False, norm="keys", diagonal=0, q_div=1, k_div=1):
    """Linear attention in its quadratic form, A = phi(q) phi(k)ᵀ, in float64."""
    q, k, v = (x[n].double() for n in ("q", "k", "v"))
    A = PHI[phi](q / q_div) @ PHI[phi](k / k_div).transpose(-2, -1)  # (..., T, T)
    if causal:
        A = A.tril(diagonal)
    num = A @ v
    eps = 1e-6
    if norm == "keys":
        out = num / (A.sum(dim=-1, keepdim=True) + eps)
    elif norm == "queries":
        out = num / (A.sum(dim=-2)[..., None] + eps)
    elif norm == "values":
        out = num / (num.sum(dim=-1, keepdim=True) + eps)
    else:
        out = num
    return out.to(_dtype(x))


def _linear_candidates(x, causal):
    root = math.sqrt(x["q"].size(-1))
    found = [
        (
            MISTAKES["linear-feature-map"],
            lambda p=p: _linear(x, phi=p, causal=causal),
            {"measured": ""},
        )
        for p in PHI
        if p != "elu(x) + 1"
    ]
    for which, div in (("q", (root, 1)), ("k", (1, root)), ("q and k", (root, root))):
        found.append(
            (
                MISTAKES["linear-scaled"],
                lambda div=div: _linear(x, causal=causal, q_div=div[0], k_div=div[1]),
                {"which": which, "root": root},
            )
        )
    found += [
        (MISTAKES["linear-no-normaliser"], lambda: _linear(x, causal=causal, norm="none"), {}),
        (
            MISTAKES["linear-normaliser-wrong-axis"],
            lambda: _linear(x, causal=causal, norm="queries"),
            {},
        ),
        (
            MISTAKES["linear-normaliser-wrong-axis"],
            lambda: _linear(x, causal=causal, norm="values"),
            {},
        ),
    ]
    if not causal:
        found.append((MISTAKES["causal-always-applied"], lambda: _linear(x, causal=True), {}))
    if causal:
        found += [
            (MISTAKES["linear-causal-ignored"], lambda: _linear(x), {}),
            (
                MISTAKES["linear-causal-excludes-self"],
                lambda: _linear(x, causal=True, diagonal=-1),
                {},
            ),
        ]
    return found


@model
def _exact(x, causal, *, keys=None, strict=False, scale=None):
    """Exact softmax attention (optionally over the first `keys` keys only), float64, cast to
    the inputs' dtype. strict: the causal mask blocks the diagonal too."""
    T = x["q"].size(-2)
    i, j = _positions(T)
    blocked = torch.zeros(T, T, dtype=torch.bool)
    if causal:
        blocked = j >= i if strict else j > i
    if keys is not None:
        blocked = blocked | (torch.arange(T) >= keys)[None, :]
    return _attend(x["q"], x["k"], x["v"], blocked, scale)[0].to(_dtype(x))


@model
def _online(x, causal, chunk, *, rescale_l=True, rescale_acc=True, per_chunk=None, local=False):
    """The chunked loop with a chosen mistake, in float64 (the mistake, not the rounding);
    `local`: the causal mask compares the queries with key positions counted from each
    chunk's start (0 .. c - 1), not the keys' positions in the sequence."""
    q, k, v = (x[n].double() for n in ("q", "k", "v"))
    T, d = q.shape[-2:]
    i = torch.arange(T)[:, None]
    m = torch.full((*q.shape[:-1], 1), -math.inf, dtype=torch.float64)
    l = torch.zeros_like(m)
    acc = torch.zeros((*q.shape[:-1], v.size(-1)), dtype=torch.float64)
    parts = []
    for start in range(0, T, chunk):
        s = q @ k[..., start : start + chunk, :].transpose(-2, -1) / math.sqrt(d)
        if causal:
            first = 0 if local else start
            cols = torch.arange(first, first + min(start + chunk, T) - start)[None, :]
            s = s.masked_fill(cols > i, -math.inf)
        if per_chunk:
            w = torch.nan_to_num(s.softmax(dim=-1))
            parts.append(w @ v[..., start : start + chunk, :])
            continue
        m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
        alpha = torch.exp(m - m_new)
        p = torch.exp(s - m_new)
        l = (l * alpha if rescale_l else l) + p.sum(dim=-1, keepdim=True)
        acc = (acc * alpha if rescale_acc else acc) + p @ v[..., start : start + chunk, :]
        m = m_new
    if per_chunk == "sum":
        return sum(parts).to(_dtype(x))
    if per_chunk == "mean":
        return (sum(parts) / len(parts)).to(_dtype(x))
    return (acc / l).to(_dtype(x))


def _mistaken_loops(x, causal, chunk):
    """The chunk-combining mistakes: per-chunk softmax, sums not rescaled."""
    found = [
        (
            MISTAKES["chunked-softmax-per-chunk"],
            lambda: _online(x, causal, chunk, per_chunk="sum"),
            {},
        ),
        (
            MISTAKES["chunked-softmax-per-chunk"],
            lambda: _online(x, causal, chunk, per_chunk="mean"),
            {},
        ),
    ]
    for rl, ra in ((False, False), (True, False), (False, True)):
        found.append(
            (
                MISTAKES["chunked-no-rescale"],
                lambda rl=rl, ra=ra: _online(x, causal, chunk, rescale_l=rl, rescale_acc=ra),
                {},
            )
        )
    return found


def _chunked_candidates(x, causal, chunk):
    T, d = x["q"].shape[-2:]
    found = []
    if causal:
        found.append((MISTAKES["chunked-causal-ignored"], lambda: _exact(x, False), {}))
    else:
        found.append((MISTAKES["causal-always-applied"], lambda: _exact(x, True), {}))
    if causal and chunk < T:
        found.append(
            (
                MISTAKES["chunked-causal-chunk-positions"],
                lambda: _online(x, True, chunk, local=True),
                {},
            )
        )
    if T % chunk and chunk < T:
        kept = T - T % chunk
        found.append(
            (
                MISTAKES["chunked-drops-tail"],
                lambda: _exact(x, causal, keys=kept),
                {"T": T, "chunk": chunk},
            )
        )
    names = {"1 (no scaling)": 1.0, f"d = {d}": float(d)}
    names[f"√d_v = √{x['v'].size(-1)}"] = math.sqrt(x["v"].size(-1))
    names[f"√T = √{T}"] = math.sqrt(T)
    for used, c in names.items():
        found.append(
            (
                MISTAKES["chunked-wrong-scale"],
                lambda c=c: _exact(x, causal, scale=c),
                {"used": used, "expected": math.sqrt(d), "d": d},
            )
        )
    if chunk < T:
        found += _mistaken_loops(x, causal, chunk)
    return found


def _blocks_diagonal(out, x):
    """Whether a causal output is exact attention under a mask that also blocks j = i (the
    rows after the first; the first row sees nothing then, whatever it gives). Never in the
    student copy, which has no model to tell."""
    try:
        strict = _exact(x, True, strict=True)
    except ModelUnavailable:
        return False
    return close(out[..., 1:, :], strict[..., 1:, :])
