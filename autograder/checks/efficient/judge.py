"""Judge side of efficient.py's checks: the verdicts (the models of right and wrong
computations, float64, never in the process that runs student code: judge_models.py).

Checks titled "matches the reference" compare values; the others test the property they
name on the student's own runs (chunk-size invariance, shift invariance, the feature map
measured from the outputs, memory and cost), each with a small run that computes nothing
cannot pass, so a mistake elsewhere is charged where it is named, once.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ...core import verdicts
from ...core.check import NOT_FINITE, CheckList, Failure, no_reference
from ...core.misconception_data import misconceptions_of
from ...core.verdicts import ModelUnavailable, agree, assert_close, close, oracle, worst_error
from ..masks.judge import window_with_mistake
from . import judge_models as models
from . import probe

CHECKS = CheckList("efficient")
MISTAKES = misconceptions_of(__name__)  # misconceptions.toml: messages and hint ladders

# --------------------------------------------------------------------------- evidence


def _evidence(got, p, what):
    """The recorded run is the run that did the work: what the op recorder saw is what the
    profiler saw, and the returned tensor came out of a recorded op."""
    if got.get(p + "profiler_tampered"):
        raise Failure(
            MISTAKES["computation-not-recorded"],
            what=what,
            detail="torch's profiler was stopped inside it",
        )
    if got.get(p + "profiler_busy"):
        detail = "torch's profiler was already running when it was called (grading starts none)"
        raise Failure(MISTAKES["computation-not-recorded"], what=what, detail=detail)
    if not got.get(p + "returned_recorded"):
        detail = "the tensor it returned was not made by any operation the recorder saw"
        raise Failure(MISTAKES["computation-not-recorded"], what=what, detail=detail)
    seen, profiled = int(got[p + "matmuls"]), int(got[p + "profiled_matmuls"])
    # The profiler sees each recorded matrix product twice (once through the recorder).
    if got.get(p + "profiled") and profiled > 2 * seen:
        detail = (
            f"torch's profiler saw {profiled} matrix-product calls, the op recorder {seen} "
            "(a recorded product shows up twice in the profiler, once through the recorder)"
        )
        raise Failure(MISTAKES["computation-not-recorded"], what=what, detail=detail)


def _enough_work(got, p, what, need, of):
    if int(got[p + "produced"]) < need:
        detail = (
            f"the operations the recorder saw produced {got[p + 'produced']} elements in all, "
            f"fewer than the {need} {of}"
        )
        raise Failure(MISTAKES["computation-not-recorded"], what=what, detail=detail)


# --------------------------------------------------------------------------- verdicts


def _compare_pair(got, want, prefix, what, x, wrong):
    shape = want[f"{prefix}/out"].shape
    out = models._floating(got, f"{prefix}/out", f"{what}'s output", shape)
    weights = models._floating(
        got, f"{prefix}/weights", f"{what}'s weights", want[f"{prefix}/weights"].shape
    )
    assert_close(
        weights,
        want[f"{prefix}/weights"],
        f"{what}'s weights",
        models._pattern_candidates(x, "weights", wrong),
    )
    assert_close(
        out, want[f"{prefix}/out"], f"{what}'s output", models._pattern_candidates(x, "out", wrong)
    )


LOCAL_ATTENTION = CHECKS.exercise("local_attention", probe=probe.probe_local)


@LOCAL_ATTENTION.check("local", inputs=probe.inputs_pattern)
def verdict_local(got, want, x):
    T = x["q"].size(-2)
    for n, w in enumerate(x["windows"]):
        # The mistaken masks are sliding_window_mask's (masks' judge names them too).
        wrong = [
            (MISTAKES["local-window-off-by-one"], "wider", {"seen": w + 1}),
            (MISTAKES["local-not-causal"], "two-sided", {}),
            (MISTAKES["local-not-causal"], "future", {}),
        ]
        if w > 1:
            wrong.append((MISTAKES["local-window-off-by-one"], "narrower", {"seen": w - 1}))
        wrong = [
            (m, lambda k=k, w=w: window_with_mistake(T, w, k), {"window": w, "before": w - 1, **d})
            for m, k, d in wrong
        ]
        _compare_pair(got, want, f"w{n}", f"local_attention(window={w})", x, wrong)
    verdicts.assert_gradients(got, None, "local_attention")  # to q, k and v


STRIDED_ATTENTION = CHECKS.exercise("strided_attention", probe=probe.probe_strided)


@STRIDED_ATTENTION.check("strided", inputs=probe.inputs_pattern)
def verdict_strided(got, want, x):
    T = x["q"].size(-2)
    # Largest stride first: with stride 2, a band one key too narrow is no band at all, and
    # the larger strides tell those two mistakes apart.
    for n, s in sorted(enumerate(x["strides"]), key=lambda ns: -ns[1]):
        wrong = [
            (MISTAKES["strided-drops-local-band"], "no band"),
            (MISTAKES["strided-drops-columns"], "no columns"),
            (MISTAKES["strided-not-causal"], "centred"),
            (MISTAKES["strided-not-causal"], "future"),
            (MISTAKES["strided-not-causal"], "columns-future"),
            (MISTAKES["stride-off-by-one"], "stride + 1"),
            (MISTAKES["stride-off-by-one"], "band - 1"),
            (MISTAKES["strided-absolute-positions"], "absolute"),
        ]
        wrong = [
            (m, lambda k=k, s=s: models._strided_blocked(T, s, k), {"stride": s, "before": s - 1})
            for m, k in wrong
        ]
        _compare_pair(got, want, f"s{n}", f"strided_attention(stride={s})", x, wrong)
    if got.get("stride0") != "ValueError":
        raise Failure(MISTAKES["strided-stride-not-validated"], got=got.get("stride0"))
    verdicts.assert_gradients(got, None, "strided_attention")  # to q, k and v


def _linear_verdict(got, want, x, causal):
    what = f"linear_attention(causal={causal})"
    out = models._floating(got, "out", what, want["out"].shape)
    # The quadratic form of the same kernel, computed here: an oracle independent of want.
    quadratic = oracle(lambda: models._linear(x, causal=causal), want["out"])
    if not close(out, quadratic):
        # A map that is not positive makes some normalisers nearly 0, where float32 rounding
        # is amplified: to *name* that mistake (never to pass), compare with a loose tolerance.
        loose = {"atol": 1e-3, "rtol": 1e-2}
        for phi in ("elu(x)", "relu(x)", "x (no map)"):
            try:
                mapped = models._linear(x, phi=phi, causal=causal)
            except ModelUnavailable:  # the student copy: not named there
                break
            if close(out, mapped, loose):
                raise Failure(
                    MISTAKES["linear-feature-map"], measured=f" (it behaves like phi(x) = {phi})"
                )
    assert_close(out, quadratic, what, models._linear_candidates(x, causal))
    assert_close(out, want["out"], what)


LINEAR_ATTENTION = CHECKS.exercise("linear_attention", probe=probe.probe_linear)


@LINEAR_ATTENTION.check("linear", inputs=probe.inputs_linear, probe=probe.probe_linear_gradients)
def verdict_linear(got, want, x):
    _linear_verdict(got, want, x, causal=False)
    verdicts.assert_gradients(got, None, "linear_attention")  # to q, k and v


@LINEAR_ATTENTION.check("linear-feature-map", inputs=probe.inputs_feature_map)
@no_reference
def verdict_feature_map(got, want, x):
    # Each row is phi(q) (phi(0), phi(b)) / normaliser: the ratio of its two entries is
    # phi(b) / phi(0), the student's own map at b, whatever the normaliser or a scale of q.
    # Read from the last query row, which sees both keys whether or not the student's code
    # masks the future (a causal mask where causal=False is the linear check's to charge).
    out = models._floating(got, "out", "linear_attention's output", x["v"].shape).double()
    first, second = out[:, -1:, 0], out[:, -1:, 1]
    if not (torch.isfinite(out).all() and (first > 0).all()):
        measured = ": your outputs give phi(0) = 0 (or NaN), as plain elu, relu or no map do"
        raise Failure(MISTAKES["linear-feature-map"], measured=measured)
    b = x["k"][:, 1:, 0].double().expand_as(first)  # (n, 2): each query row sees key b
    ratio = second / first
    tol = {"atol": 1e-5, "rtol": 1e-4}  # a ratio of two float32 results
    if close(ratio, F.elu(b) + 1, tol):
        return
    for name, phi in models.PHI.items():
        if phi(torch.zeros(())) > 0 and close(ratio, phi(b) / phi(torch.zeros(())), tol):
            raise Failure(
                MISTAKES["linear-feature-map"], measured=f" (it behaves like phi(x) = {name})"
            )
    worst = int((ratio - (F.elu(b) + 1)).abs().flatten().argmax())
    at, r, e = (
        float(b.flatten()[worst]),
        float(ratio.flatten()[worst]),
        float(F.elu(b).flatten()[worst] + 1),
    )
    measured = f" (your outputs give phi({at:.3g}) / phi(0) = {r:.4g}; elu(x) + 1 gives {e:.4g})"
    raise Failure(MISTAKES["linear-feature-map"], measured=measured)


@LINEAR_ATTENTION.check(
    "linear-causal", inputs=probe.inputs_linear, probe=probe.probe_linear_causal
)
def verdict_linear_causal(got, want, x):
    _linear_verdict(got, want, x, causal=True)


# --------------------------------------------------------------------------- measured
# What the parent measured of each part's process (run/measure.py): nothing the student's
# process said. The decision stands on the run at 2T against one (2T, 2T) float32 per batch and
# head, which no padding of the run at T can move; the growth from T to 2T is the second test.

MB = 1 << 20
MEMORY_FLOOR = 8 * MB  # below this, growth is noise (the process's own code pages, imports)
EXPONENT = 1.5  # between linear growth (1) and quadratic (2)
# CPU time is measured too (part<k>/measured/cpu_seconds) but decides nothing: on a loaded
# 2-core machine a run's CPU seconds vary by a few hundredths, as much as the quadratic part
# of a (T, T)-free but quadratic-time loop at lengths a check can afford (docs/efficient.md).


def _measures(got, x, what):
    """[(peak bytes, CPU seconds)] of each part, as the parent measured them. A part it could
    not measure is the grader's failure (an error, no points), never the student's."""
    found = []
    for k in range(len(x["parts"])):
        p = f"part{k}/measured/"
        peak, cpu = got.get(p + "peak_bytes"), got.get(p + "cpu_seconds")
        if type(peak) is not float or type(cpu) is not float:
            raise RuntimeError(f"{what} was not measured from outside its process (part {k})")
        found.append((peak, cpu))
    return found


def _exponent(v1, v2, floor):
    """log2(v2 / v1): how the measure grew when T doubled (1 linear, 2 quadratic)."""
    return math.log2(max(v2, floor) / max(v1, floor))


def _measured_results(got, want, x, what):
    """The measured runs' results are attention's (a sample of rows): a run that computes
    nothing, or something cheap, earns nothing, however little it costs."""
    tol = {"atol": 1e-4, "rtol": 1e-3}  # loosened: float32 sums over thousands of keys
    for k, part in enumerate(x["parts"]):
        T = part["q"].size(-2)
        for causal in (0, 1):
            key = f"part{k}/c{causal}"
            call = f"{what}(causal={bool(causal)}) at T = {T}"
            shape = (*part["v"].shape[:-2], part["rows"].numel(), part["v"].size(-1))
            out = models._floating(got, key, call, shape)
            if not close(out, want[key], tol):
                raise Failure(MISTAKES["measured-result-wrong"], what=call)


def _measured_verdict(got, want, x, what, mistake):
    """The measured runs: their results (_measured_results), then their peak memory."""
    _measured_results(got, want, x, what)
    (p1, _), (p2, _) = _measures(got, x, what)
    T1, T2 = x["lengths"]
    B, H = x["parts"][1]["q"].shape[:2]
    full = B * H * T2 * T2 * 4  # one (T, T) float32 per batch and head, at 2T
    exponent = _exponent(p1, p2, MEMORY_FLOOR)
    if p2 > full / 2 or (exponent > EXPONENT and p2 - p1 > full / 4):
        raise Failure(
            mistake,
            T1=T1,
            T2=T2,
            p1=f"{p1 / MB:.1f}",
            p2=f"{p2 / MB:.1f}",
            half=f"{full / 2 / MB:.0f}",
            exponent=f"{exponent:.2f}",
        )


def _measured_check(exercise, slug, mistake):
    """Register `exercise`'s measured check: points, measured from outside (its results and
    its peak memory at T and 2T, _measured_verdict), through probe.MEASURED[exercise]."""
    inputs, probe_fn = probe.MEASURED[exercise.name]

    def verdict(got, want, x):
        _measured_verdict(got, want, x, exercise.name, mistake)

    exercise.check(slug, inputs=inputs, probe=probe_fn, measured=2, verdict=verdict)


_measured_check(LINEAR_ATTENTION, "linear-cost", MISTAKES["linear-peak-memory-quadratic"])


@LINEAR_ATTENTION.advice(
    "linear-cost-inside", inputs=probe.inputs_linear_cost, probe=probe.probe_linear_cost
)
def verdict_linear_cost(got, want, x):
    T1, T2 = x["lengths"]
    for causal in (0, 1):
        a, b = f"c{causal}/T{T1}/", f"c{causal}/T{T2}/"
        lengths = {"causal": bool(causal), "T1": T1, "T2": T2}
        n1, n2 = int(got[a + "largest"]), int(got[b + "largest"])
        # Linear growth doubles it, quadratic quadruples it; 3 lies between.
        if n2 > 3 * n1:
            op, shape = got[b + "largest_op"], got[b + "largest_shape"]
            raise Failure(
                MISTAKES["linear-builds-TxT"], **lengths, n1=n1, n2=n2, op=op, shape=shape
            )
        o1, o2 = int(got[a + "ops"]), int(got[b + "ops"])
        if o2 > 3 * max(o1, 1):
            raise Failure(MISTAKES["linear-op-count-quadratic"], **lengths, o1=o1, o2=o2)
        what = f"linear_attention(causal={bool(causal)})"
        B, H, _, d = x["q"].shape
        for p, T in ((a, T1), (b, T2)):
            _evidence(got, p, what)
            need = B * H * T * (2 * d + x["v"].size(-1))
            _enough_work(got, p, what, need, "elements of phi(q), phi(k) and the output alone")
        p1, p2 = int(got[a + "peak_bytes"]), int(got[b + "peak_bytes"])
        if got[a + "profiled"] and got[b + "profiled"] and p2 > 3 * max(p1, 1):
            raise Failure(
                MISTAKES["linear-memory-grows-TxT"], causal=bool(causal), T1=T1, T2=T2, p1=p1, p2=p2
            )


CHUNKED_ATTENTION = CHECKS.exercise("chunked_attention", probe=probe.probe_chunked)


@CHUNKED_ATTENTION.check("chunked", inputs=probe.inputs_chunked)
def verdict_chunked(got, want, x):
    for n, (causal, chunk) in enumerate(x["cases"]):
        key = f"case{n}"
        what = f"chunked_attention(causal={causal}, chunk_size={chunk})"
        out = models._floating(got, key, what, want[key].shape)
        exact = oracle(lambda c=causal: models._exact(x, c), want[key])
        if causal and not close(out, exact) and models._blocks_diagonal(out, x):
            raise Failure(MISTAKES["chunked-causal-blocks-diagonal"])
        assert_close(out, exact, what, models._chunked_candidates(x, causal, chunk))
        assert_close(out, want[key], what)
    verdicts.assert_gradients(got, None, "chunked_attention")  # to q, k and v


def _same_keys_gate(got, x, *, large=False):
    """One chunk of 4 equal keys: the student's output must be the mean of the values. A run
    that computes nothing (zeros, the values themselves) cannot give that; a wrong scale or a
    wrong way of combining chunks can (they are charged where they are named)."""
    what = "chunked_attention with every key the same"
    v = x["same_v"]
    out = models._floating(got, "same", what, v.shape)
    mean = v.double().mean(dim=-2, keepdim=True).expand_as(v).to(models._dtype(x))
    # each query's mean of the values up to its own (a causal mask where causal=False: the
    # chunked check charges that): as much a computation as the mean of them all
    counts = torch.arange(1, v.size(-2) + 1, dtype=torch.float64)[:, None]
    running = (v.double().cumsum(dim=-2) / counts).to(models._dtype(x))
    if close(out, mean) or close(out, running):
        return
    if not torch.isfinite(out).all():
        if large:  # the scores are shifted by 100 to 300 there
            raise Failure(MISTAKES["chunked-overflow"])
        raise Failure(NOT_FINITE, what=what, count=int((~torch.isfinite(out)).sum()))
    flat = int(torch.nan_to_num((out.double() - mean.double()).abs(), nan=1e30).argmax())
    raise Failure(
        MISTAKES["chunked-weights-not-normalised"],
        got=float(out.flatten()[flat]),
        want=float(mean.flatten()[flat]),
    )


@CHUNKED_ATTENTION.check(
    "chunked-rescale", inputs=probe.inputs_chunked_rescale, probe=probe.probe_chunked_rescale
)
@no_reference
def verdict_chunked_rescale(got, want, x):
    _same_keys_gate(got, x)
    T = x["q"].size(-2)
    for causal in (False, True):
        what = f"chunked_attention(causal={causal})"
        whole = models._floating(got, f"c{int(causal)}/chunkT", what, x["v"].shape)
        chunks = models._floating(got, f"c{int(causal)}/chunk4", what, x["v"].shape)
        verdicts.assert_uses_scores(whole, x["v"], f"{what} in one chunk")
        if agree(chunks, whole):
            continue
        if causal and _chunk_positions(chunks, whole, x):
            continue  # the causal mask's mistake (one chunk of T is right): the chunked check's
        for mistake, replay, details in models._mistaken_loops(x, causal, 4):
            try:
                replayed = replay()
            except ModelUnavailable:  # the student copy: these mistakes go unnamed
                break
            if close(chunks, replayed):
                raise Failure(mistake, **details)
        raise Failure(
            MISTAKES["chunked-depends-on-chunk-size"],
            causal=causal,
            T=T,
            err=worst_error(chunks, whole),
        )


def _chunk_positions(chunks, whole, x):
    """Whether causal chunks of 4 are exact attention under a mask that counts key positions
    from each chunk's start (chunked-causal-chunk-positions, named by the chunked check)
    while one chunk of all the keys is exact causal attention, as that mistake gives it.
    Never in the student copy, which has no model to tell."""
    try:
        local = models._online(x, True, 4, local=True)
        return close(chunks, local) and close(whole, models._exact(x, True))
    except ModelUnavailable:
        return False


@CHUNKED_ATTENTION.check(
    "chunked-large-logits", inputs=probe.inputs_chunked_shift, probe=probe.probe_chunked_shift
)
@no_reference
def verdict_chunked_shift(got, want, x):
    _same_keys_gate(got, x, large=True)
    # Loosened: scores of a few hundred carry float32 rounding of about 1e-5 each, and the
    # order in which q, k and the scale are multiplied moves them by that much.
    tol = {"atol": 1e-4, "rtol": 1e-4}
    for causal in (0, 1):
        what = f"chunked_attention(causal={bool(causal)})"
        base = models._floating(got, f"c{causal}/k", what, x["v"].shape)
        verdicts.assert_uses_scores(base, x["v"], what)
        for name in ("k_up", "k_down"):
            shifted = models._floating(got, f"c{causal}/{name}", what, x["v"].shape)
            # Only what the shift broke: entries the small scores already gave as NaN are
            # another mistake's, charged where it is named.
            if (torch.isfinite(base) & ~torch.isfinite(shifted)).any():
                # scores shifted up: exp(s) overflows; down: every exp(s - m) underflows to 0
                # for a running maximum that starts above them (at 0), and 0 / 0 is NaN
                if name == "k_up":
                    raise Failure(MISTAKES["chunked-overflow"])
                raise Failure(MISTAKES["chunked-underflow"])
            if not agree(shifted, base, tol):
                err = worst_error(shifted, base)
                raise Failure(MISTAKES["chunked-not-shift-invariant"], err=err, causal=bool(causal))


_measured_check(CHUNKED_ATTENTION, "chunked-memory", MISTAKES["chunked-peak-memory-quadratic"])


@CHUNKED_ATTENTION.advice(
    "chunked-memory-inside", inputs=probe.inputs_chunked_memory, probe=probe.probe_chunked_memory
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
                raise Failure(MISTAKES["chunked-calls-builtin"], op=fused)
            limit = B * H * T * max(chunk, d, d_v)
            if size == "small" and int(got[p + "largest"]) > limit:
                raise Failure(
                    MISTAKES["chunked-quadratic-memory"],
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
                    MISTAKES["chunked-memory-peak"],
                    causal=bool(causal),
                    peak=int(got[p + "peak_bytes"]),
                    full=full,
                )
            shape = (B, H, xs["rows"].numel(), d_v) if "rows" in xs else xs["v"].shape
            out = models._floating(got, p + "out", what, shape)
            plain = models._floating(got, p + "plain", what, shape)
            if not agree(out, plain):
                detail = "its result under the recorder differs from the same call unobserved"
                raise Failure(MISTAKES["computation-not-recorded"], what=what, detail=detail)
