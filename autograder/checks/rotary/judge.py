"""Judge side of rotary.py's checks: misconceptions, models of wrong rotations, verdicts."""

from __future__ import annotations

import re

import torch

from ...core import NOT_FINITE, WRONG_VALUES, CheckList, Failure, Misconceptions, no_reference
from ...tolerances import tolerance
from ...trusted.attention import scaled_dot_product_attention as trusted_attention
from ...verdicts import ModelUnavailable, assert_close, close, model, tensor
from . import probe

misconception = Misconceptions(__name__)  # this module's (core.Misconceptions)

CHECKS = CheckList("rotary")

# --------------------------------------------------------------------------- misconceptions

INTERLEAVED = misconception(
    "rope-interleaved-pairs",
    "{what}: you rotated neighbouring features (2i, 2i + 1) together: the interleaved "
    "convention of Meta's LLaMA code and GPT-J. This kit (like LLaMA's Hugging Face code and "
    "GPT-NeoX) pairs feature i with feature i + d/2.",
    (
        "Rotary embeddings turn pairs of features by an angle that depends on the position. "
        "Which two features form a pair is a convention, and weights trained with one are wrong "
        "with the other: this kit pairs feature i with feature i + d/2.",
        "Split the last dimension into two halves (slices up to and from d // 2) and rotate the "
        "i-th feature of the first half with the i-th of the second; no [..., ::2] and "
        "[..., 1::2] slices.",
        "Both conventions are rotations, but weights trained with one are wrong with the other: "
        "split x into its halves x1 = x[..., :d/2], x2 = x[..., d/2:] and rotate (x1[i], x2[i]).",
    ),
)
DIRECTION = misconception(
    "rope-rotation-direction",
    "{what}: you rotated by -p·θ_i instead of +p·θ_i (the sign of the sin term is on the "
    "wrong half).",
    (
        "Turning by +p·θ and by -p·θ both keep lengths, but only one is the formula the weights "
        "were trained with: the first feature of a pair becomes x1·cos - x2·sin.",
        "Check the sign of the sin term in each half: minus in the first half, plus in the second.",
        "out[..., i] = x1·cos - x2·sin and out[..., i + d/2] = x2·cos + x1·sin; in the "
        "rotate_half form, rotate_half(x) = cat(-x2, x1), not cat(x2, -x1).",
    ),
)
EXPONENT_I = misconception(
    "rope-exponent-i-over-d",
    "{what}: your frequencies are base^(-i/d) with i the pair index; the exponent is 2i/d, so "
    "the frequencies fall from 1 to about 1/base across the pairs.",
    (
        "The frequencies θ_i = base^(-2i/d) fall geometrically from 1 to about 1/base across "
        "the d/2 pairs; with i/d they stop near 1/√base, and far positions are told apart less "
        "well.",
        "The exponent takes the even indices 0, 2, ..., d - 2 divided by d: torch.arange with "
        "a step of 2.",
        "torch.arange(0, d, 2) / d is the exponent (the even indices 2i), not "
        "torch.arange(d // 2) / d.",
    ),
)
PAIR_FREQUENCY = misconception(
    "rope-pair-frequency",
    "{what}: each of your d columns has its own frequency base^(-j/d), so the two features of "
    "a pair (i, i + d/2) turn by different angles: that is not a rotation.",
    (
        "A rotation turns both features of a pair by the same angle, so there are d/2 "
        "frequencies, one per pair, not d.",
        "Build d/2 frequencies, multiply them by the positions into a (T, d/2) table of angles, "
        "and use the same angle for x1[i] and x2[i].",
        "Compute d/2 frequencies θ_i = base^(-2i/d), one per pair, and use θ_i for both "
        "features i and i + d/2 (torch.cat([angles, angles], dim=-1) when you work on full "
        "width).",
    ),
)
LAYOUT_MISMATCH = misconception(
    "rope-frequency-layout-mismatch",
    "{what}: you pair the halves (i, i + d/2), but laid out the angles for interleaved pairs "
    "(repeat_interleave: θ_0, θ_0, θ_1, θ_1, ...), so the two features of a pair turn by "
    "different angles. This is what mixing code from the two conventions gives.",
    (
        "Each convention lays its angles out to match its pairs: halves (i, i + d/2) repeat "
        "the table of angles as a whole block, interleaved pairs repeat each angle in place. "
        "Mixing the two turns the features of a pair by different angles.",
        "With halves, either work on the two halves with a (T, d/2) table of angles, or, at "
        "full width, concatenate the table with itself along the last dimension.",
        "For pairs (i, i + d/2) the full-width angles are torch.cat([angles, angles], dim=-1); "
        "repeat_interleave(2) belongs to the interleaved convention only.",
    ),
)
NO_SIN = misconception(
    "rope-missing-sin-term",
    "{what}: you multiplied x by cos(p·θ) but left out the sin term, which mixes the two "
    "features of each pair: this shrinks the vectors instead of rotating them.",
    (
        "A rotation mixes the two features of a pair: each new feature combines both old ones. "
        "Multiplying by cos alone scales each feature on its own and shrinks the vector.",
        "Each half of the output needs a cos term of its own half and a sin term of the other "
        "half.",
        "out = x·cos + rotate_half(x)·sin, with rotate_half(x) = cat(-x2, x1).",
    ),
)
BASE_IGNORED = misconception(
    "rope-base-ignored",
    "{what}: your frequencies use base 10000 although base = {base:g} was passed.",
    (
        "base sets how fast the frequencies fall across the pairs, and with it the longest "
        "distance the rotation tells apart; each model chooses its own, so it is an argument.",
        "Use the function's base parameter where the frequencies θ_i are computed; no literal "
        "10000 in the computation.",
        "Use the `base` argument in θ_i = base^(-2i/d); models such as LLaMA 3 (500000) change "
        "it to reach longer contexts.",
    ),
)
POSITIONS_IGNORED = misconception(
    "rope-positions-ignored",
    "{what}: your rotation does not follow the positions passed ({shown}): {how}. "
    "A KV cache calls apply_rotary on new tokens at positions p0, p0 + 1, ...: their "
    "queries and keys must be turned by those angles.",
    (
        "The angle depends on each token's actual position, which is not always its row: with "
        "a KV cache, the new tokens sit at positions p0, p0 + 1, ...",
        "Build the (T, d/2) angles from the positions tensor passed in (shape (T,)), as a "
        "column times the row of frequencies.",
        "Build the angles from the `positions` argument (positions[:, None] * θ), not from "
        "torch.arange(x.size(-2)).",
    ),
)
POSITIONS_ROUNDED = misconception(
    "rope-positions-rounded",
    "{what}: at far positions your angles use the positions rounded to a low-precision float "
    "(bfloat16 or float16: above 256, bfloat16 keeps only every 2nd, 4th, 8th ... integer).",
    (
        "Low-precision floats cannot hold every large integer: in bfloat16, positions above "
        "256 are rounded, so far tokens get the angle of a neighbour.",
        "Compute the angles in float32 or float64 (cast the positions to one of them), and cast "
        "only cos and sin to x's dtype, at the end.",
        "Turn the positions into float32 or float64 (positions.float()) before multiplying by "
        "θ; never into the dtype of half-precision activations.",
    ),
)
DTYPE_NOT_KEPT = misconception(
    "rope-dtype-not-kept",
    "{what} has dtype {got}, but x was {expected}: apply_rotary must keep x's dtype.",
    (
        "A layer returns its input's dtype: mixed-precision models pass float16 or bfloat16 "
        "and expect the same back, while PyTorch's type promotion silently widens a product.",
        "Compute the angles in high precision, then cast cos and sin to x.dtype (Tensor.to) "
        "before multiplying them with x.",
        "Cast cos and sin to x.dtype (cos.to(x.dtype)); a float32 x times a float64 cos gives "
        "float64, and x.float() turns a float64 x into float32.",
    ),
)
LENGTH_CHANGED = misconception(
    "rope-length-changed",
    "apply_rotary changed the length of row {row} from {before:.4g} to {after:.4g}: a rotation "
    "keeps every vector's length.",
    (
        "A rotation keeps every vector's length: if a length changes, what you applied is not "
        "a pure rotation (a term is missing, or the two features of a pair turn by different "
        "angles).",
        "For each pair, the new first feature combines the cos of itself and the sin of its "
        "partner, the new second feature likewise, with one angle per pair.",
        "Each pair (x1[i], x2[i]) becomes (x1·cos - x2·sin, x2·cos + x1·sin): both terms are "
        "needed, with the same angle for both features of the pair.",
    ),
)
NOT_RELATIVE = misconception(
    "rope-not-relative",
    "q·k after rotation does not depend on the offset between the positions only: shifting "
    "both positions by {shift} changed the score of rows ({i}, {j}) (offset {offset}) from "
    "{before:.5g} to {after:.5g}.",
    (
        "This is the point of rotary embeddings: once q is turned for position m and k for "
        "position n, their dot product depends on n - m only. That holds when each pair turns "
        "by p·θ_i, with the same θ_i for both its features.",
        "Check that the angle is exactly position times frequency (no offset, no frequency per "
        "column), that q and k are turned the same way, and that nothing but a rotation is "
        "applied.",
        "Rotate the pairs (x1[i], x2[i]) by p·θ_i with one θ_i per pair: then "
        "R(m)q · R(n)k = q · R(n - m)k.",
    ),
)
OFFSET_ZERO = misconception(
    "rope-offset-zero-changed",
    "Rows ({i}, {j}) sit at the same position, yet their score after rotation is {after:.5g}, "
    "not q·k = {before:.5g}: two vectors turned by the same rotation keep their dot product.",
    (
        "Two vectors turned by the same rotation keep their dot product: a query and a key at "
        "the same position must score as they did before the rotation.",
        "Apply exactly the same operation to q and to k at a given position, and nothing but "
        "the rotation: no scaling, no added position vector.",
        "Rotate both q and k by the same angles for the same position, and only rotate (no "
        "scaling, no added terms).",
    ),
)
NO_ROTATION = misconception(
    "rope-no-rotation",
    "Your apply_rotary does not depend on the position: every score equals the unrotated q·k.",
    (
        "Rotary embeddings carry the position into q and k by turning them; an output that does "
        "not depend on the positions brings no position information to attention.",
        "The angles are the positions times θ_i: check that they reach the output, through cos "
        "and sin.",
        "The angle of pair i at position p is p·θ_i: rows at different positions turn by "
        "different angles.",
    ),
)
ODD_NO_VALUEERROR = misconception(
    "rope-odd-width-no-valueerror",
    "apply_rotary on a head of odd width d = {d} should raise ValueError, but it {got}.",
    (
        "Rotations act on pairs of features, so an odd width cannot be rotated: the function "
        "should say so at once, not fail in a slice or return something wrong.",
        "Read d from x's last dimension before any computation, test its parity with %, and "
        "raise ValueError.",
        "Check d = x.size(-1) first and raise ValueError(f'... d = {{d}} is odd ...') when "
        "d % 2 is not 0. Rotations act on pairs of features.",
    ),
)
ODD_UNCLEAR = misconception(
    "rope-odd-width-error-unclear",
    "Your ValueError for the odd width d = {d} says {text!r}: it should give d, so the reader "
    "sees which width was wrong.",
    (
        "An error message should say what is wrong with the input, here the width, so that the "
        "caller can fix the call without reading your code.",
        "Build the message with an f-string that shows d (and says it must be even).",
        "For example: ValueError(f'rotary embeddings need an even head width, got d = {{d}}').",
    ),
)
ROTATES_V = misconception(
    "rope-rotates-v",
    "{what}: you rotated v as well. Rotary embeddings turn queries and keys only, so that their "
    "scores see relative positions; the values carry content and are not rotated.",
    (
        "Rotary embeddings bring relative positions into the scores q·k. The values carry "
        "content and are mixed by the weights; they take no part in the scores.",
        "Call apply_rotary on q and on k only, with the same positions and base, and pass v on "
        "to attention as it is.",
        "q, k = apply_rotary(q, positions), apply_rotary(k, positions); leave v as it is.",
    ),
)
ROTATES_ONE = misconception(
    "rope-rotates-one-side",
    "{what}: you rotated only the {which}; the scores see relative positions only when both "
    "queries and keys are rotated.",
    (
        "Only when both q and k are turned does their dot product depend on the offset between "
        "positions; turning one side keeps absolute positions in the scores.",
        "apply_rotary twice: once on q, once on k, with the same positions and base.",
        "Rotate q and k, at the same positions, before scaled_dot_product_attention.",
    ),
)
NOT_ROTATED = misconception(
    "rope-attention-not-rotated",
    "{what}: your result is plain attention, with no rotation of q or k.",
    (
        "rotary_attention is attention whose queries and keys carry their positions through a "
        "rotation; without it, attention ignores the order of the tokens.",
        "Use your apply_rotary, with the positions and base passed in, on q and k before "
        "attention.",
        "Call apply_rotary on q and on k before scaled_dot_product_attention.",
    ),
)
ATTENTION_NOT_RELATIVE = misconception(
    "rope-attention-not-relative",
    "Shifting every position by {shift} changed rotary_attention's {which}: with rotary "
    "embeddings attention sees relative positions only.",
    (
        "With rotary embeddings the scores depend only on the offsets between positions, so "
        "adding the same number to every position changes nothing.",
        "Rotate q and k by the positions passed in, and add nothing else that depends on "
        "absolute positions.",
        "Rotate q and k (both, with the same positions) and nothing else.",
    ),
)
NOT_ATTENTION = misconception(
    "rope-attention-not-attention",
    "{what}: {why}.",
    (
        "After the rotation, rotary_attention is ordinary scaled dot-product attention: the "
        "same weights and output, computed from the rotated q and k.",
        "Call scaled_dot_product_attention from the earlier exercise with the rotated q and k, "
        "v and the mask, and return what it returns, unchanged.",
        "Return scaled_dot_product_attention(q_rotated, k_rotated, v, mask) unchanged.",
    ),
)

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
    return base ** (-(2 * i if exponent == "2i" else i) / d)


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
        ("interleaved", INTERLEAVED, m(pairs="interleaved"), {}),
        ("backwards", DIRECTION, m(sign=-1.0), {}),
        ("exponent-i", EXPONENT_I, m(exponent="i"), {}),
        ("per-column", PAIR_FREQUENCY, m(layout="columns"), {}),
        ("repeat-interleave", LAYOUT_MISMATCH, m(layout="repeat"), {}),
        ("cos-only", NO_SIN, m(sin_term=False), {}),
        ("interleaved-backwards", INTERLEAVED, m(pairs="interleaved", sign=-1.0), {}),
    ]
    if base != 10000.0:
        found.append(("base-10000", BASE_IGNORED, m(base=10000.0), {"base": base}))
    how = "every row is turned by θ_i, as if at position 1: the positions were never multiplied in"
    found.append(
        ("at-one", POSITIONS_IGNORED, m(positions=torch.ones(T)), {"shown": shown, "how": how})
    )
    if not torch.equal(positions, torch.arange(T)):
        how = "you rotated the rows by 0, 1, ..., T-1"
        found.append(
            (
                "at-rows",
                POSITIONS_IGNORED,
                m(positions=torch.arange(T)),
                {"shown": shown, "how": how},
            )
        )
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


