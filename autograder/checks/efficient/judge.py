"""Judge side of efficient.py's checks: misconceptions, models of right and wrong
computations (float64, here only: never in the process that runs student code), verdicts.

Checks titled "matches the reference" compare values; the others test the property they
name on the student's own runs (chunk-size invariance, shift invariance, the feature map
measured from the outputs, memory and cost), each with a small run that computes nothing
cannot pass, so a mistake elsewhere is charged where it is named, once.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ...core import NOT_FINITE, WRONG_DTYPE, CheckList, Failure
from ...misconception_data import misconceptions_of
from ...tolerances import tolerance
from ...verdicts import ModelUnavailable, assert_close, close, model, tensor
from ..masks.judge import window_with_mistake
from . import probe

CHECKS = CheckList("efficient")

# --------------------------------------------------------------------------- misconceptions

MISTAKES = misconceptions_of(__name__)  # misconceptions.toml: texts and hint ladders
LOCAL_OFF_BY_ONE = MISTAKES["local-window-off-by-one"]
LOCAL_NOT_CAUSAL = MISTAKES["local-not-causal"]
STRIDED_NO_BAND = MISTAKES["strided-drops-local-band"]
STRIDED_NO_COLUMNS = MISTAKES["strided-drops-columns"]
STRIDED_NOT_CAUSAL = MISTAKES["strided-not-causal"]
STRIDE_OFF_BY_ONE = MISTAKES["stride-off-by-one"]
STRIDED_ABSOLUTE = MISTAKES["strided-absolute-positions"]
STRIDE_NOT_VALIDATED = MISTAKES["strided-stride-not-validated"]
LINEAR_NO_NORMALISER = MISTAKES["linear-no-normaliser"]
LINEAR_WRONG_AXIS = MISTAKES["linear-normaliser-wrong-axis"]
LINEAR_FEATURE_MAP = MISTAKES["linear-feature-map"]
LINEAR_SCALED = MISTAKES["linear-scaled"]
LINEAR_CAUSAL_IGNORED = MISTAKES["linear-causal-ignored"]
LINEAR_CAUSAL_EXCLUSIVE = MISTAKES["linear-causal-excludes-self"]
LINEAR_QUADRATIC = MISTAKES["linear-builds-TxT"]
LINEAR_OPS_QUADRATIC = MISTAKES["linear-op-count-quadratic"]
LINEAR_PEAK_QUADRATIC = MISTAKES["linear-memory-grows-TxT"]
CHUNKED_OVERFLOW = MISTAKES["chunked-overflow"]
CHUNKED_NOT_SHIFT_INVARIANT = MISTAKES["chunked-not-shift-invariant"]
CHUNKED_NO_RESCALE = MISTAKES["chunked-no-rescale"]
CHUNKED_PER_CHUNK = MISTAKES["chunked-softmax-per-chunk"]
CHUNKED_CHUNK_DEPENDENT = MISTAKES["chunked-depends-on-chunk-size"]
CHUNKED_NOT_AVERAGE = MISTAKES["chunked-weights-not-normalised"]
CHUNKED_DROPS_TAIL = MISTAKES["chunked-drops-tail"]
CHUNKED_CAUSAL_IGNORED = MISTAKES["chunked-causal-ignored"]
CHUNKED_CAUSAL_DIAGONAL = MISTAKES["chunked-causal-blocks-diagonal"]
CHUNKED_WRONG_SCALE = MISTAKES["chunked-wrong-scale"]
CHUNKED_QUADRATIC = MISTAKES["chunked-quadratic-memory"]
CHUNKED_PEAK = MISTAKES["chunked-memory-peak"]
CHUNKED_BUILTIN = MISTAKES["chunked-calls-builtin"]
NOT_RECORDED = MISTAKES["computation-not-recorded"]

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
        (LINEAR_FEATURE_MAP, lambda p=p: _linear(x, phi=p, causal=causal), {"measured": ""})
        for p in PHI
        if p != "elu(x) + 1"
    ]
    for which, div in (("q", (root, 1)), ("k", (1, root)), ("q and k", (root, root))):
        found.append(
            (
                LINEAR_SCALED,
                lambda div=div: _linear(x, causal=causal, q_div=div[0], k_div=div[1]),
                {"which": which, "root": root},
            )
        )
    found += [
        (LINEAR_NO_NORMALISER, lambda: _linear(x, causal=causal, norm="none"), {}),
        (LINEAR_WRONG_AXIS, lambda: _linear(x, causal=causal, norm="queries"), {}),
        (LINEAR_WRONG_AXIS, lambda: _linear(x, causal=causal, norm="values"), {}),
    ]
    if causal:
        found += [
            (LINEAR_CAUSAL_IGNORED, lambda: _linear(x), {}),
            (LINEAR_CAUSAL_EXCLUSIVE, lambda: _linear(x, causal=True, diagonal=-1), {}),
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
def _online(x, causal, chunk, *, rescale_l=True, rescale_acc=True, per_chunk=None):
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
        return sum(parts).to(_dtype(x))
    if per_chunk == "mean":
        return (sum(parts) / len(parts)).to(_dtype(x))
    return (acc / l).to(_dtype(x))


def _mistaken_loops(x, causal, chunk):
    """The chunk-combining mistakes: per-chunk softmax, sums not rescaled."""
    found = [
        (CHUNKED_PER_CHUNK, lambda: _online(x, causal, chunk, per_chunk="sum"), {}),
        (CHUNKED_PER_CHUNK, lambda: _online(x, causal, chunk, per_chunk="mean"), {}),
    ]
    for rl, ra in ((False, False), (True, False), (False, True)):
        found.append(
            (
                CHUNKED_NO_RESCALE,
                lambda rl=rl, ra=ra: _online(x, causal, chunk, rescale_l=rl, rescale_acc=ra),
                {},
            )
        )
    return found


def _chunked_candidates(x, causal, chunk):
    T, d = x["q"].shape[-2:]
    found = []
    if causal:
        found.append((CHUNKED_CAUSAL_IGNORED, lambda: _exact(x, False), {}))
    if T % chunk and chunk < T:
        kept = T - T % chunk
        found.append(
            (CHUNKED_DROPS_TAIL, lambda: _exact(x, causal, keys=kept), {"T": T, "chunk": chunk})
        )
    names = {"1 (no scaling)": 1.0, f"d = {d}": float(d)}
    names[f"√d_v = √{x['v'].size(-1)}"] = math.sqrt(x["v"].size(-1))
    names[f"√T = √{T}"] = math.sqrt(T)
    for used, c in names.items():
        found.append(
            (
                CHUNKED_WRONG_SCALE,
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


def _oracle(compute, reference):
    """compute(): a model's output, an oracle independent of the reference; in the student
    copy, which has no models, the reference output itself (the verdict rests on it alone)."""
    try:
        return compute()
    except ModelUnavailable:
        return reference


def _same(a, b, tol=None):
    """The student's own two runs agree (NaN where both are NaN counts as agreeing)."""
    a = a.to(b.dtype)
    return bool(torch.allclose(a, b, equal_nan=True, **(tol or tolerance(b.dtype))))


