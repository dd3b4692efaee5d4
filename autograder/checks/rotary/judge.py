"""Judge side of rotary.py's checks: misconceptions, models of wrong rotations, verdicts."""

from __future__ import annotations

import re

import torch

from ...core import verdicts
from ...core.check import NOT_FINITE, WRONG_VALUES, CheckList, Failure, no_reference
from ...core.misconception_data import misconceptions_of
from ...core.tolerances import tolerance
from ...core.verdicts import ModelUnavailable, assert_close, assert_kept, close, model, tensor
from ...trusted.attention import scaled_dot_product_attention as trusted_attention
from . import probe

CHECKS = CheckList("rotary")
MISTAKES = misconceptions_of(__name__)  # misconceptions.toml: messages and hint ladders

# --------------------------------------------------------------------------- models

# float32 rounds the angle p·θ_i with an error that grows with the position p: measured, at
# most 0.69 float32 epsilons per unit of position times the row's largest |x| (LLaMA-style
# float32 angles, d = 4..128, base 100..1e6, p < 10000; docs/rotary.md gives the command).
# The allowance is 4 epsilons per unit of position, on top of the float32 table's atol and
# rtol.
SLOPE = 4 * torch.finfo(torch.float32).eps


@model
def _theta(d, base, exponent="2i"):
    i = torch.arange(d // 2, dtype=torch.float64)
    factor = {"2i": 2, "i": 1, "4i": 4}[exponent]
    return base ** (-(factor * i) / d)


@model
def _rope(
    x,
    positions,
    base=10000.0,
    *,
    pairs="halves",
    layout=None,
    exponent="2i",
    sign=1.0,
    sin_term=True,
):
    """What apply_rotary computes with a given mistake, in float64 (the closed form when
    every argument is left at its default)."""
    x = x.double()
    d = x.size(-1)
    theta = _theta(d, base, exponent)
    layout = layout or ("cat" if pairs == "halves" else "repeat")
    if layout == "cat":
        columns = torch.cat([theta, theta])
    elif layout == "repeat":
        columns = theta.repeat_interleave(2)
    else:  # one frequency per column
        columns = base ** (-torch.arange(d, dtype=torch.float64) / d)
    angles = positions.double()[:, None] * columns  # (T, d)
    if pairs == "halves":
        partner = torch.cat([-x[..., d // 2 :], x[..., : d // 2]], dim=-1)
    else:
        partner = torch.stack([-x[..., 1::2], x[..., 0::2]], dim=-1).flatten(-2)
    out = x * angles.cos()
    return out + sign * partner * angles.sin() if sin_term else out


def _allowed(x, positions, want):
    tol = tolerance(torch.float32)
    p = positions.double().abs()[:, None]
    size = x.double().abs().amax(dim=-1, keepdim=True)
    return tol["atol"] + tol["rtol"] * want.double().abs() + SLOPE * p * size


def _fits(got, model, x, positions):
    if model is None or got.shape != model.shape:
        return False
    diff = (got.double() - model.double()).abs()
    return bool((diff <= _allowed(x, positions, model)).all())


def _output(model):
    """model(), or None in the student copy, which holds no models (that mistake is then not
    named; what a verdict decides with is replayed with the reference instead)."""
    try:
        return model()
    except ModelUnavailable:
        return None


def _candidates(case):
    x, positions, base = case["x"], case["positions"], case.get("base", 10000.0)
    T = x.size(-2)

    def m(**kw):
        return lambda: _rope(x, kw.pop("positions", positions), kw.pop("base", base), **kw)

    shown = ", ".join(str(int(p)) for p in positions[:4]) + (", ..." if T > 4 else "")
    found = [
        ("interleaved", MISTAKES["rope-interleaved-pairs"], m(pairs="interleaved"), {}),
        ("backwards", MISTAKES["rope-rotation-direction"], m(sign=-1.0), {}),
        ("exponent-i", MISTAKES["rope-exponent-i-over-d"], m(exponent="i"), {}),
        ("exponent-4i", MISTAKES["rope-exponent-4i-over-d"], m(exponent="4i"), {}),
        ("per-column", MISTAKES["rope-pair-frequency"], m(layout="columns"), {}),
        ("repeat-interleave", MISTAKES["rope-frequency-layout-mismatch"], m(layout="repeat"), {}),
        ("cos-only", MISTAKES["rope-missing-sin-term"], m(sin_term=False), {}),
        (
            "interleaved-backwards",
            MISTAKES["rope-interleaved-pairs"],
            m(pairs="interleaved", sign=-1.0),
            {},
        ),
    ]
    if base != 10000.0:
        found.append(("base-10000", MISTAKES["rope-base-ignored"], m(base=10000.0), {"base": base}))
    ignored = {
        "at-one": (
            torch.ones(T),
            "every row is turned by θ_i, as if at position 1: the positions were never "
            "multiplied in",
        )
    }
    if not torch.equal(positions, torch.arange(T)):
        ignored["at-rows"] = (torch.arange(T), "you rotated the rows by 0, 1, ..., T-1")
    for label, (used, how) in ignored.items():
        details = {"shown": shown, "how": how}
        found.append((label, MISTAKES["rope-positions-ignored"], m(positions=used), details))
    return found


def _exempt(case, named, charged):
    """The candidates that pass a check: mistakes another check charges (`charged`) and this
    one does not name, as (label, model)."""
    return [
        (label, output)
        for label, mistake, output, _ in _candidates(case)
        if mistake in charged and mistake not in named
    ]


def _exempt_replays(named, charged, exact=()):
    """replays= of an apply_rotary check: the outputs of its exempt mistakes on each case,
    kept with the reference as "<case>/<label>" (and the float64 closed form of the cases in
    `exact` as "<case>/exact"), so that both kits let exactly the same outputs pass."""

    def replays(x):
        found = {}
        for name, case in x.items():
            for label, output in _exempt(case, named, charged):
                found[f"{name}/{label}"] = output()
            if name in exact:
                found[f"{name}/exact"] = _rope(case["x"], case["positions"])
        return found

    return replays


def _rotation(got, key, case, what, want, *, named, charged=(), exact=None, dtype=True):
    """got[key] is apply_rotary(case): the shape and dtype of x, values within the position-
    dependent float32 allowance of `exact` (default: the reference, want[key]). Mistakes in
    `charged` and not in `named` pass here (another check charges them): their outputs are
    replayed with the reference (_exempt_replays), so both kits decide alike; those in `named`
    are named, where the judge's models are at hand (not in the student copy). With
    dtype=False another floating dtype is judged by its values, cast to x's: the reference
    and float64 checks charge the dtype (a float64 table that promotes float32 inputs cost
    every value check before)."""
    x, positions = case["x"], case["positions"]
    out = tensor(got, key, what, floating=True, shape=x.shape)
    if out.dtype != x.dtype:
        if dtype:
            raise Failure(
                MISTAKES["rope-dtype-not-kept"], what=what, got=out.dtype, expected=x.dtype
            )
        out = out.to(x.dtype)
    exact = want[key] if exact is None else exact
    if _fits(out, exact, x, positions):
        return
    for label, _ in _exempt(case, named, charged):
        if _fits(out, want[f"replay/{key}/{label}"], x, positions):
            return
    for _, mistake, output, details in _candidates(case):
        if mistake in named and _fits(out, _output(output), x, positions):
            raise Failure(mistake, what=what, **details)
    if not torch.isfinite(out).all():
        raise Failure(NOT_FINITE, what=what, count=int((~torch.isfinite(out)).sum()))
    ratio = (out.double() - exact.double()).abs() / _allowed(x, positions, exact)
    flat = int(torch.nan_to_num(ratio, nan=float("inf")).argmax())
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), out.shape))
    raise Failure(
        WRONG_VALUES,
        what=what,
        err=float((out.double() - exact.double()).abs()[index]),
        index=index,
        got=float(out[index]),
        want=float(exact[index]),
    )


def _what(case, name=None):
    x = case["x"]
    shape = "(" + ", ".join(str(s) for s in x.shape) + ")"
    args = f"x of shape {shape}, {x.dtype}, positions {_show(case['positions'])}"
    if "base" in case:
        args += f", base={case['base']:g}"
    return f"apply_rotary({args})"


def _show(positions):
    values = [int(p) for p in positions]
    if values == list(range(values[0], values[0] + len(values))):
        return f"{values[0]} .. {values[-1]}"
    return "[" + ", ".join(map(str, values[:6])) + (", ...]" if len(values) > 6 else "]")


# Which mistake each apply_rotary check names. The reference check names those every input
# shows; a base, an offset and far positions show one more mistake each, named in its check.
_EVERYWHERE = (
    MISTAKES["rope-interleaved-pairs"],
    MISTAKES["rope-rotation-direction"],
    MISTAKES["rope-exponent-i-over-d"],
    MISTAKES["rope-exponent-4i-over-d"],
    MISTAKES["rope-pair-frequency"],
    MISTAKES["rope-frequency-layout-mismatch"],
    MISTAKES["rope-missing-sin-term"],
    MISTAKES[
        "rope-positions-ignored"
    ],  # at reference's positions 0 .. T-1, only when never multiplied in
)


# --------------------------------------------------------------------------- apply_rotary


APPLY_ROTARY = CHECKS.exercise("apply_rotary", probe=probe.probe_rotate)


@APPLY_ROTARY.check("reference", inputs=probe.inputs_reference, probe=probe.probe_reference)
def verdict_reference(got, want, x):
    assert_kept(got, "apply_rotary")  # x left as it was (charged here only)
    _every_case(got, want, x, named=_EVERYWHERE)
    verdicts.assert_gradients(got, None, "apply_rotary")  # to x


@APPLY_ROTARY.check("batch-dims", inputs=probe.inputs_batch_dims, probe=probe.probe_batch_dims)
def verdict_batch_dims(got, want, x):
    """Other leading dims than (B, H): a shape unpacked into four names crashes here only
    (probing names it). Values other than the reference's pass when they are the student's
    own on the same rows passed as (B, 1, T, d): value mistakes are the other checks' to
    charge, where they are named."""
    for name, case in x.items():
        what = _what(case)
        try:
            _rotation(got, name, case, what, want, named=(), dtype=False)
        except Failure as failure:
            out = tensor(got, name, what, floating=True, shape=case["x"].shape)
            own = tensor(got, f"{name}/as-4d", what, floating=True)
            if own.numel() != out.numel():
                raise
            out, own = out.to(case["x"].dtype), own.to(case["x"].dtype)
            verdicts.assert_evidence(out, what, [case["x"]])
            if not _fits(out, own.reshape(out.shape), case["x"], case["positions"]):
                raise failure from None


def _every_case(got, want, x, *, named, charged=(), dtype=True):
    """Each case of x rotated as the reference; `named` mistakes are named where they show,
    the `charged` ones left to the checks that name them (`dtype`: as in _rotation)."""
    for name, case in x.items():
        _rotation(got, name, case, _what(case), want, named=named, charged=charged, dtype=dtype)


def _uses_what_is_passed(slug, inputs, ignored):
    """A check that apply_rotary uses an argument it is passed: every case as the reference,
    with the mistake of ignoring the argument named and the others charged elsewhere."""

    def verdict(got, want, x):
        _every_case(got, want, x, named=(ignored,), charged=_EVERYWHERE, dtype=False)

    replays = _exempt_replays((ignored,), _EVERYWHERE)
    APPLY_ROTARY.check(slug, inputs=inputs, replays=replays, verdict=verdict)


_uses_what_is_passed("positions", probe.inputs_positions, MISTAKES["rope-positions-ignored"])


def _a_rotation(out, case, what):
    """Whether the student's run rotates each row: finite, not one constant, not x handed
    back, every row's length kept (float32 allowance). The evidence a check needs when it
    judges the student's own runs rather than the values (a random result fails)."""
    x = case["x"]
    verdicts.assert_evidence(out, what, [x])
    before, after = x.double().norm(dim=-1), out.double().norm(dim=-1)
    slack = SLOPE * (float(case["positions"].abs().max()) + 1)
    return bool(((after - before).abs() <= 1e-5 + before * (slack + 1e-5)).all())


@APPLY_ROTARY.check(
    "base",
    inputs=probe.inputs_base,
    probe=probe.probe_base,
    replays=_exempt_replays((MISTAKES["rope-base-ignored"],), _EVERYWHERE),
)
def verdict_base(got, want, x):
    """Judged on the student's own runs: the output with the base passed differs from their
    output with the default base (else the base is ignored), and each row is rotated (its
    length kept). Values as the reference's pass at once; other values are the reference
    check's to charge (a sin/cos swap or a position off by one still uses the base)."""
    base_ignored = MISTAKES["rope-base-ignored"]
    for name, case in x.items():
        what = _what(case)
        out = tensor(got, name, what, floating=True, shape=case["x"].shape)
        default = tensor(got, f"{name}/default", what, floating=True, shape=case["x"].shape)
        if torch.equal(out, default) or close(out, default):
            raise Failure(base_ignored, what=what, base=case["base"])
        try:
            _rotation(
                got, name, case, what, want, named=(base_ignored,), charged=_EVERYWHERE, dtype=False
            )
        except Failure as failure:
            if failure.misconception is base_ignored or not _a_rotation(out, case, what):
                raise


@APPLY_ROTARY.check(
    "closed-form", inputs=probe.inputs_far, replays=_exempt_replays((), _EVERYWHERE, exact=("far",))
)
def verdict_far(got, want, x):
    """Against the exact formula (replayed with the reference), not the reference: |error| ≤
    1e-5 + 1.3e-6·|exact| + 4·eps32·p·max|x_row| (SLOPE above: float32 angles lose precision
    as p grows)."""
    case = x["far"]
    what = _what(case)
    out = tensor(got, "far", what, floating=True, shape=case["x"].shape)
    exact = want["replay/far/exact"]
    rounded = [
        _output(lambda dt=dt: _rope(case["x"], case["positions"].to(dt).double()))
        for dt in (torch.bfloat16, torch.half)
    ]
    if any(_fits(out, model, case["x"], case["positions"]) for model in rounded):
        if not _fits(out, exact, case["x"], case["positions"]):
            raise Failure(MISTAKES["rope-positions-rounded"], what=what)
    _rotation(got, "far", case, what, want, named=(), charged=_EVERYWHERE, exact=exact, dtype=False)


@APPLY_ROTARY.check(
    "float64",
    inputs=probe.inputs_float64,
    probe=probe.probe_float64,
    replays=_exempt_replays((), _EVERYWHERE),
)
def verdict_float64(got, want, x):
    """The dtype is what this check grades; the values are held to the float32 allowance,
    since computing the angles in float32 (as LLaMA's code does) is a precision choice, not a
    mistake. Values other than the reference's pass when they are the student's own float32
    run's (their own values, in float64): the reference check charges value mistakes."""
    case = x["float64"]
    what = _what(case)
    try:
        _rotation(got, "float64", case, what, want, named=(), charged=_EVERYWHERE)
    except Failure as failure:
        out = tensor(got, "float64", what, floating=True, shape=case["x"].shape)
        if out.dtype != case["x"].dtype:
            raise
        own = tensor(got, "float64/float32", what, floating=True, shape=case["x"].shape)
        verdicts.assert_evidence(out, what, [case["x"]])
        if not _fits(out, own.double(), case["x"], case["positions"]):
            raise failure from None


def _rows(got, key, shape, what):
    value = tensor(got, key, what, floating=True, shape=shape).double()
    if not torch.isfinite(value).all():
        raise Failure(NOT_FINITE, what=what, count=int((~torch.isfinite(value)).sum()))
    return value


def _first_change(bad, before, after):
    """Where the scores changed first (the first True of `bad`): i, j and both scores."""
    i, j = (int(v) for v in bad.nonzero()[0])
    return {"i": i, "j": j, "before": float(before[i, j]), "after": float(after[i, j])}


@APPLY_ROTARY.check("relative", inputs=probe.inputs_relative, probe=probe.probe_relative)
@no_reference
def verdict_relative(got, want, x):
    """Judged on the student's own runs, whatever pair convention they chose: every rotated
    row keeps its length (zeros fail), rows at the same position keep q·k, shifting all
    positions by one amount keeps every score, and rows at different positions do change
    their score (an identity or a fixed rotation fails)."""
    shape = x["q"].shape  # (1, 1, T, d): the rows are judged as (T, d)
    q, k = x["q"][0, 0].double(), x["k"][0, 0].double()
    positions, shift = x["positions"], x["shift"]
    what = "apply_rotary(q, positions)"
    runs = {name: _rows(got, name, shape, what)[0, 0] for name in ("q1", "k1", "q2", "k2")}
    p_max = float(positions.max()) + shift
    eps = SLOPE * (p_max + 1)
    for name, original in (("q1", q), ("k1", k), ("q2", q), ("k2", k)):
        before, after = original.norm(dim=-1), runs[name].norm(dim=-1)
        bad = (after - before).abs() > 1e-5 + before * (eps + 1e-6)
        if bad.any():
            row = int(bad.nonzero()[0])
            raise Failure(
                MISTAKES["rope-length-changed"],
                row=row,
                before=float(before[row]),
                after=float(after[row]),
            )
    if torch.equal(runs["q1"], runs["q2"]) and torch.equal(runs["k1"], runs["k2"]):
        shown = ", ".join(str(int(p)) for p in positions[:4]) + ", ..."
        how = f"shifting every position by {shift} changed nothing"
        raise Failure(MISTAKES["rope-positions-ignored"], what=what, shown=shown, how=how)
    plain = q @ k.T
    s1, s2 = runs["q1"] @ runs["k1"].T, runs["q2"] @ runs["k2"].T
    sizes = q.norm(dim=-1)[:, None] * k.norm(dim=-1)[None, :]
    allowed = 1e-5 + 4 * eps * sizes
    offsets = positions[:, None] - positions[None, :]
    same = offsets == 0
    for scores in (s1, s2):
        bad = same & ((scores - plain).abs() > allowed)
        if bad.any():
            raise Failure(MISTAKES["rope-offset-zero-changed"], **_first_change(bad, plain, scores))
    bad = (s1 - s2).abs() > allowed
    if bad.any():
        where = _first_change(bad, s1, s2)
        offset = int(offsets[where["i"], where["j"]])
        raise Failure(MISTAKES["rope-not-relative"], shift=shift, offset=offset, **where)
    moved = ~same & ((s1 - plain).abs() > 10 * allowed)
    if not moved.any():
        raise Failure(MISTAKES["rope-no-rotation"])


@APPLY_ROTARY.check("odd-width", inputs=probe.inputs_odd, probe=probe.probe_odd)
@no_reference
def verdict_odd(got, want, x):
    d = x["x"].size(-1)
    if got.get("got") != "ValueError":
        raise Failure(MISTAKES["rope-odd-width-no-valueerror"], d=d, got=str(got.get("got"))[:80])
    text = str(got.get("text", ""))
    if not re.search(rf"(?<!\d){d}(?!\d)", text):
        raise Failure(MISTAKES["rope-odd-width-error-unclear"], d=d, text=verdicts.excerpt(text))


# --------------------------------------------------------------------------- rotary_attention


def _attention(q, k, v, mask):
    """softmax(q kᵀ / √d) v in float64, True = blocked (the mask here never blocks a row): the
    trusted attention (which the student copy keeps), not this exercise's computation."""
    return trusted_attention(q.double(), k.double(), v.double(), mask)


def _own(got, x):
    """The student's own rotations of q, k, v, when apply_rotary gave usable ones."""
    own = {}
    for name in ("q", "k", "v"):
        value = got.get("own_" + name)
        if type(value) is not torch.Tensor or value.shape != x[name].shape:
            return None
        if not value.is_floating_point() or not torch.isfinite(value).all():
            return None
        own[name] = value
    return own


def _rotated_replays(x):
    """The reference's rotations of q, k and v (float64), for a student whose own apply_rotary
    gives none that is usable."""
    return {f"rotated/{t}": _rope(x[t], x["positions"], x["base"]) for t in "qkv"}


ROTARY_ATTENTION = CHECKS.exercise("rotary_attention", probe=probe.probe_attention)


def _attention_values(got, want, x, what):
    """Judged against attention over the student's own apply_rotary (so a mistake there is
    not charged again), or over the reference's rotation (replayed with the reference) when
    theirs is not usable."""
    out = tensor(got, "out", what + "'s output", floating=True, shape=want["out"].shape)
    weights = tensor(
        got, "weights", what + "'s weights", floating=True, shape=want["weights"].shape
    )
    q, k, v, mask = x["q"], x["k"], x["v"], x["mask"]
    own = _own(got, x)
    if own is None:
        rq, rk, rv = (want[f"replay/rotated/{t}"] for t in "qkv")
    else:
        rq, rk, rv = (own[t] for t in "qkv")
    expected_out, expected_w = _attention(rq, rk, v, mask)
    tol = {"atol": 1e-5, "rtol": 1e-5}  # float32 student run against a float64 computation
    if close(weights, expected_w.float(), tol) and close(out, expected_out.float(), tol):
        return
    if own is not None and close(weights, want["weights"], tol) and close(out, want["out"], tol):
        return  # their rotary_attention is right but does not use their apply_rotary

    def attended(index, *args):
        return lambda: _attention(*args, mask)[index].float()

    for index, name, value in ((1, "weights", weights), (0, "output", out)):
        candidates = [
            (MISTAKES["rope-rotates-v"], attended(index, rq, rk, rv), {}),
            (MISTAKES["rope-attention-not-rotated"], attended(index, q, k, v), {}),
            (MISTAKES["rope-rotates-one-side"], attended(index, rq, k, v), {"which": "queries"}),
            (MISTAKES["rope-rotates-one-side"], attended(index, q, rk, v), {"which": "keys"}),
        ]
        if index == 1 and close(value, expected_w.float(), tol):
            continue
        expected = (expected_out, expected_w)[index].float()
        assert_close(value, expected, f"{what}'s {name}", candidates, tol=tol)


@ROTARY_ATTENTION.check(
    "attention", inputs=probe.inputs_attention, probe=probe.attend_grads, replays=_rotated_replays
)
def verdict_attention(got, want, x):
    what = "rotary_attention(q, k, v, positions, mask)"
    _attention_values(got, want, x, what)
    # to q, k and v; to q and k only where the student's own apply_rotary lets a gradient
    # through (probe.attend_grads: else the reference check charges the cut)
    verdicts.assert_gradients(got, None, what, behind=[("rotation", r"grad/[qk]$")])


@ROTARY_ATTENTION.check(
    "attention-shift", inputs=probe.inputs_attention, probe=probe.probe_attention_shift
)
def verdict_attention_shift(got, want, x):
    """The student's own two runs: each is attention (causal weights, rows summing to 1,
    out = weights @ v, so zeros cannot pass), and the shift changes neither."""
    what = "rotary_attention(q, k, v, positions, mask)"
    shape_out, shape_w = want["out"].shape, want["weights"].shape
    runs = {}
    for suffix, positions in (("", x["positions"]), ("2", x["positions"] + x["shift"])):
        out = tensor(got, "out" + suffix, what + "'s output", floating=True, shape=shape_out)
        w = tensor(got, "weights" + suffix, what + "'s weights", floating=True, shape=shape_w)
        if not (torch.isfinite(out).all() and torch.isfinite(w).all()):
            raise Failure(NOT_FINITE, what=what, count=int((~torch.isfinite(out)).sum()))
        _is_attention(out, w, x, what, positions)
        runs[suffix] = (out, w)
    # Two float32 runs at positions up to ~250 apart: float32 angles (LLaMA's code) reach 0.37
    # of (atol 1e-5, rtol 1e-4) on the output, measured over 400 seeds; atol 3e-5 leaves room.
    # Rotating v changes the output by O(1).
    tol = {"atol": 3e-5, "rtol": 1e-4}
    (out, w), (out2, w2) = runs[""], runs["2"]
    if not close(w2, w, tol) and _own_rotation_not_relative(got, x, tol):
        return  # apply_rotary's own mistake: its relative check charges it, not this one
    if not close(w2, w, tol):
        raise Failure(MISTAKES["rope-attention-not-relative"], shift=x["shift"], which="weights")
    if not close(out2, out, tol):
        # Same weights, another output: the values were changed by the positions.
        raise Failure(MISTAKES["rope-rotates-v"], what=what)


def _own_rotation_not_relative(got, x, tol):
    """Whether the student's own apply_rotary (probe_attention_shift) turns q·k differently at
    the shifted positions: scores from usable own rotations at both sets that disagree."""
    own = {}
    for key in ("own_q", "own_k", "own_q2", "own_k2"):
        value = got.get(key)
        like = x[key[4]]
        if type(value) is not torch.Tensor or value.shape != like.shape:
            return False
        if not value.is_floating_point() or not torch.isfinite(value).all():
            return False
        own[key] = value.double()
    scores = own["own_q"] @ own["own_k"].transpose(-2, -1)
    shifted = own["own_q2"] @ own["own_k2"].transpose(-2, -1)
    return not close(shifted, scores, tol)


def _is_attention(out, w, x, what, positions):
    if (w[x["mask"].expand_as(w)] != 0).any():
        raise Failure(
            MISTAKES["rope-attention-not-attention"],
            what=what,
            why="a key the mask blocks got weight",
        )
    sums = w.sum(dim=-1)  # within the weights' own dtype's tolerance: float32 rows of 8
    if not close(sums, torch.ones_like(sums)):  # sum to 1 only within a few 1e-7
        raise Failure(
            MISTAKES["rope-attention-not-attention"],
            what=what,
            why="the weights of a row do not sum to 1",
        )
    tol = {"atol": 1e-5, "rtol": 1e-5}
    if not close(out.double(), w.double() @ x["v"].double(), tol):
        # None in the student copy
        rotated = _output(lambda: _rope(x["v"], positions, x["base"]))
        if rotated is not None and close(out.double(), w.double() @ rotated, tol):
            raise Failure(MISTAKES["rope-rotates-v"], what=what)
        raise Failure(
            MISTAKES["rope-attention-not-attention"], what=what, why="the output is not weights @ v"
        )
