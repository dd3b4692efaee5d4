"""Judge side of positional.py's checks: misconceptions, models of wrong tables, verdicts."""

from __future__ import annotations

import math
import re

import torch

from ...core import verdicts
from ...core.check import NOT_FINITE, WRONG_SHAPE, WRONG_VALUES, CheckList, Failure, no_reference
from ...core.misconception_data import misconceptions_of
from ...core.tolerances import tolerance
from ...core.verdicts import ModelUnavailable, assert_close, dropout_finding, model, tensor
from . import probe

CHECKS = CheckList("positional")
MISTAKES = misconceptions_of(__name__)  # misconceptions.toml: messages and hint ladders

# --------------------------------------------------------------------------- models

# float32 rounds the angle p·ω with a relative error of a few units in the last place, so the
# error of sin/cos grows with the position p (up to ~1e-4 at p = 5000, measured). The standard
# tolerance holds only near p = 0; this one adds 4 float32 epsilons per unit of position.
SLOPE = 4 * torch.finfo(torch.float32).eps


@model
def _table(positions, D, *, swap=False, exponent="2i", start=0, layout="interleaved"):
    """The table that a given mistake produces, in float64, at the given positions."""
    p = torch.as_tensor(positions, dtype=torch.float64)[:, None] + start
    j = torch.arange(D)
    if layout == "halves":
        half = (D + 1) // 2
        pair, is_sin = torch.where(j < half, j, j - half), j < half
    else:
        pair, is_sin = j // 2, j % 2 == 0
    power = {"2i": 2 * pair, "i": pair, "j": j, "4i": 4 * pair}[exponent].double() / D
    angles = p * 10000.0**-power
    sin, cos = angles.sin(), angles.cos()
    return torch.where(is_sin, cos, sin) if swap else torch.where(is_sin, sin, cos)


def _mistakes(positions, D):
    odd = (
        [(MISTAKES["pe-odd-d-plus-one"], lambda: _table(positions, D + 1)[:, :D], {})]
        if D % 2
        else []
    )
    return odd + [
        (MISTAKES["pe-sin-cos-swapped"], lambda: _table(positions, D, swap=True), {}),
        (MISTAKES["pe-exponent-i-over-d"], lambda: _table(positions, D, exponent="i"), {}),
        (MISTAKES["pe-exponent-4i-over-d"], lambda: _table(positions, D, exponent="4i"), {}),
        (MISTAKES["pe-pair-frequency"], lambda: _table(positions, D, exponent="j"), {}),
        (MISTAKES["pe-positions-from-one"], lambda: _table(positions, D, start=1), {}),
        (MISTAKES["pe-halves-layout"], lambda: _table(positions, D, layout="halves"), {}),
    ]


def _within(got, want, positions, scale=1.0):
    """Elementwise |got - want| / allowed, the allowance growing with the position."""
    tol = tolerance(torch.float32)
    p = torch.as_tensor(positions, dtype=torch.float64)[:, None]
    allowed = tol["atol"] + scale * SLOPE * p + tol["rtol"] * want.double().abs()
    return (got.double() - want.double()).abs() / allowed


def _matches(got, output, positions, scale):
    """got ≈ output() within the allowance; False where the model is not in this copy (the
    student copy: the mistake is then not named, and the check charges it unnamed)."""
    try:
        value = output()
    except ModelUnavailable:
        return False
    return bool((_within(got, value, positions, scale) <= 1).all())


