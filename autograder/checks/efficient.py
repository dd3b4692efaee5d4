"""Checks for efficient.py: local, strided, linear and chunked (online-softmax) attention.

Memory and cost are checked deterministically, never by timing or process memory: the probe
records every aten op the student's code runs (autograder/dispatch.py) and returns the size
of the largest tensor any op produced, in elements of new storage, and the number of ops.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch.utils._pytree import tree_leaves

from ..core import Check, Failure, misconception
from ..dispatch import OpCounter
from ..trusted.attention import scaled_dot_product_attention as trusted_attention
from ..verdicts import assert_close, close, tensor
from ._common import pair, randn

MODULE = "efficient"
ORDER = 80

# --------------------------------------------------------------------------- misconceptions

LOCAL_OFF_BY_ONE = misconception(
    "local-window-off-by-one",
    "With window={window}, your local attention lets each query see {seen} keys; it should see "
    "exactly {window}: itself and the {before} before it.",
    "Key j is too far back when i - j >= window (not i - j > window): "
    "sliding_window_mask(T, window) already encodes this.",
)
LOCAL_NOT_CAUSAL = misconception(
    "local-not-causal",
    "Your local attention lets queries see keys in the future (j > i): the window must reach "
    "backwards only.",
    "Use sliding_window_mask(T, window), which blocks j > i as well as i - j >= window; a "
    "band |i - j| < window centred on the query is not causal.",
)
STRIDED_NO_BAND = misconception(
    "strided-drops-local-band",
    "Your strided attention keeps only every stride-th key (i - j a multiple of {stride}) and "
    "drops the local band: query i no longer sees its {before} nearest predecessors.",
    "Allowed = (i - j >= 0) & ((i - j < stride) | ((i - j) % stride == 0)): the band and the "
    "strided columns together, so that two hops reach every earlier key.",
)
STRIDED_NO_COLUMNS = misconception(
    "strided-drops-columns",
    "Your strided attention keeps only the local band (i - j < {stride}): the keys a multiple "
    "of the stride further back are missing, so this is plain local attention.",
    "Add the strided keys: | ((i - j) % stride == 0), still causal.",
)
STRIDED_NOT_CAUSAL = misconception(
    "strided-not-causal",
    "Your strided attention lets queries see keys in the future (j > i).",
    "Combine the pattern with (i - j >= 0): in Python, a negative i - j is < stride and "
    "(-stride) % stride == 0, so both tests let the future through on their own.",
)
STRIDE_OFF_BY_ONE = misconception(
    "stride-off-by-one",
    "With stride={stride}, your local band is off by one: query i should see itself and the "
    "{before} keys before it (i - j < stride), then every stride-th key further back.",
    "The band is i - j < stride (not < stride - 1), the columns (i - j) % stride == 0.",
)
STRIDED_ABSOLUTE = misconception(
    "strided-absolute-positions",
    "Your strided columns are fixed positions (j % stride == 0), the same for every query; "
    "in the strided pattern they count back from each query: (i - j) % stride == 0.",
    "Use the distance i - j, not the key position j alone.",
)
LINEAR_NO_NORMALISER = misconception(
    "linear-no-normaliser",
    "Your linear attention returns the numerator phi(q_i)ᵀ Σ_j phi(k_j) v_jᵀ without dividing by "
    "the normaliser phi(q_i)ᵀ Σ_j phi(k_j): the weights no longer sum to 1.",
    "Divide by den = phi_q @ phi_k.sum(dim=-2)[..., None] (plus eps); it plays the part of the "
    "softmax's denominator.",
)
LINEAR_WRONG_AXIS = misconception(
    "linear-normaliser-wrong-axis",
    "Your linear attention normalises over the wrong axis: query i must be divided by "
    "phi(q_i)ᵀ Σ_j phi(k_j), a sum over the keys j (its own row of the kernel matrix).",
    "z = phi_k.sum(dim=-2) sums over the positions (..., T, d) -> (..., d); then "
    "den = phi_q @ z[..., None], one number per query. Not a sum over queries or over d_v.",
)
LINEAR_FEATURE_MAP = misconception(
    "linear-feature-map",
    "Your feature map is not phi(x) = elu(x) + 1: plain elu, relu or no map at all can be zero "
    "or negative, so the 'weights' phi(q)·phi(k) can be negative and the normaliser can be "
    "close to 0 (huge or infinite outputs).",
    "phi_q = F.elu(q) + 1 and phi_k = F.elu(k) + 1: every feature is > 0, so every weight is "
    "> 0 and the normaliser never vanishes.",
)
LINEAR_CAUSAL_IGNORED = misconception(
    "linear-causal-ignored",
    "With causal=True your linear attention still sums over every key, future ones included.",
    "For causal=True, use running sums over j <= i: torch.cumsum(..., dim=-3) for Σ phi(k_j) "
    "v_jᵀ and torch.cumsum(phi_k, dim=-2) for the normaliser.",
)
LINEAR_CAUSAL_EXCLUSIVE = misconception(
    "linear-causal-excludes-self",
    "Your causal linear attention sums over j < i: query i does not see its own key.",
    "cumsum is inclusive (entry i includes item i): do not shift it by one.",
)
LINEAR_QUADRATIC = misconception(
    "linear-builds-TxT",
    "Your linear attention (causal={causal}) builds a tensor that grows with T²: when T "
    "doubles from {T1} to {T2}, the largest tensor grows from {n1} to {n2} elements "
    "({op}, shape {shape}). Linear attention must never build the (T, T) matrix.",
    "Non-causal: multiply phi_kᵀ @ v first, (d, d_v), then phi_q @ that. Causal: running "
    "sums (cumsum along T) of phi(k_j) v_jᵀ, (T, d, d_v), instead of a masked (T, T) matrix.",
)
LINEAR_OPS_QUADRATIC = misconception(
    "linear-op-count-quadratic",
    "Your linear attention (causal={causal}) runs {o1} tensor ops at T = {T1} and {o2} at "
    "T = {T2}: the work grows with T², e.g. a Python loop over pairs of positions.",
    "Use whole-tensor operations (matmul, cumsum) instead of Python loops over positions.",
)
CHUNKED_OVERFLOW = misconception(
    "chunked-overflow",
    "With large scores (|q·k|/√d in the hundreds) your chunked attention gives inf or NaN: "
    "exp(score) overflows (float32 overflows above exp(88)).",
    "Keep a running maximum m per query and exponentiate exp(s - m_new), never exp(s): every "
    "term is then <= 1.",
)
CHUNKED_NO_RESCALE = misconception(
    "chunked-no-rescale",
    "Your chunked attention does not rescale the running sums when the maximum grows: sums "
    "taken against the old maximum m are mixed with terms taken against the new one.",
    "alpha = exp(m - m_new); then l = l * alpha + p.sum(-1, keepdim=True) and "
    "acc = acc * alpha + p @ v_chunk: rescale both, before adding the new chunk.",
)
CHUNKED_PER_CHUNK = misconception(
    "chunked-softmax-per-chunk",
    "Your chunked attention normalises each chunk on its own and adds (or averages) the "
    "results: the softmax must be over all keys at once.",
    "Keep the unnormalised sums l and acc across chunks and divide once, at the end: "
    "out = acc / l.",
)
CHUNKED_DROPS_TAIL = misconception(
    "chunked-drops-tail",
    "When T is not a multiple of chunk_size, your chunked attention skips the last, shorter "
    "chunk of keys (T = {T}, chunk_size = {chunk}).",
    "Loop with range(0, T, chunk_size) and cut each chunk at min(start + chunk_size, T); "
    "slicing k[..., start:start + chunk_size] does this for you.",
)
CHUNKED_CAUSAL_IGNORED = misconception(
    "chunked-causal-ignored",
    "With causal=True your chunked attention still lets queries see future keys.",
    "In each chunk, block key position start + c when it is > the query position, with a "
    "(T, c) mask built from two aranges, before taking the maximum and the exp.",
)
CHUNKED_QUADRATIC = misconception(
    "chunked-quadratic-memory",
    "Your chunked attention (causal={causal}) creates a tensor of {n} elements ({op}, shape "
    "{shape}); with T = {T}, chunk_size = {chunk} and B·H = {BH}, no tensor may exceed "
    "{limit} elements (T × max(chunk_size, d, d_v) per batch and head).",
    "Never build all (T, T) scores, nor a (T, T) causal mask: per chunk, build the (T, c) "
    "scores and a (T, c) mask from torch.arange(T)[:, None] and torch.arange(start, stop).",
)
CHUNKED_BUILTIN = misconception(
    "chunked-calls-builtin",
    "Your chunked attention calls PyTorch's fused attention ({op}); this exercise is to write "
    "the online softmax yourself.",
    "Follow the numbered steps in the TODO: a loop over key chunks with a running maximum m, "
    "running sum l and accumulator acc.",
)

# --------------------------------------------------------------------------- recording


class _Recorder(OpCounter):
    """OpCounter that also remembers the op that made the largest new storage.

    Sizes are in elements of the output's *storage*: a view (expand, slice, transpose) costs
    no memory of its own, so it counts as the tensor it views, never as its broadcast size.
    """

    def __init__(self):
        super().__init__()
        self.biggest, self.biggest_op, self.biggest_shape = 0, "", ()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = super().__torch_dispatch__(func, types, args, kwargs)
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor):
                n = t.untyped_storage().nbytes() // max(t.element_size(), 1)
                if n > self.biggest:
                    self.biggest = n
                    self.biggest_op = f"aten.{func.overloadpacket.__name__}"
                    self.biggest_shape = tuple(t.shape)
        return out


def _recorded(prefix, rec):
    fused = sorted(name for name in rec.calls if "scaled_dot_product" in name)
    return {
        f"{prefix}largest": int(rec.biggest),
        f"{prefix}largest_op": rec.biggest_op,
        f"{prefix}largest_shape": str(rec.biggest_shape),
        f"{prefix}ops": int(rec.count()),
        f"{prefix}fused": ", ".join(fused),
    }


# --------------------------------------------------------------------------- trusted models
# What a computation (right or with a known mistake) gives, in float64, cast to `like`'s dtype.


def _positions(T):
    return torch.arange(T)[:, None], torch.arange(T)[None, :]  # i (T, 1), j (1, T)


def _masked(x, blocked, like):
    """(out, weights) of plain attention under `blocked` (True = blocked), trusted code."""
    q, k, v = (x[n].double() for n in ("q", "k", "v"))
    out, weights = trusted_attention(q, k, v, mask=blocked)
    return out.to(like.dtype), weights.to(like.dtype)


def _pattern_candidates(x, which, like, wrong):
    """[(misconception, lazy output, details)] for each (misconception, blocked mask, details)."""
    index = 0 if which == "out" else 1
    return [(m, (lambda b=b: _masked(x, b, like)[index]), details) for m, b, details in wrong]


def _phi(x, kind):
    return {
        "elu1": lambda t: F.elu(t) + 1,
        "elu": F.elu,
        "relu": F.relu,
        "identity": lambda t: t,
    }[kind](x)


def _linear(x, like, *, phi="elu1", causal=False, norm="keys", diagonal=0, eps=1e-6):
    """Linear attention in its quadratic form, A = phi(q) phi(k)ᵀ, in float64."""
    q, k, v = (x[n].double() for n in ("q", "k", "v"))
    A = _phi(q, phi) @ _phi(k, phi).transpose(-2, -1)  # (..., T, T)
    if causal:
        A = A.tril(diagonal)
    num = A @ v
    if norm == "keys":
        out = num / (A.sum(dim=-1, keepdim=True) + eps)
    elif norm == "queries":
        out = num / (A.sum(dim=-2)[..., None] + eps)
    elif norm == "values":
        out = num / (num.sum(dim=-1, keepdim=True) + eps)
    else:
        out = num
    return out.to(like.dtype)


def _linear_candidates(x, like, causal):
    found = []
    for phi in ("elu", "relu", "identity"):
        found.append((LINEAR_FEATURE_MAP, lambda p=phi: _linear(x, like, phi=p, causal=causal), {}))
    found += [
        (LINEAR_NO_NORMALISER, lambda: _linear(x, like, causal=causal, norm="none"), {}),
        (LINEAR_WRONG_AXIS, lambda: _linear(x, like, causal=causal, norm="queries"), {}),
        (LINEAR_WRONG_AXIS, lambda: _linear(x, like, causal=causal, norm="values"), {}),
    ]
    if causal:
        found += [
            (LINEAR_CAUSAL_IGNORED, lambda: _linear(x, like), {}),
            (LINEAR_CAUSAL_EXCLUSIVE, lambda: _linear(x, like, causal=True, diagonal=-1), {}),
        ]
    return found


def _exact(x, like, causal, keys=None):
    """Exact softmax attention (optionally over the first `keys` keys only), float64."""
    q, k, v = (x[n].double() for n in ("q", "k", "v"))
    T = q.size(-2)
    blocked = torch.zeros(T, T, dtype=torch.bool)
    if causal:
        i, j = _positions(T)
        blocked = j > i
    if keys is not None:
        blocked = blocked | (torch.arange(T) >= keys)[None, :]
    return trusted_attention(q, k, v, mask=blocked)[0].to(like.dtype)


def _online(x, like, causal, chunk, *, rescale_l=True, rescale_acc=True, per_chunk=None):
    """The chunked loop with a chosen mistake, in float64 (the mistake, not the rounding)."""
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
            s = s.masked_fill(torch.arange(start, min(start + chunk, T))[None, :] > i, -math.inf)
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
        return sum(parts).to(like.dtype)
    if per_chunk == "mean":
        return (sum(parts) / len(parts)).to(like.dtype)
    return (acc / l).to(like.dtype)


def _chunked_candidates(x, like, causal, chunk):
    T = x["q"].size(-2)
    found = []
    if causal:
        found.append((CHUNKED_CAUSAL_IGNORED, lambda: _exact(x, like, False), {}))
    if T % chunk and chunk < T:
        kept = T - T % chunk
        found.append(
            (
                CHUNKED_DROPS_TAIL,
                lambda: _exact(x, like, causal, keys=kept),
                {"T": T, "chunk": chunk},
            )
        )
    if chunk < T:
        found += [
            (CHUNKED_PER_CHUNK, lambda: _online(x, like, causal, chunk, per_chunk="sum"), {}),
            (CHUNKED_PER_CHUNK, lambda: _online(x, like, causal, chunk, per_chunk="mean"), {}),
        ]
        for rl, ra in ((False, False), (True, False), (False, True)):
            found.append(
                (
                    CHUNKED_NO_RESCALE,
                    lambda rl=rl, ra=ra: _online(
                        x, like, causal, chunk, rescale_l=rl, rescale_acc=ra
                    ),
                    {},
                )
            )
    return found


# --------------------------------------------------------------------------- inputs


def _qkv(gen, shape, d, d_v, scale=1.0):
    return {
        "q": randn(gen, *shape, d, scale=scale),
        "k": randn(gen, *shape, d, scale=scale),
        "v": randn(gen, *shape, d_v),
    }


def inputs_pattern(gen):
    return _qkv(gen, (2, 10), 8, 6)  # (B, T, d): no head axis, T = 10


def inputs_linear(gen):
    return _qkv(gen, (2, 2, 12), 6, 5)  # (B, H, T, d), d != d_v


def inputs_linear_positive(gen):
    # Positive q and k: elu(x) = relu(x) = x there, so a map without the +1 stands out, and
    # its normaliser stays well away from 0 (the comparison is about the map, not rounding).
    x = _qkv(gen, (2, 12), 6, 5)
    x["q"], x["k"] = x["q"].abs() + 0.2, x["k"].abs() + 0.2
    return x


COST_LENGTHS = (64, 128)


def inputs_linear_cost(gen):
    # T > d * d_v, so a (T, T) tensor is larger than the prefix sums' (T, d, d_v).
    return _qkv(gen, (1, 2, COST_LENGTHS[-1]), 4, 4)


CHUNK_CASES = ((False, 4), (True, 4), (False, 3), (True, 3), (False, 1), (True, 1))
CHUNK_CASES += ((False, 10), (True, 16))


def inputs_chunked(gen):
    return _qkv(gen, (2, 2, 10), 8, 6)  # T = 10: not a multiple of 3 or 4


def inputs_chunked_rescale(gen):
    # The scores rise along the keys (every query leans on one direction, every key more so
    # the later it comes), so each new chunk raises the running maximum of every row.
    T, d = 12, 8
    x = _qkv(gen, (2, T), d, 6, scale=0.3)
    x["q"] = x["q"] + 1.0
    x["k"] = x["k"] + 0.35 * torch.arange(T, dtype=torch.float32)[:, None]
    return x


def inputs_chunked_large(gen):
    # |q·k| / √d in the hundreds: exp(score) overflows float32 (above exp(88)).
    return _qkv(gen, (2, 2, 12), 8, 6, scale=12.0)


MEMORY = {"T": 64, "chunk": 8}


def inputs_chunked_memory(gen):
    # T / chunk = 8 > B·H = 4, so even one (T, T) mask shared by every head is too large.
    return _qkv(gen, (2, 2, MEMORY["T"]), 8, 8)


# --------------------------------------------------------------------------- probes


WINDOWS = (1, 3, 10, 12)
STRIDES = (1, 2, 3, 4)


def probe_local(mod, x):
    got = {}
    for w in WINDOWS:
        out, weights = pair(
            mod.local_attention(x["q"], x["k"], x["v"], w), "local_attention's result"
        )
        got[f"w{w}/out"], got[f"w{w}/weights"] = out, weights
    return got


def probe_strided(mod, x):
    got = {}
    for s in STRIDES:
        out, weights = pair(
            mod.strided_attention(x["q"], x["k"], x["v"], s), "strided_attention's result"
        )
        got[f"s{s}/out"], got[f"s{s}/weights"] = out, weights
    return got


def probe_linear(mod, x):
    return {"out": mod.linear_attention(x["q"], x["k"], x["v"])}


def probe_linear_causal(mod, x):
    return {"out": mod.linear_attention(x["q"], x["k"], x["v"], causal=True)}


def probe_linear_cost(mod, x):
    got = {}
    for causal in (False, True):
        for T in COST_LENGTHS:
            # Fresh contiguous inputs: a slice would carry the whole input's storage.
            q, k, v = (x[n][..., :T, :].clone() for n in ("q", "k", "v"))
            with _Recorder() as rec:
                mod.linear_attention(q, k, v, causal=causal)
            got.update(_recorded(f"c{int(causal)}/T{T}/", rec))
    return got


def probe_chunked(mod, x):
    got = {}
    for causal, chunk in CHUNK_CASES:
        out = mod.chunked_attention(x["q"], x["k"], x["v"], causal=causal, chunk_size=chunk)
        got[f"c{int(causal)}/chunk{chunk}"] = out
    return got


def probe_chunked_pair(mod, x):
    got = {}
    for causal in (False, True):
        got[f"c{int(causal)}"] = mod.chunked_attention(
            x["q"], x["k"], x["v"], causal=causal, chunk_size=4
        )
    return got


def probe_chunked_memory(mod, x):
    got = {}
    for causal in (False, True):
        q, k, v = (x[n].clone() for n in ("q", "k", "v"))
        with _Recorder() as rec:
            out = mod.chunked_attention(q, k, v, causal=causal, chunk_size=MEMORY["chunk"])
        got.update(_recorded(f"c{int(causal)}/", rec))
        got[f"c{int(causal)}/out"] = out
    return got


# --------------------------------------------------------------------------- verdicts


def _compare_pair(got, want, prefix, what, x, wrong):
    out = tensor(got, f"{prefix}/out", f"{what}'s output", shape=want[f"{prefix}/out"].shape)
    weights = tensor(
        got, f"{prefix}/weights", f"{what}'s weights", shape=want[f"{prefix}/weights"].shape
    )
    like = want[f"{prefix}/out"]
    assert_close(
        weights,
        want[f"{prefix}/weights"],
        f"{what}'s weights",
        _pattern_candidates(x, "weights", like, wrong),
    )
    assert_close(out, like, f"{what}'s output", _pattern_candidates(x, "out", like, wrong))


def verdict_local(got, want, x):
    T = x["q"].size(-2)
    i, j = _positions(T)
    for w in WINDOWS:
        wrong = [
            (LOCAL_OFF_BY_ONE, (j > i) | (i - j > w), {"seen": w + 1}),
            (LOCAL_NOT_CAUSAL, (i - j).abs() >= w, {}),
            (LOCAL_NOT_CAUSAL, i - j >= w, {}),
        ]
        if w > 1:
            wrong.append((LOCAL_OFF_BY_ONE, (j > i) | (i - j >= w - 1), {"seen": w - 1}))
        wrong = [(m, b, {"window": w, "before": w - 1, **d}) for m, b, d in wrong]
        _compare_pair(got, want, f"w{w}", f"local_attention(window={w})", x, wrong)


def verdict_strided(got, want, x):
    T = x["q"].size(-2)
    i, j = _positions(T)
    dist = i - j
    past = dist >= 0
    # Largest stride first: with stride 2, a band one key too narrow is no band at all, and
    # the larger strides tell those two mistakes apart.
    for s in sorted(STRIDES, reverse=True):
        wrong = [
            (STRIDED_NO_BAND, ~(past & (dist % s == 0)), {}),
            (STRIDED_NO_COLUMNS, ~(past & (dist < s)), {}),
            (STRIDED_NOT_CAUSAL, ~((dist.abs() < s) | (dist.abs() % s == 0)), {}),
            (STRIDED_NOT_CAUSAL, ~((dist < s) | (dist % s == 0)), {}),
            # (dist <= s is no mistake: dist == s is a multiple of s anyway.)
            (STRIDE_OFF_BY_ONE, ~(past & ((dist < s + 1) | (dist % (s + 1) == 0))), {}),
            (STRIDE_OFF_BY_ONE, ~(past & ((dist < s - 1) | (dist % s == 0))), {}),
            (STRIDED_ABSOLUTE, ~(past & ((dist < s) | (j % s == 0))), {}),
        ]
        wrong = [(m, b, {"stride": s, "before": s - 1, **d}) for m, b, d in wrong]
        _compare_pair(got, want, f"s{s}", f"strided_attention(stride={s})", x, wrong)


def _linear_verdict(got, want, x, causal):
    what = f"linear_attention(causal={causal})"
    out = tensor(got, "out", what, shape=want["out"].shape, dtype=want["out"].dtype)
    # The quadratic form of the same kernel, computed here: an oracle independent of want.
    quadratic = _linear(x, out, causal=causal)
    if not close(out, quadratic):
        # A map that is not positive makes some normalisers nearly 0, where float32 rounding
        # is amplified: to *name* that mistake (never to pass), compare with a loose tolerance.
        loose = {"atol": 1e-3, "rtol": 1e-2}
        for phi in ("elu", "relu", "identity"):
            if close(out, _linear(x, out, phi=phi, causal=causal), loose):
                raise Failure(LINEAR_FEATURE_MAP)
    assert_close(out, quadratic, what, _linear_candidates(x, out, causal))
    assert_close(out, want["out"], what)


def verdict_linear(got, want, x):
    _linear_verdict(got, want, x, causal=False)


def verdict_linear_causal(got, want, x):
    _linear_verdict(got, want, x, causal=True)


def verdict_linear_cost(got, want, x):
    T1, T2 = COST_LENGTHS
    for causal in (0, 1):
        a, b = f"c{causal}/T{T1}/", f"c{causal}/T{T2}/"
        n1, n2 = int(got[a + "largest"]), int(got[b + "largest"])
        # Linear growth doubles it, quadratic quadruples it; 3 lies between.
        if n2 > 3 * n1:
            raise Failure(
                LINEAR_QUADRATIC,
                causal=bool(causal),
                T1=T1,
                T2=T2,
                n1=n1,
                n2=n2,
                op=got[b + "largest_op"],
                shape=got[b + "largest_shape"],
            )
        o1, o2 = int(got[a + "ops"]), int(got[b + "ops"])
        if o2 > 3 * max(o1, 1):
            raise Failure(LINEAR_OPS_QUADRATIC, causal=bool(causal), T1=T1, T2=T2, o1=o1, o2=o2)


def verdict_chunked(got, want, x):
    for causal, chunk in CHUNK_CASES:
        key = f"c{int(causal)}/chunk{chunk}"
        what = f"chunked_attention(causal={causal}, chunk_size={chunk})"
        out = tensor(got, key, what, shape=want[key].shape, dtype=want[key].dtype)
        exact = _exact(x, out, causal)
        assert_close(out, exact, what, _chunked_candidates(x, out, causal, chunk))
        assert_close(out, want[key], what)


def verdict_chunked_rescale(got, want, x):
    for causal in (False, True):
        key = f"c{int(causal)}"
        what = f"chunked_attention(causal={causal}, chunk_size=4)"
        out = tensor(got, key, what, shape=want[key].shape, dtype=want[key].dtype)
        assert_close(out, _exact(x, out, causal), what, _chunked_candidates(x, out, causal, 4))


def verdict_chunked_large(got, want, x):
    for causal in (False, True):
        key = f"c{int(causal)}"
        what = f"chunked_attention(causal={causal}) with scores in the hundreds"
        out = tensor(got, key, what, shape=want[key].shape, dtype=want[key].dtype)
        if not torch.isfinite(out).all():
            raise Failure(CHUNKED_OVERFLOW)
        # Loosened: scores of a few hundred carry float32 rounding of about 1e-5 each, and
        # the order in which q, k and the scale are multiplied moves them by that much; the
        # near one-hot softmax passes such shifts on to the output.
        tol = {"atol": 1e-4, "rtol": 1e-4}
        assert_close(out, _exact(x, out, causal), what, tol=tol)


def verdict_chunked_memory(got, want, x):
    B, H, T, d = x["q"].shape
    limit = B * H * T * max(MEMORY["chunk"], d, x["v"].size(-1))
    for causal in (0, 1):
        p = f"c{causal}/"
        if got.get(p + "fused"):
            raise Failure(CHUNKED_BUILTIN, op=got[p + "fused"])
        if int(got[p + "largest"]) > limit:
            raise Failure(
                CHUNKED_QUADRATIC,
                causal=bool(causal),
                n=int(got[p + "largest"]),
                op=got[p + "largest_op"],
                shape=got[p + "largest_shape"],
                T=T,
                chunk=MEMORY["chunk"],
                BH=B * H,
                limit=limit,
            )
        what = f"chunked_attention(causal={bool(causal)}, chunk_size={MEMORY['chunk']})"
        out = tensor(got, p + "out", what, shape=want[p + "out"].shape)
        assert_close(out, _exact(x, out, bool(causal)), what)


CHECKS = [
    Check(
        MODULE,
        "local",
        "local_attention equals attention under a causal window (windows 1, 3, T, T + 2)",
        2,
        inputs_pattern,
        probe_local,
        verdict_local,
        "local_attention",
    ),
    Check(
        MODULE,
        "strided",
        "strided_attention: local band plus every stride-th key back (strides 1 to 4)",
        2,
        inputs_pattern,
        probe_strided,
        verdict_strided,
        "strided_attention",
    ),
    Check(
        MODULE,
        "linear",
        "linear_attention equals the elu(x) + 1 kernel attention, normalised per query",
        2,
        inputs_linear,
        probe_linear,
        verdict_linear,
        "linear_attention",
    ),
    Check(
        MODULE,
        "linear-feature-map",
        "linear_attention's feature map is elu(x) + 1 (strictly positive)",
        1,
        inputs_linear_positive,
        probe_linear,
        verdict_linear,
        "linear_attention",
    ),
    Check(
        MODULE,
        "linear-causal",
        "causal linear_attention equals the same kernel under a causal mask",
        2,
        inputs_linear,
        probe_linear_causal,
        verdict_linear_causal,
        "linear_attention",
    ),
    Check(
        MODULE,
        "linear-cost",
        "linear_attention's largest tensor and op count grow linearly in T (T = 64, 128)",
        2,
        inputs_linear_cost,
        probe_linear_cost,
        verdict_linear_cost,
        "linear_attention",
    ),
    Check(
        MODULE,
        "chunked",
        "chunked_attention equals exact attention (causal or not; chunk 1, 3, 4, T, > T)",
        3,
        inputs_chunked,
        probe_chunked,
        verdict_chunked,
        "chunked_attention",
    ),
    Check(
        MODULE,
        "chunked-rescale",
        "chunked_attention rescales its running sums when a chunk raises the maximum",
        1,
        inputs_chunked_rescale,
        probe_chunked_pair,
        verdict_chunked_rescale,
        "chunked_attention",
    ),
    Check(
        MODULE,
        "chunked-large-logits",
        "chunked_attention stays finite and exact with scores in the hundreds",
        1,
        inputs_chunked_large,
        probe_chunked_pair,
        verdict_chunked_large,
        "chunked_attention",
    ),
    Check(
        MODULE,
        "chunked-memory",
        "chunked_attention never makes a tensor larger than T × max(chunk_size, d, d_v) per batch "
        "and head",
        2,
        inputs_chunked_memory,
        probe_chunked_memory,
        verdict_chunked_memory,
        "chunked_attention",
    ),
]