def _worst(a, b):
    diff = torch.nan_to_num((a.double() - b.double()).abs(), nan=float("inf"))
    return float(diff.max()) if diff.numel() else 0.0


# --------------------------------------------------------------------------- evidence


def _evidence(got, p, what):
    """The recorded run is the run that did the work: what the op recorder saw is what the
    profiler saw, and the returned tensor came out of a recorded op."""
    if got.get(p + "profiler_tampered"):
        raise Failure(NOT_RECORDED, what=what, detail="torch's profiler was stopped inside it")
    if got.get(p + "profiler_busy"):
        detail = "torch's profiler was already running when it was called (grading starts none)"
        raise Failure(NOT_RECORDED, what=what, detail=detail)
    if not got.get(p + "returned_recorded"):
        detail = "the tensor it returned was not made by any operation the recorder saw"
        raise Failure(NOT_RECORDED, what=what, detail=detail)
    seen, profiled = int(got[p + "matmuls"]), int(got[p + "profiled_matmuls"])
    # The profiler sees each recorded matrix product twice (once through the recorder).
    if got.get(p + "profiled") and profiled > 2 * seen:
        detail = (
            f"torch's profiler saw {profiled} matrix-product calls, the op recorder {seen} "
            "(a recorded product shows up twice in the profiler, once through the recorder)"
        )
        raise Failure(NOT_RECORDED, what=what, detail=detail)