def assert_table(got, want, positions, what, candidates=(), scale=1.0, charged=(), D=None):
    """got ≈ want row by row, with a tolerance that grows with each row's position. A table
    that matches one of the `charged` tables (the outputs of mistakes another check charges,
    replayed with the reference) passes; so does, with `D`, one that is right but for its
    frequencies (own_frequencies), unless it is one of the `candidates`, this check's own
    mistakes (for odd D, the exponent's D + 1 is one)."""
    ratio = _within(got, want, positions, scale)
    if bool((ratio <= 1).all()):
        return
    if any(bool((_within(got, t, positions, scale) <= 1).all()) for t in charged):
        return
    for mistake, output, details in candidates:
        if _matches(got, output, positions, scale):
            raise Failure(mistake, what=what, **details)
    fitted = None if D is None else own_frequencies(got, positions, D)
    if fitted is not None and bool((_within(got, fitted, positions, scale) <= 1).all()):
        return
    if not torch.isfinite(got).all():
        raise Failure(NOT_FINITE, what=what, count=int((~torch.isfinite(got)).sum()))
    flat = int(torch.nan_to_num(ratio, nan=float("inf")).argmax())
    row, col = divmod(flat, got.size(-1))
    raise Failure(
        WRONG_VALUES,
        what=what,
        err=float((got.double() - want.double()).abs()[row, col]),
        index=(int(torch.as_tensor(positions)[row]), col),
        got=float(got[row, col]),
        want=float(want[row, col]),
    )


def table(got, key, what, shape, *, strict=True):
    """got[key] as a float32 table of `shape`, or the Failure naming why not. With
    strict=False another floating dtype is cast (the dtype is charged once, in "encoding")."""
    value = tensor(got, key, what, shape=shape)
    if value.dtype != torch.float32:
        if strict or not value.is_floating_point():
            raise Failure(MISTAKES["pe-table-not-float32"], what=what, got=value.dtype)
        value = value.float()
    return value


# The mistakes that every D shows, by the check that charges them: "encoding" the layout's
# origin (sin/cos swapped, positions from 1; and the dtype), "frequencies" the exponent, and
# "relative" the layouts whose pairs do not rotate, which it names. Every other table check
# passes a table that is right but for one of them.
ENCODING_OWN = ("pe-sin-cos-swapped", "pe-positions-from-one")
FREQUENCIES_OWN = ("pe-exponent-i-over-d", "pe-exponent-4i-over-d")
RELATIVE_OWN = ("pe-pair-frequency", "pe-halves-layout")


def _named(positions, D, first):
    """The mistakes a table check names: "encoding" (first) its own; the later table checks
    only the odd-D one, and let the others pass (_charged)."""
    found = _mistakes(positions, D)
    own = ENCODING_OWN if first else ("pe-odd-d-plus-one",)
    return [c for c in found if c[0].id in own]


def _charged(positions, D, ids=None):
    """{mistake id: its table}: the mistakes that every D shows (or those in `ids`)."""
    return {
        m.id: output()
        for m, output, _ in _mistakes(positions, D)
        if m is not MISTAKES["pe-odd-d-plus-one"] and (ids is None or m.id in ids)
    }


def _replay_table(name, positions, D, first):
    """The float64 closed form at `positions` ("<name>/exact") and the tables of the
    mistakes other checks charge ("<name>/<mistake id>"): for "encoding" (first) those of
    "frequencies" and "relative", for the checks after it all of them."""
    found = {f"{name}/exact": _table(positions, D)}
    ids = FREQUENCIES_OWN + RELATIVE_OWN if first else None
    found.update({f"{name}/{k}": v for k, v in _charged(positions, D, ids).items()})
    return found


def _replayed(want, name, first=False):
    """(the exact table, the charged tables) that _replay_table kept with the reference."""
    exact = f"replay/{name}/exact"
    charged = [v for k, v in want.items() if k.startswith(f"replay/{name}/") and k != exact]
    return want[exact], charged


def _replays_even(x):
    return _replay_table("pe", range(x["max_len"]), x["d_model"], first=True)


def _replays_odd(x):
    found = {}
    for name, case in x.items():
        found.update(_replay_table(name, range(case["max_len"]), case["d_model"], first=False))
    return found


def _replays_far(x):
    return _replay_table("rows", x["positions"], x["d_model"], first=False)