def _rotation(got, key, case, what, want, *, named, charged=(), exact=None):
    """got[key] is apply_rotary(case): the shape and dtype of x, values within the position-
    dependent float32 allowance of `exact` (default: the reference, want[key]). Mistakes in
    `charged` and not in `named` pass here (another check charges them): their outputs are
    replayed with the reference (_exempt_replays), so both kits decide alike; those in `named`
    are named, where the judge's models are at hand (not in the student copy)."""
    x, positions = case["x"], case["positions"]
    out = tensor(got, key, what, floating=True, shape=x.shape)
    if out.dtype != x.dtype:
        raise Failure(DTYPE_NOT_KEPT, what=what, got=out.dtype, expected=x.dtype)
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
    INTERLEAVED,
    DIRECTION,
    EXPONENT_I,
    PAIR_FREQUENCY,
    LAYOUT_MISMATCH,
    NO_SIN,
    POSITIONS_IGNORED,  # at reference's positions 0 .. T-1, only when never multiplied in
)


# --------------------------------------------------------------------------- apply_rotary


APPLY_ROTARY = CHECKS.exercise("apply_rotary", probe=probe.probe_rotate)


@APPLY_ROTARY.check(
    "reference",
    "apply_rotary matches the reference, pairs (i, i + d/2), on (B, H, T, d) and (T, d)",
    3,
    inputs=probe.inputs_reference,
)
def verdict_reference(got, want, x):
    for name, case in x.items():
        _rotation(got, name, case, _what(case), want, named=_EVERYWHERE)