def _enough_work(got, p, what, need, of):
    if int(got[p + "produced"]) < need:
        detail = (
            f"the operations the recorder saw produced {got[p + 'produced']} elements in all, "
            f"fewer than the {need} {of}"
        )
        raise Failure(NOT_RECORDED, what=what, detail=detail)


# --------------------------------------------------------------------------- verdicts


def _compare_pair(got, want, prefix, what, x, wrong):
    shape = want[f"{prefix}/out"].shape
    out = _floating(got, f"{prefix}/out", f"{what}'s output", shape)
    weights = _floating(
        got, f"{prefix}/weights", f"{what}'s weights", want[f"{prefix}/weights"].shape
    )
    assert_close(
        weights,
        want[f"{prefix}/weights"],
        f"{what}'s weights",
        _pattern_candidates(x, "weights", wrong),
    )
    assert_close(
        out, want[f"{prefix}/out"], f"{what}'s output", _pattern_candidates(x, "out", wrong)
    )


LOCAL_ATTENTION = CHECKS.exercise("local_attention", probe=probe.probe_local)


@LOCAL_ATTENTION.check(
    "local",
    "local_attention matches the reference: attention under a causal window (windows 1, w, T, > T)",
    2,
    inputs=probe.inputs_pattern,
)
def verdict_local(got, want, x):
    T = x["q"].size(-2)
    for n, w in enumerate(x["windows"]):
        # The mistaken masks are sliding_window_mask's (masks' judge names them too).
        wrong = [
            (LOCAL_OFF_BY_ONE, "wider", {"seen": w + 1}),
            (LOCAL_NOT_CAUSAL, "two-sided", {}),
            (LOCAL_NOT_CAUSAL, "future", {}),
        ]
        if w > 1:
            wrong.append((LOCAL_OFF_BY_ONE, "narrower", {"seen": w - 1}))
        wrong = [
            (m, lambda k=k, w=w: window_with_mistake(T, w, k), {"window": w, "before": w - 1, **d})
            for m, k, d in wrong
        ]
        _compare_pair(got, want, f"w{n}", f"local_attention(window={w})", x, wrong)


STRIDED_ATTENTION = CHECKS.exercise("strided_attention", probe=probe.probe_strided)


@STRIDED_ATTENTION.check(
    "strided",
    "strided_attention matches the reference: a local band plus every stride-th key back "
    "(strides 1, 2, 3, s); stride 0 raises ValueError",
    2,
    inputs=probe.inputs_pattern,
)
def verdict_strided(got, want, x):
    T = x["q"].size(-2)
    # Largest stride first: with stride 2, a band one key too narrow is no band at all, and
    # the larger strides tell those two mistakes apart.
    for n, s in sorted(enumerate(x["strides"]), key=lambda ns: -ns[1]):
        wrong = [
            (STRIDED_NO_BAND, "no band"),
            (STRIDED_NO_COLUMNS, "no columns"),
            (STRIDED_NOT_CAUSAL, "centred"),
            (STRIDED_NOT_CAUSAL, "future"),
            (STRIDE_OFF_BY_ONE, "stride + 1"),
            (STRIDE_OFF_BY_ONE, "band - 1"),
            (STRIDED_ABSOLUTE, "absolute"),
        ]
        wrong = [
            (m, lambda k=k, s=s: _strided_blocked(T, s, k), {"stride": s, "before": s - 1})
            for m, k in wrong
        ]
        _compare_pair(got, want, f"s{n}", f"strided_attention(stride={s})", x, wrong)
    if got.get("stride0") != "ValueError":
        raise Failure(STRIDE_NOT_VALIDATED, got=got.get("stride0"))