def own_frequencies(rows, positions, D):
    """The table of the docstring's layout (sines in the even columns, cosines in the odd
    ones, positions from 0) at `positions`, in float64, with the frequencies the student's
    `rows` show when they form a geometric series ω_i = c·r^i other than the docstring's
    (c = 1, r = 10000^(-2/D)): c and r read off the row of position 1. Any base, a log in
    another base, an exponent with another factor, positions scaled by a constant: mistakes
    of the frequencies, which the frequencies check charges and names, so that the other
    table checks pass a table that is right but for them (principle 10). None where the
    rows show no such series (the row of position 1 missing, NaN, or a pair that does not
    start at (0, 1))."""
    index = {int(p): i for i, p in enumerate(positions)}
    if 0 not in index or 1 not in index or D < 1:
        return None
    first, second = rows[index[0]].double(), rows[index[1]].double()
    if not bool(torch.isfinite(first).all() and torch.isfinite(second).all()):
        return None
    start = torch.zeros(D, dtype=torch.float64)
    start[1::2] = 1.0
    if bool(((first - start).abs() > 1e-4).any()):
        return None
    angles = [math.atan2(float(second[j]), float(second[j + 1])) for j in range(0, D - 1, 2)]
    if D % 2:
        angles.append(math.asin(max(-1.0, min(1.0, float(second[D - 1])))))
    c = angles[0]
    r = angles[1] / c if len(angles) > 1 and c != 0 else 1.0
    if not (c > 0 and r > 0):
        return None
    omega = c * r ** torch.arange(len(angles), dtype=torch.float64)
    docstring = 10000.0 ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)
    if torch.allclose(omega, docstring, rtol=1e-4, atol=1e-6):
        return None  # the docstring's frequencies: the table's other mistakes are named
    p = torch.as_tensor(positions, dtype=torch.float64)[:, None]
    j = torch.arange(D)
    angle = p * omega[j // 2]
    return torch.where(j % 2 == 0, angle.sin(), angle.cos())


def _compare_table(got, want, key, max_len, D, first):
    what = f"sinusoidal_encoding({max_len}, {D})"
    pe = table(got, key, what, (max_len, D), strict=first)
    exact, charged = _replayed(want, key, first)
    # Two float32 computations of the same closed form: each may be off by the allowance.
    named = _named(range(max_len), D, first)
    assert_table(pe, exact, range(max_len), what, named, 2.0, charged, D)


# --------------------------------------------------------------------------- sinusoidal_encoding


SINUSOIDAL_ENCODING = CHECKS.exercise("sinusoidal_encoding", probe=probe.probe_table)


@SINUSOIDAL_ENCODING.check("encoding", inputs=probe.inputs_even, replays=_replays_even)
def verdict_even(got, want, x):
    _compare_table(got, want, "pe", x["max_len"], x["d_model"], first=True)


def _replays_frequencies(x):
    """The tables of the layouts "relative" charges (their pairs do not rotate)."""
    n, D = x["max_len"], x["d_model"]
    return {f"pe/{k}": v for k, v in _charged(range(n), D, RELATIVE_OWN).items()}


# The angle per position is read off the student's float32 table: the mean of n - 1 steps,
# (θ(n-1) - θ(0)) / (n - 1), off by a few float32 roundings of an angle below n (about 1e-7
# rad here); the exponent mistakes change ω_1 by a factor 10000^(1/D) > 1.5.
FREQUENCY_ATOL, FREQUENCY_RTOL = 1e-5, 1e-4


@SINUSOIDAL_ENCODING.check(
    "frequencies", inputs=probe.inputs_frequencies, replays=_replays_frequencies
)
def verdict_frequencies(got, want, x):
    """The property on the student's own table: pair i (columns 2i, 2i + 1) turns by
    ω_i = 10000^(-2i/D) per position, either way round (a sin/cos swap, or positions counted
    from 1, are the encoding check's). A table whose pairs do not rotate at all in the way
    "relative" names (one frequency per column, sines and cosines in two halves) passes here:
    it is charged there. A table that does not turn (constant, zeros) fails: ω_0 is 1."""
    n, D = x["max_len"], x["d_model"]
    what = f"sinusoidal_encoding({n}, {D})"
    pe = table(got, "pe", what, (n, D), strict=False).double()
    if not torch.isfinite(pe).all():
        raise Failure(NOT_FINITE, what=what, count=int((~torch.isfinite(pe)).sum()))
    charged = [v for k, v in want.items() if k.startswith("replay/pe/")]
    if any(bool((_within(pe, t, range(n), 2.0) <= 1).all()) for t in charged):
        return
    z = torch.complex(pe[:, 1::2], pe[:, 0::2])  # cos + i sin: (n, D/2)
    step = torch.angle(z[1:] * z[:-1].conj()).mean(dim=0).abs()  # the angle per position
    omega = 10000.0 ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)
    off = (step - omega).abs() > FREQUENCY_ATOL + FREQUENCY_RTOL * omega
    if not bool(off.any()):
        return
    for mistake, output, details in _mistakes(range(n), D):
        if mistake.id in FREQUENCIES_OWN and _matches(pe, output, range(n), 2.0):
            raise Failure(mistake, what=what, **details)
    i = int(off.nonzero()[0])
    raise Failure(
        MISTAKES["pe-wrong-frequency"],
        cols=f"({2 * i}, {2 * i + 1})",
        got=f"{float(step[i]):.6g}",
        i=i,
        two_i=2 * i,
        D=D,
        want=f"{float(omega[i]):.6g}",
    )