@APPLY_ROTARY.check(
    "positions",
    "apply_rotary uses the positions passed: a cache's p0 .. p0 + T - 1, or any order",
    2,
    inputs=probe.inputs_positions,
    replays=_exempt_replays((POSITIONS_IGNORED,), _EVERYWHERE),
)
def verdict_positions(got, want, x):
    for name, case in x.items():
        _rotation(
            got, name, case, _what(case), want, named=(POSITIONS_IGNORED,), charged=_EVERYWHERE
        )


@APPLY_ROTARY.check(
    "base",
    "apply_rotary uses the base passed (θ_i = base^(-2i/d), base ≠ 10000)",
    1,
    inputs=probe.inputs_base,
    replays=_exempt_replays((BASE_IGNORED,), _EVERYWHERE),
)
def verdict_base(got, want, x):
    for name, case in x.items():
        _rotation(got, name, case, _what(case), want, named=(BASE_IGNORED,), charged=_EVERYWHERE)


@APPLY_ROTARY.check(
    "closed-form",
    "apply_rotary at far positions (up to 8191) against the float64 closed form",
    1,
    inputs=probe.inputs_far,
    replays=_exempt_replays((), _EVERYWHERE, exact=("far",)),
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
            raise Failure(POSITIONS_ROUNDED, what=what)
    _rotation(got, "far", case, what, want, named=(), charged=_EVERYWHERE, exact=exact)


@APPLY_ROTARY.check(
    "float64",
    "apply_rotary keeps float64 (float64 in, float64 out)",
    1,
    inputs=probe.inputs_float64,
    replays=_exempt_replays((), _EVERYWHERE),
)
def verdict_float64(got, want, x):
    """The dtype is what this check grades; the values are held to the float32 allowance,
    since computing the angles in float32 (as LLaMA's code does) is a precision choice, not a
    mistake. Value mistakes are charged by the reference check."""
    case = x["float64"]
    _rotation(got, "float64", case, _what(case), want, named=(), charged=_EVERYWHERE)


def _rows(got, key, shape, what):
    value = tensor(got, key, what, floating=True, shape=shape).double()
    if not torch.isfinite(value).all():
        raise Failure(NOT_FINITE, what=what, count=int((~torch.isfinite(value)).sum()))
    return value


@APPLY_ROTARY.check(
    "relative",
    "q·k after rotation depends only on the offset between the positions",
    2,
    inputs=probe.inputs_relative,
    probe=probe.probe_relative,
)
@no_reference
def verdict_relative(got, want, x):
    """Judged on the student's own runs, whatever pair convention they chose: every rotated
    row keeps its length (zeros fail), rows at the same position keep q·k, shifting all
    positions by one amount keeps every score, and rows at different positions do change
    their score (an identity or a fixed rotation fails)."""
    q, k, positions, shift = x["q"].double(), x["k"].double(), x["positions"], x["shift"]
    what = "apply_rotary(q, positions)"
    runs = {name: _rows(got, name, q.shape, what) for name in ("q1", "k1", "q2", "k2")}
    p_max = float(positions.max()) + shift
    eps = SLOPE * (p_max + 1)
    for name, original in (("q1", q), ("k1", k), ("q2", q), ("k2", k)):
        before, after = original.norm(dim=-1), runs[name].norm(dim=-1)
        bad = (after - before).abs() > 1e-5 + before * (eps + 1e-6)
        if bad.any():
            row = int(bad.nonzero()[0])
            raise Failure(
                LENGTH_CHANGED, row=row, before=float(before[row]), after=float(after[row])
            )
    if torch.equal(runs["q1"], runs["q2"]) and torch.equal(runs["k1"], runs["k2"]):
        shown = ", ".join(str(int(p)) for p in positions[:4]) + ", ..."
        how = f"shifting every position by {shift} changed nothing"
        raise Failure(POSITIONS_IGNORED, what=what, shown=shown, how=how)
    plain = q @ k.T
    s1, s2 = runs["q1"] @ runs["k1"].T, runs["q2"] @ runs["k2"].T
    sizes = q.norm(dim=-1)[:, None] * k.norm(dim=-1)[None, :]
    allowed = 1e-5 + 4 * eps * sizes
    offsets = positions[:, None] - positions[None, :]
    same = offsets == 0
    for scores in (s1, s2):
        bad = same & ((scores - plain).abs() > allowed)
        if bad.any():
            i, j = (int(v) for v in bad.nonzero()[0])
            raise Failure(
                OFFSET_ZERO, i=i, j=j, before=float(plain[i, j]), after=float(scores[i, j])
            )
    bad = (s1 - s2).abs() > allowed
    if bad.any():
        i, j = (int(v) for v in bad.nonzero()[0])
        raise Failure(
            NOT_RELATIVE,
            shift=shift,
            i=i,
            j=j,
            offset=int(offsets[i, j]),
            before=float(s1[i, j]),
            after=float(s2[i, j]),
        )
    moved = ~same & ((s1 - plain).abs() > 10 * allowed)
    if not moved.any():
        raise Failure(NO_ROTATION)


@APPLY_ROTARY.check(
    "odd-width",
    "apply_rotary rejects an odd head width with a ValueError that gives d",
    1,
    inputs=probe.inputs_odd,
    probe=probe.probe_odd,
)
@no_reference
def verdict_odd(got, want, x):
    d = x["x"].size(-1)
    if got.get("got") != "ValueError":
        raise Failure(ODD_NO_VALUEERROR, d=d, got=str(got.get("got"))[:80])
    text = str(got.get("text", ""))
    if not re.search(rf"(?<!\d){d}(?!\d)", text):
        raise Failure(ODD_UNCLEAR, d=d, text=text[:200])


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
    return {f"rotated/{t}": _rope(x[t], x["positions"]) for t in "qkv"}


ROTARY_ATTENTION = CHECKS.exercise("rotary_attention", probe=probe.probe_attention)


@ROTARY_ATTENTION.check(
    "attention",
    "rotary_attention rotates q and k (not v) and attends, with a causal mask",
    2,
    inputs=probe.inputs_attention,
    replays=_rotated_replays,
)
def verdict_attention(got, want, x):
    """Judged against attention over the student's own apply_rotary (so a mistake there is
    not charged again), or over the reference's rotation (replayed with the reference) when
    theirs is not usable."""
    what = "rotary_attention(q, k, v, positions, mask)"
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
            (ROTATES_V, attended(index, rq, rk, rv), {}),
            (NOT_ROTATED, attended(index, q, k, v), {}),
            (ROTATES_ONE, attended(index, rq, k, v), {"which": "queries"}),
            (ROTATES_ONE, attended(index, q, rk, v), {"which": "keys"}),
        ]
        if index == 1 and close(value, expected_w.float(), tol):
            continue
        expected = (expected_out, expected_w)[index].float()
        assert_close(value, expected, f"{what}'s {name}", candidates, tol=tol)