def _linear_verdict(got, want, x, causal):
    what = f"linear_attention(causal={causal})"
    out = _floating(got, "out", what, want["out"].shape)
    # The quadratic form of the same kernel, computed here: an oracle independent of want.
    quadratic = _oracle(lambda: _linear(x, causal=causal), want["out"])
    if not close(out, quadratic):
        # A map that is not positive makes some normalisers nearly 0, where float32 rounding
        # is amplified: to *name* that mistake (never to pass), compare with a loose tolerance.
        loose = {"atol": 1e-3, "rtol": 1e-2}
        for phi in ("elu(x)", "relu(x)", "x (no map)"):
            try:
                mapped = _linear(x, phi=phi, causal=causal)
            except ModelUnavailable:  # the student copy: not named there
                break
            if close(out, mapped, loose):
                raise Failure(LINEAR_FEATURE_MAP, measured=f" (it behaves like phi(x) = {phi})")
    assert_close(out, quadratic, what, _linear_candidates(x, causal))
    assert_close(out, want["out"], what)


LINEAR_ATTENTION = CHECKS.exercise("linear_attention", probe=probe.probe_linear)


@LINEAR_ATTENTION.check(
    "linear",
    "linear_attention matches the reference: the elu(x) + 1 kernel, normalised per query",
    2,
    inputs=probe.inputs_linear,
)
def verdict_linear(got, want, x):
    _linear_verdict(got, want, x, causal=False)


@LINEAR_ATTENTION.check(
    "linear-feature-map",
    "linear_attention's feature map is elu(x) + 1, measured from your outputs (d = 1)",
    1,
    inputs=probe.inputs_feature_map,
)
def verdict_feature_map(got, want, x):
    # Each row is phi(q) (phi(0), phi(b)) / normaliser: the ratio of its two entries is
    # phi(b) / phi(0), the student's own map at b, whatever the normaliser or a scale of q.
    out = _floating(got, "out", "linear_attention's output", x["v"].shape).double()
    first, second = out[..., 0], out[..., 1]
    if not (torch.isfinite(out).all() and (first > 0).all()):
        measured = ": your outputs give phi(0) = 0 (or NaN), as plain elu, relu or no map do"
        raise Failure(LINEAR_FEATURE_MAP, measured=measured)
    b = x["k"][:, 1:, 0].double().expand_as(first)  # (n, 2): each query row sees key b
    ratio = second / first
    tol = {"atol": 1e-5, "rtol": 1e-4}  # a ratio of two float32 results
    if close(ratio, F.elu(b) + 1, tol):
        return
    for name, phi in PHI.items():
        if phi(torch.zeros(())) > 0 and close(ratio, phi(b) / phi(torch.zeros(())), tol):
            raise Failure(LINEAR_FEATURE_MAP, measured=f" (it behaves like phi(x) = {name})")
    worst = int((ratio - (F.elu(b) + 1)).abs().flatten().argmax())
    at, r, e = (
        float(b.flatten()[worst]),
        float(ratio.flatten()[worst]),
        float(F.elu(b).flatten()[worst] + 1),
    )
    measured = f" (your outputs give phi({at:.3g}) / phi(0) = {r:.4g}; elu(x) + 1 gives {e:.4g})"
    raise Failure(LINEAR_FEATURE_MAP, measured=measured)


@LINEAR_ATTENTION.check(
    "linear-causal",
    "causal linear_attention matches the reference: the same kernel under a causal mask",
    2,
    inputs=probe.inputs_linear,
    probe=probe.probe_linear_causal,
)
def verdict_linear_causal(got, want, x):
    _linear_verdict(got, want, x, causal=True)