@SINUSOIDAL_ENCODING.check(
    "odd-d", inputs=probe.inputs_odd, probe=probe.probe_odd, replays=_replays_odd
)
def verdict_odd(got, want, x):
    for name, case in x.items():
        _compare_table(got, want, name, case["max_len"], case["d_model"], first=False)


@SINUSOIDAL_ENCODING.check(
    "closed-form", inputs=probe.inputs_far, probe=probe.probe_far, replays=_replays_far
)
def verdict_far(got, want, x):
    max_len, D, positions = x["max_len"], x["d_model"], x["positions"]
    what = f"sinusoidal_encoding({max_len}, {D})"
    rows = tensor(got, "rows", what)
    if tuple(rows.shape) != (len(positions), D):
        raise Failure(WRONG_SHAPE, what=what, got=tuple(rows.shape), expected=(max_len, D))
    rows = table(got, "rows", what, (len(positions), D), strict=False)
    what += " at positions " + ", ".join(map(str, positions))
    exact, charged = _replayed(want, "rows", first=False)
    assert_table(rows, exact, positions, what, _named(positions, D, False), 1.0, charged, D)


# The first pair of a table that turns at all turns by more than this per position (a
# frequency scaled by 1 / max_len still turns by 1 / 250 rad here); a constant pair by about
# float32's rounding of its angle.
STILL = 1e-4