@ROTARY_ATTENTION.check(
    "attention-shift",
    "rotary_attention is unchanged when every position is shifted by the same amount",
    1,
    inputs=probe.inputs_attention,
    probe=probe.probe_attention_shift,
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
    if not close(w2, w, tol):
        raise Failure(ATTENTION_NOT_RELATIVE, shift=x["shift"], which="weights")
    if not close(out2, out, tol):
        # Same weights, another output: the values were changed by the positions.
        raise Failure(ROTATES_V, what=what)


def _is_attention(out, w, x, what, positions):
    if (w[x["mask"].expand_as(w)] != 0).any():
        raise Failure(NOT_ATTENTION, what=what, why="a key the causal mask blocks got weight")
    sums = w.sum(dim=-1)  # within the weights' own dtype's tolerance: float32 rows of 8
    if not close(sums, torch.ones_like(sums)):  # sum to 1 only within a few 1e-7
        raise Failure(NOT_ATTENTION, what=what, why="the weights of a row do not sum to 1")
    tol = {"atol": 1e-5, "rtol": 1e-5}
    if not close(out.double(), w.double() @ x["v"].double(), tol):
        rotated = _output(lambda: _rope(x["v"], positions))  # None in the student copy
        if rotated is not None and close(out.double(), w.double() @ rotated, tol):
            raise Failure(ROTATES_V, what=what)
        raise Failure(NOT_ATTENTION, what=what, why="the output is not weights @ v")