@LINEAR_ATTENTION.check(
    "linear-cost",
    "linear_attention's largest tensor, allocations and op count grow linearly in T (T and 2T)",
    0,
    inputs=probe.inputs_linear_cost,
    probe=probe.probe_linear_cost,
    forgeable=True,
)
def verdict_linear_cost(got, want, x):
    T1, T2 = x["lengths"]
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
        what = f"linear_attention(causal={bool(causal)})"
        B, H, _, d = x["q"].shape
        for p, T in ((a, T1), (b, T2)):
            _evidence(got, p, what)
            need = B * H * T * (2 * d + x["v"].size(-1))
            _enough_work(got, p, what, need, "elements of phi(q), phi(k) and the output alone")
        p1, p2 = int(got[a + "peak_bytes"]), int(got[b + "peak_bytes"])
        if got[a + "profiled"] and got[b + "profiled"] and p2 > 3 * max(p1, 1):
            raise Failure(LINEAR_PEAK_QUADRATIC, causal=bool(causal), T1=T1, T2=T2, p1=p1, p2=p2)


CHUNKED_ATTENTION = CHECKS.exercise("chunked_attention", probe=probe.probe_chunked)


@CHUNKED_ATTENTION.check(
    "chunked",
    "chunked_attention matches the reference: exact attention (causal or not; "
    "chunk 1, 3, 4, T, > T)",
    3,
    inputs=probe.inputs_chunked,
)
def verdict_chunked(got, want, x):
    for n, (causal, chunk) in enumerate(x["cases"]):
        key = f"case{n}"
        what = f"chunked_attention(causal={causal}, chunk_size={chunk})"
        out = _floating(got, key, what, want[key].shape)
        exact = _oracle(lambda c=causal: _exact(x, c), want[key])
        if causal and not close(out, exact) and _blocks_diagonal(out, x):
            raise Failure(CHUNKED_CAUSAL_DIAGONAL)
        assert_close(out, exact, what, _chunked_candidates(x, causal, chunk))
        assert_close(out, want[key], what)


def _same_keys_gate(got, x, *, large=False):
    """One chunk of 4 equal keys: the student's output must be the mean of the values. A run
    that computes nothing (zeros, the values themselves) cannot give that; a wrong scale or a
    wrong way of combining chunks can (they are charged where they are named)."""
    what = "chunked_attention with every key the same"
    v = x["same_v"]
    out = _floating(got, "same", what, v.shape)
    mean = v.double().mean(dim=-2, keepdim=True).expand_as(v).to(_dtype(x))
    if close(out, mean):
        return
    if not torch.isfinite(out).all():
        if large:  # the scores are shifted by 100 to 300 there
            raise Failure(CHUNKED_OVERFLOW)
        raise Failure(NOT_FINITE, what=what, count=int((~torch.isfinite(out)).sum()))
    flat = int(torch.nan_to_num((out.double() - mean.double()).abs(), nan=1e30).argmax())
    raise Failure(
        CHUNKED_NOT_AVERAGE, got=float(out.flatten()[flat]), want=float(mean.flatten()[flat])
    )


@CHUNKED_ATTENTION.check(
    "chunked-rescale",
    "chunked_attention gives the same result in chunks of 4 as in one chunk, when each "
    "chunk raises the maximum",
    1,
    inputs=probe.inputs_chunked_rescale,
    probe=probe.probe_chunked_rescale,
)
def verdict_chunked_rescale(got, want, x):
    _same_keys_gate(got, x)
    T = x["q"].size(-2)
    for causal in (False, True):
        what = f"chunked_attention(causal={causal})"
        whole = _floating(got, f"c{int(causal)}/chunkT", what, x["v"].shape)
        chunks = _floating(got, f"c{int(causal)}/chunk4", what, x["v"].shape)
        if _same(chunks, whole):
            continue
        for mistake, replay, details in _mistaken_loops(x, causal, 4):
            try:
                replayed = replay()
            except ModelUnavailable:  # the student copy: these mistakes go unnamed
                break
            if close(chunks, replayed):
                raise Failure(mistake, **details)
        raise Failure(CHUNKED_CHUNK_DEPENDENT, causal=causal, T=T, err=_worst(chunks, whole))