@SINUSOIDAL_ENCODING.check("relative", inputs=probe.inputs_relative)
@no_reference
def verdict_relative(got, want, x):
    """The property alone, on the student's own table: each pair (columns 2i, 2i + 1) is a
    unit vector that turns by one angle per offset k, the same at every position p. Which
    frequencies the pairs use is graded by the frequencies check; a table that does not turn
    at all (constant, zeros) fails here."""
    n, D = x["max_len"], x["d_model"]
    what = f"sinusoidal_encoding({n}, {D})"
    pe = table(got, "pe", what, (n, D), strict=False).double()
    if not torch.isfinite(pe).all():
        raise Failure(NOT_FINITE, what=what, count=int((~torch.isfinite(pe)).sum()))
    z = torch.complex(pe[:, 1::2], pe[:, 0::2])  # cos + i sin: (n, D/2), turning by +p·ω_i
    p = torch.arange(n, dtype=torch.float64)[:, None]
    allowed = 3 * (tolerance(torch.float32)["atol"] + SLOPE * p)
    length = (z.abs() - 1).abs()
    if bool((length > allowed).any()):
        row, pair = divmod(int((length / allowed).argmax()), D // 2)
        why = f"at position {row} its length is {float(z[row, pair].abs()):.4g}, not 1"
        _fail_pair(pe, n, D, pair, why)
    for k in x["offsets"]:
        turn = z[k:] * z[:-k].conj()  # e^{i k ω_i} at every p when the pair rotates
        spread = (turn - turn.mean(dim=0)).abs() / (2 * allowed[k:])
        if bool((spread > 1).any()):
            row, pair = divmod(int(spread.argmax()), D // 2)
            why = f"from p = {row} to p + {k} it turns by a different angle than elsewhere"
            _fail_pair(pe, n, D, pair, why)
    step = torch.angle(z[1:] * z[:-1].conj()).mean(dim=0).abs()  # the angle per position
    if float(step[0]) < STILL:  # how fast it turns is the frequencies check's
        why = f"it does not turn: {float(step[0]):.2g} rad per position"
        _fail_pair(pe, n, D, 0, why)


def _fail_pair(pe, n, D, pair, why):
    # The classic layouts that break the rotation are named as themselves.
    for mistake, kw in (
        (MISTAKES["pe-pair-frequency"], {"exponent": "j"}),
        (MISTAKES["pe-halves-layout"], {"layout": "halves"}),
    ):
        if _matches(pe, lambda kw=kw: _table(range(n), D, **kw), range(n), 3.0):
            raise Failure(mistake, what=f"sinusoidal_encoding({n}, {D})")
    raise Failure(MISTAKES["pe-pair-not-rotation"], cols=f"({2 * pair}, {2 * pair + 1})", why=why)


# --------------------------------------------------------------------------- PositionalEncoding


POSITIONAL_ENCODING = CHECKS.exercise("PositionalEncoding", probe=probe.probe_buffer)


@POSITIONAL_ENCODING.check("buffer", inputs=probe.inputs_buffer)
def verdict_buffer(got, want, x):
    """Judged from returned outputs that need the real module to produce: a state_dict
    holding a random pe, loaded strictly, is what forward adds, and pe holds the table. The
    flags the probe reports only choose the wording. Whether pe is trained (a parameter) is
    the not-trained check's."""
    max_len, D = x["max_len"], x["d_model"]
    what = f"PositionalEncoding({D}, max_len={max_len})"
    why = "registered with persistent=False" if got.get("is_buffer") else "a plain attribute"
    moves = "moves" if got.get("is_buffer") else "does not move"
    if not got.get("in_state_dict"):
        raise Failure(MISTAKES["pe-not-in-state-dict"], why=why, moves=moves)
    if "load_error" in got:  # in the state_dict, but a saved pe does not load back
        pe = got.get("pe")
        if isinstance(pe, torch.Tensor) and tuple(pe.shape) != (1, max_len, D):
            raise Failure(
                WRONG_SHAPE, what="the buffer pe", got=tuple(pe.shape), expected=(1, max_len, D)
            )
        raise Failure(MISTAKES["pe-load-fails"], shape=(1, max_len, D), error=got["load_error"])
    loaded = tensor(got, "loaded_out", what + " after load_state_dict", shape=x["x"].shape)
    if not any(  # x scaled by √D first is the forward check's to charge
        close_enough(loaded, _scaled(x["x"], factor) + x["state"].double())
        for factor in (1.0, math.sqrt(D))
    ):
        why = "forward does not add the pe that load_state_dict loaded"
        raise Failure(MISTAKES["pe-not-in-state-dict"], why=why, moves="may not move")
    pe = table(got, "pe", "the buffer pe", (1, max_len, D))
    # The buffer holds the table: the reference's, or the student's own (whose values the
    # checks above grade, so a wrong table is not charged again here).
    if bool((_within(pe[0], want["pe"][0], range(max_len), 2.0) <= 1).all()):
        return
    own = table(got, "table", f"sinusoidal_encoding({max_len}, {D})", (max_len, D), strict=False)
    assert_close(
        pe[0], own, f"the buffer pe, compared with your sinusoidal_encoding({max_len}, {D})"
    )


@POSITIONAL_ENCODING.check("not-trained", inputs=probe.inputs_buffer)
def verdict_not_trained(got, want, x):
    """An optimizer step on the module's trainable parameters leaves forward unchanged, and
    forward adds a table (the reference's or the student's own sinusoidal_encoding, B = T =
    max_len, where every slicing agrees): a module that adds nothing, or anything else, has
    shown nothing about its table. Whether pe is saved and loaded is the buffer check's."""
    max_len, D = x["max_len"], x["d_model"]
    what = f"PositionalEncoding({D}, max_len={max_len})"
    before = tensor(got, "before_step", what, shape=x["x"].shape, floating=True)
    after = tensor(got, "after_step", what + " after an optimizer step", shape=x["x"].shape)
    if got.get("is_parameter") or got.get("requires_grad") or not torch.equal(before, after):
        raise Failure(MISTAKES["pe-is-parameter"])
    added = before.double() - x["x"].double()  # (max_len, max_len, D): the table, per row
    verdicts.assert_evidence(added.float(), f"What {what} adds to x")
    # x scaled by √D before the table is added is the forward check's to charge
    scaled = before.double() - _scaled(x["x"], math.sqrt(D))
    if any(close_enough(a, want["pe"].double().expand_as(a)) for a in (added, scaled)):
        return
    own = table(got, "table", f"sinusoidal_encoding({max_len}, {D})", (max_len, D), strict=False)
    if close_enough(scaled, own.double().expand_as(scaled)):
        return
    assert_close(
        added.float(),
        own.expand_as(added),
        f"what {what} adds to x, compared with your sinusoidal_encoding({max_len}, {D})",
    )


def _forward_failure(got, key, what):
    if key + "/error" in got:
        raise Failure(
            MISTAKES["pe-slice-wrong-axis"], what=what, detail="it raised: " + got[key + "/error"]
        )


def _own_table(got, x, what):
    """(max_len, D): the table the student's module adds (its output on zeros, the probe's
    _own_table): the random table loaded into pe, or, for a module that keeps its table
    elsewhere (d2l's self.P), the student's own sinusoidal_encoding. Anything else is not
    the table: forward computes something of its own."""
    max_len, D = x["max_len"], x["d_model"]
    _forward_failure(got, "table", what)
    table = tensor(got, "table", what, shape=(max_len, max_len, D), dtype=torch.float32)[0]
    verdicts.assert_evidence(table, f"The table that {what} adds")
    loaded = x["pe"][0]
    own = got.get("encoding")
    if close_enough(table, loaded.double()):
        return table
    if type(own) is torch.Tensor and own.shape == table.shape and own.is_floating_point():
        if close_enough(table, own.double()):
            return table
    assert_close(table, loaded, f"the table that {what} adds (the buffer pe, as loaded)")
    return table


def _scaled(x, factor):
    """x in float64, times `factor`: √D where forward scales x as an embedding is scaled
    (the Transformer multiplies its embeddings by √d_model; this module adds pe only)."""
    return x.double() * factor


def _check_forward(got, key, x, pe, what):
    """out = x + pe[:, :T], pe (max_len, D) being the module's own table (_own_table)."""
    B, T, D = x.shape
    out = tensor(got, key, what, shape=(B, T, D), dtype=torch.float32)
    expected = x.double() + pe[:T].double()
    if not close_enough(out, expected) and close_enough(out, _scaled(x, math.sqrt(D)) + pe[:T]):
        raise Failure(MISTAKES["pe-scales-x"], what=what, D=D)
    if B == 1:  # pe[:, :x.size(0)] adds PE(0) everywhere instead of PE(0..T-1)
        if close_enough(out, x.double() + pe[:1].double()):
            raise Failure(
                MISTAKES["pe-slice-wrong-axis"],
                what=what,
                detail=f"you added pe[:, :{B}], the batch size",
            )
    assert_close(out, expected.float(), what)


def close_enough(a, b):
    return bool(torch.allclose(a.double(), b, **tolerance(torch.float32)))


@POSITIONAL_ENCODING.check("forward", inputs=probe.inputs_forward, probe=probe.probe_forward)
@no_reference
def verdict_forward(got, want, x):
    verdicts.assert_kept(got, "PositionalEncoding.forward")  # x left as it was (charged here only)
    table = _own_table(got, x, f"PositionalEncoding({x['d_model']}, max_len={x['max_len']})")
    for name, value in x["x"].items():
        B, T, D = value.shape
        what = f"PositionalEncoding({D}, max_len={x['max_len']}) on x of shape ({B}, {T}, {D})"
        _forward_failure(got, name, what)
        _check_forward(got, name, value, table, what)
    verdicts.assert_gradients(got, None, "PositionalEncoding.forward")  # from its output to x


@POSITIONAL_ENCODING.check(
    "dropout-eval", inputs=probe.inputs_dropout, probe=probe.probe_dropout_eval
)
@no_reference
def verdict_dropout_eval(got, want, x):
    shape = tuple(x["x"]["x"].shape)
    what = f"PositionalEncoding({x['d_model']}, max_len={x['max_len']}, dropout=0.5) in eval mode"
    _forward_failure(got, "out", what)
    out = tensor(got, "out", what, shape=shape, dtype=torch.float32)
    verdicts.assert_evidence(out, f"The output of {what}", [x["x"]["x"]])
    out2 = tensor(got, "out2", what, shape=shape, dtype=torch.float32)
    if not torch.equal(out, out2):
        raise Failure(MISTAKES["pe-dropout-in-eval"])
    _forward_failure(got, "no_dropout", what)
    same = tensor(got, "no_dropout", what, shape=shape)
    assert_close(out, same, what + ", compared with your module with dropout=0")


@POSITIONAL_ENCODING.check(
    "dropout-train", inputs=probe.inputs_dropout, probe=probe.probe_dropout_train
)
@no_reference
def verdict_dropout_train(got, want, x):
    value = x["x"]["x"]
    what = f"PositionalEncoding({x['d_model']}, max_len={x['max_len']}, dropout={probe.P_DROP})"
    _forward_failure(got, "out", what + " in training mode")
    out = tensor(got, "out", what + " in training mode", shape=value.shape, dtype=torch.float32)
    table = _own_table(got, x, f"PositionalEncoding({x['d_model']}, max_len={x['max_len']})")
    full = value.double() + table[: value.size(1)].double()
    finding = dropout_finding(out, full, probe.P_DROP)
    scaled = _scaled(value, math.sqrt(value.size(-1))) + table[: value.size(1)].double()
    if finding is None or dropout_finding(out, scaled, probe.P_DROP) is None:
        return  # (x scaled by √D first is the forward check's to charge)
    kind, detail = finding
    if kind == "ignored":
        raise Failure(MISTAKES["pe-dropout-ignored"], p=probe.P_DROP)
    raise Failure(MISTAKES["pe-dropout-misplaced"], why=detail)


@POSITIONAL_ENCODING.check("too-long", inputs=probe.inputs_too_long, probe=probe.probe_too_long)
@no_reference
def verdict_too_long(got, want, x):
    T, max_len = x["T"], x["max_len"]
    if probe.REFUSED_FULL in got:
        text = str(got[probe.REFUSED_FULL])
        raise Failure(MISTAKES["pe-refuses-max-len"], max_len=max_len, text=text)
    if got.get("got") != "ValueError":
        raise Failure(
            MISTAKES["pe-too-long-no-valueerror"], max_len=max_len, T=T, got=got.get("got")
        )
    text = str(got.get("text", ""))
    if not (re.search(rf"(?<!\d){T}(?!\d)", text) and re.search(rf"(?<!\d){max_len}(?!\d)", text)):
        raise Failure(
            MISTAKES["pe-error-unclear"], T=T, max_len=max_len, text=verdicts.excerpt(text)
        )