@CHUNKED_ATTENTION.check(
    "chunked-large-logits",
    "chunked_attention stays finite and unchanged when every score of a query is shifted by "
    "100 to 300, up or down",
    1,
    inputs=probe.inputs_chunked_shift,
    probe=probe.probe_chunked_shift,
)
def verdict_chunked_shift(got, want, x):
    _same_keys_gate(got, x, large=True)
    # Loosened: scores of a few hundred carry float32 rounding of about 1e-5 each, and the
    # order in which q, k and the scale are multiplied moves them by that much.
    tol = {"atol": 1e-4, "rtol": 1e-4}
    for causal in (0, 1):
        what = f"chunked_attention(causal={bool(causal)})"
        base = _floating(got, f"c{causal}/k", what, x["v"].shape)
        for name in ("k_up", "k_down"):
            shifted = _floating(got, f"c{causal}/{name}", what, x["v"].shape)
            # Only what the shift broke: entries the small scores already gave as NaN are
            # another mistake's, charged where it is named.
            if (torch.isfinite(base) & ~torch.isfinite(shifted)).any():
                raise Failure(CHUNKED_OVERFLOW)
            if not _same(shifted, base, tol):
                err = _worst(shifted, base)
                raise Failure(CHUNKED_NOT_SHIFT_INVARIANT, err=err, causal=bool(causal))


@CHUNKED_ATTENTION.check(
    "chunked-memory",
    "chunked_attention's tensors stay within T × max(chunk_size, d, d_v) per batch and head, "
    "and never hold a (T, T)'s worth at once",
    0,
    inputs=probe.inputs_chunked_memory,
    probe=probe.probe_chunked_memory,
    forgeable=True,
)
def verdict_chunked_memory(got, want, x):
    for size, xs in x.items():
        B, H, T, d = xs["q"].shape
        chunk, d_v = xs["chunk"], xs["v"].size(-1)
        for causal in (0, 1):
            p = f"{size}/c{causal}/"
            what = f"chunked_attention(causal={bool(causal)}, chunk_size={chunk}), T = {T}"
            fused = got.get(p + "fused") or got.get(p + "profiled_fused")
            if fused:
                raise Failure(CHUNKED_BUILTIN, op=fused)
            limit = B * H * T * max(chunk, d, d_v)
            if size == "small" and int(got[p + "largest"]) > limit:
                raise Failure(
                    CHUNKED_QUADRATIC,
                    causal=bool(causal),
                    n=int(got[p + "largest"]),
                    op=got[p + "largest_op"],
                    shape=got[p + "largest_shape"],
                    T=T,
                    chunk=chunk,
                    BH=B * H,
                    limit=limit,
                )
            _evidence(got, p, what)
            # Every score is computed once: at least half the (T, T) of them, causal or not.
            _enough_work(got, p, what, B * H * T * T // 2, "scores attention needs at the least")
            # Half the (T, T) float32 scores: chunking with its running sums needs a few
            # (T, max(chunk, d, d_v)) tensors at once, T / (8 max(...)) >= 6 times less.
            full = B * H * T * T * 4
            if size == "big" and got[p + "profiled"] and int(got[p + "peak_bytes"]) > full // 2:
                raise Failure(
                    CHUNKED_PEAK, causal=bool(causal), peak=int(got[p + "peak_bytes"]), full=full
                )
            shape = (B, H, xs["rows"].numel(), d_v) if "rows" in xs else xs["v"].shape
            out = _floating(got, p + "out", what, shape)
            plain = _floating(got, p + "plain", what, shape)
            if not _same(out, plain):
                detail = "its result under the recorder differs from the same call unobserved"
                raise Failure(NOT_RECORDED, what=what, detail=detail)
