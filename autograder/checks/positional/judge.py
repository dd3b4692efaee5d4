"""Judge side of positional.py's checks: misconceptions, models of wrong tables, verdicts."""

from __future__ import annotations

import math
import re

import torch

from ...core import (
    NOT_FINITE,
    WRONG_SHAPE,
    WRONG_VALUES,
    CheckList,
    Failure,
    Misconceptions,
    no_reference,
)
from ...tolerances import tolerance
from ...verdicts import ModelUnavailable, assert_close, dropout_finding, model, tensor
from . import probe

misconception = Misconceptions(__name__)  # this module's (core.Misconceptions)

CHECKS = CheckList("positional")

# --------------------------------------------------------------------------- misconceptions

SWAPPED = misconception(
    "pe-sin-cos-swapped",
    "{what}: sine and cosine are swapped: the even columns hold cosines and the odd ones sines.",
    (
        "The layout of the encoding is a convention (Vaswani et al., 2017): in each pair of "
        "columns the sine comes first, then the cosine. Weights trained with one layout read the "
        "other wrongly, although both carry the same information.",
        "Fill the even columns (a slice with step 2 from column 0) with the sines of the angles "
        "and the odd columns (step 2 from column 1) with the cosines.",
        "pe[:, 0::2] gets sin(p·ω_i) and pe[:, 1::2] gets cos(p·ω_i), not the other way round.",
    ),
)
EXPONENT_I = misconception(
    "pe-exponent-i-over-d",
    "{what}: your frequencies are 10000^(-i/D) with i the pair index; the exponent is 2i/D, so "
    "the frequencies fall from 1 to about 1/10000 across the columns, not to 1/100.",
    (
        "The frequencies must span a wide range, from 1 (the first pair, which changes at every "
        "position) down to 1/10000 (the last pair, which changes slowly), so that both near and "
        "far offsets can be told apart. With i/D in the exponent the range stops at 1/100.",
        "Build the exponent from the even column indices 0, 2, 4, ... themselves (torch.arange "
        "with a step of 2), divided by D.",
        "The exponent of pair i is 2i/D: torch.arange(0, d_model, 2) / d_model, not "
        "torch.arange(d_model // 2) / d_model.",
    ),
)
EXPONENT_4I = misconception(
    "pe-exponent-4i-over-d",
    "{what}: your frequencies are 10000^(-2·2i/D): the 2 was applied twice (once in the even "
    "column index 2i, once more in the exponent), so the frequencies fall to 1/10000 halfway "
    "across the columns and to about 1/10^8 at the end.",
    (
        "The exponent is 2i/D, where 2i is the even column index itself. Counting the 2 twice "
        "squeezes the whole range of frequencies into the first half of the columns and wastes "
        "the rest on frequencies near 0.",
        "If you count the even columns (arange with a step of 2), that index already is 2i: "
        "divide it by D and do not multiply it by 2 again.",
        "torch.arange(0, d_model, 2) / d_model already is the exponent 2i/D: drop the extra "
        "factor 2.",
    ),
)
TABLE_DTYPE = misconception(
    "pe-table-not-float32",
    "{what} has dtype {got}: the docstring promises a float32 table.",
    (
        "The docstring promises a float32 table, the dtype of the embeddings it is added to; a "
        "float64 table would turn every sum into float64.",
        "No input tensor gives you a dtype here: create the positions and the frequencies with "
        "dtype=torch.float32 (torch.zeros already defaults to float32), or compute in float64 and "
        "convert at the end.",
        "Your {what} is {got}: build it from torch.arange(..., dtype=torch.float32), or return "
        "the float64 table with .float().",
    ),
)
ODD_PLUS_ONE = misconception(
    "pe-odd-d-plus-one",
    "{what}: for odd D you built the table of D + 1 columns and cut the last one off, so your "
    "frequencies are 10000^(-2i/(D + 1)); the exponent divides by D itself.",
    (
        "The frequencies depend on D through 10000^(-2i/D): building D + 1 columns and cutting "
        "one off changes every frequency a little, not just the last column.",
        "Keep D in the exponent. For odd D there are ceil(D/2) sine columns and D // 2 cosine "
        "columns: slice the angles for the cosines instead of widening the table.",
        "ω_i = 10000^(-2i/D) for i = 0 .. ceil(D/2) - 1; the sines take all the angles, the "
        "cosines only the first D // 2 of them (angles[:, :D // 2]).",
    ),
)
PAIR_FREQUENCY = misconception(
    "pe-pair-frequency",
    "{what}: your cosine column 2i+1 uses its own exponent (2i+1)/D; a sine and its cosine must "
    "share one frequency ω_i = 10000^(-2i/D).",
    (
        "Each (sin, cos) pair is a point on a circle that turns at one speed ω_i. That shared "
        "frequency is what makes PE(p + k) a fixed rotation of PE(p), so that an offset looks the "
        "same wherever it happens.",
        "Compute one frequency per pair, from the even column indices (arange with a step of 2), "
        "and use the same angles for column 2i and column 2i + 1.",
        "One table of angles p·ω_i, shaped (max_len, ceil(D/2)): its sines go to the columns 2i "
        "and its cosines to the columns 2i + 1, with no separate exponent (2i+1)/D.",
    ),
)
FROM_ONE = misconception(
    "pe-positions-from-one",
    "{what}: your positions start at 1; the first token has position 0 (row 0 is sin 0 = 0, cos 0 "
    "= 1).",
    (
        "Positions count from 0, like every index in the kit: the first token has position 0, and "
        "its encoding is sin 0 = 0, cos 0 = 1 in every pair.",
        "Build the positions with torch.arange from 0, max_len of them: 0 .. max_len - 1.",
        "torch.arange(max_len), not torch.arange(1, max_len + 1).",
    ),
)
HALVES = misconception(
    "pe-halves-layout",
    "{what}: you put all the sines in the first half of the columns and all the cosines in the "
    "second half; this kit interleaves them (sin in column 2i, cos in column 2i+1).",
    (
        "Both layouts (interleaved, or all the sines then all the cosines) exist in the "
        "literature and carry the same information; but a model's weights expect one of them, and "
        "this kit, like the original paper, interleaves.",
        "Write the sines into the even columns and the cosines into the odd ones (slices with a "
        "step of 2), not into the first and second halves.",
        "pe[:, 0::2] for the sines and pe[:, 1::2] for the cosines, not pe[:, :D // 2] and pe[:, "
        "D // 2:].",
    ),
)
NOT_RELATIVE = misconception(
    "pe-not-relative",
    "PE(p + {k}) is not the rotation of PE(p) by the angle {k}·ω_i in each (sin, cos) pair "
    "(largest error {err:.3g} at position {p}, column {col}).",
    (
        "The point of sinusoids is that moving k positions is the same rotation in every pair, "
        "wherever you start, so attention can learn relative offsets. That holds only when sin "
        "and cos are paired on one frequency.",
        "Check the three ingredients: sin in column 2i, cos in column 2i + 1, and one frequency "
        "ω_i = 10000^(-2i/D) shared by the two columns of a pair.",
        "Compare the rows {p} and {p} + {k} of your table at column {col}: sin(ω(p+k)) and "
        "cos(ω(p+k)) must follow from sin(ωp) and cos(ωp) by the angle-sum identities, with the "
        "same ω in both columns.",
    ),
)
IS_PARAMETER = misconception(
    "pe-is-parameter",
    "pe is an nn.Parameter: the optimizer would train it and it receives gradients; the "
    "sinusoidal encoding is a fixed table.",
    (
        "The sinusoidal encoding is a fixed function of the position, not something to learn. A "
        "parameter is handed to the optimizer, receives gradients and drifts away from the "
        "sinusoids.",
        "Store the table with self.register_buffer: a buffer moves with .to(device) and is saved "
        "in the state_dict, but it is not in model.parameters().",
        "register_buffer with the name 'pe' and the (1, max_len, D) table, with no "
        "nn.Parameter(...) around it.",
    ),
)
NOT_BUFFER = misconception(
    "pe-not-in-state-dict",
    "pe is not in the module's state_dict ({why}): a saved and reloaded model would lose it, and "
    ".to(device) {moves} it.",
    (
        "Everything a module needs to reproduce its output should travel with it: saved in the "
        "state_dict and moved by .to(device). A plain tensor attribute does neither, and a buffer "
        "with persistent=False is not saved.",
        "Use self.register_buffer with the default persistent=True; not a plain attribute, and "
        "not persistent=False.",
        "self.register_buffer('pe', ...) with the (1, max_len, D) table, and read it as self.pe "
        "in forward, so that a loaded state_dict is what gets added.",
    ),
)
SLICE_AXIS = misconception(
    "pe-slice-wrong-axis",
    "{what}: x + pe did not use the first T positions ({detail}). pe has shape (1, max_len, D): "
    "the positions are axis 1.",
    (
        "pe holds one row per position, along axis 1 of a (1, max_len, D) tensor. Adding the "
        "encoding means adding the rows of the first T positions to every sequence; the batch "
        "size has nothing to do with it.",
        "Take T from the second axis of x (x.size(1)) and slice pe along its position axis, axis "
        "1, keeping the leading 1 so that it broadcasts over the batch.",
        "self.pe[:, :T] with T = x.size(1), shape (1, T, D); not self.pe[:T], and not x.size(0).",
    ),
)
TOO_LONG = misconception(
    "pe-too-long-no-valueerror",
    "PositionalEncoding(max_len={max_len}) given T = {T} positions should raise ValueError, but "
    "it {got}.",
    (
        "A table of max_len rows cannot encode more positions. Slicing past its end silently "
        "returns fewer rows, and the addition then fails far from the cause, or broadcasts into "
        "nonsense: a clear error at once is kinder.",
        "At the top of forward, compare T (x.size(1)) with the length of the table "
        "(self.pe.size(1)) and raise ValueError when T is larger, with a message that gives both "
        "numbers.",
        "Here T = {T} > max_len = {max_len}: before slicing, raise ValueError with a message such "
        "as f'... T = {{T}} ... max_len = {{max_len}} ...'.",
    ),
)
UNCLEAR_ERROR = misconception(
    "pe-error-unclear",
    "Your ValueError for T = {T} > max_len = {max_len} says {text!r}: it should give both "
    "numbers, so the reader sees what was too long.",
    (
        "An error message is written for the person who hits it: it should say what was too long "
        "and what the limit is, so that they know what to change.",
        "Put both numbers in the ValueError's message: the sequence length T and max_len.",
        "Your message was {text!r}. For example: f'sequence length {{T}} is longer than max_len = "
        "{{max_len}}'.",
    ),
)
NOT_ROTATION = misconception(
    "pe-pair-not-rotation",
    "In your table, the (sin, cos) pair of columns {cols} does not turn by a fixed angle from one "
    "position to the next: {why}.",
    (
        "Each (sin, cos) pair is a point on the unit circle that turns by the same angle at every "
        "step of position. If the pair's length changes, or its step varies, the relative-offset "
        "property is lost.",
        "Put the sin and the cos of one and the same angle p·ω_i in the two columns of pair i, "
        "with one ω_i per pair and positions counted from 0 in steps of 1.",
        "Columns {cols} must hold (sin(p·ω_i), cos(p·ω_i)) with the same ω_i: the pair then has "
        "length 1 and turns by k·ω_i between positions p and p + k, whatever p is.",
    ),
)
DROPOUT_IN_EVAL = misconception(
    "pe-dropout-in-eval",
    "In eval mode your PositionalEncoding still drops values: the output changes from call to "
    "call.",
    (
        "Dropout is for training only; in eval mode the encoding must be deterministic, the same "
        "input giving the same output.",
        "Use the given self.dropout (nn.Dropout knows train() from eval()); F.dropout(x, p) "
        "defaults to training=True.",
        "Apply self.dropout to the sum x + PE; not F.dropout(..., p), and not a random mask of "
        "your own.",
    ),
)
PE_DROPOUT_IGNORED = misconception(
    "pe-dropout-ignored",
    "In training mode with dropout={p}, your PositionalEncoding dropped nothing: every value is x "
    "+ PE.",
    (
        "As in the original Transformer, dropout regularises the sum of the embeddings and the "
        "encoding during training: with dropout={p}, some values must become 0.",
        "Pass the sum through self.dropout, the nn.Dropout made in __init__: it zeroes values in "
        "training mode and is the identity in eval mode.",
        "forward returns self.dropout applied to x plus the first T rows of self.pe, not the sum "
        "alone.",
    ),
)
PE_DROPOUT_MISPLACED = misconception(
    "pe-dropout-misplaced",
    "In training mode your output is not dropout(x + PE): {why}.",
    (
        "Dropout acts on what the module outputs, the sum of each embedding and its position, so "
        "each value of the sum is either 0 or scaled by 1/(1 - p). Dropping only x or only PE, or "
        "dropping before adding, is a different computation.",
        "Add first, then apply self.dropout once, to the sum.",
        "Compute x plus the first T rows of self.pe, then apply self.dropout to that sum: each "
        "value becomes 0 or (x + PE) / (1 - p).",
    ),
)
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
    odd = [(ODD_PLUS_ONE, lambda: _table(positions, D + 1)[:, :D], {})] if D % 2 else []
    return odd + [
        (SWAPPED, lambda: _table(positions, D, swap=True), {}),
        (EXPONENT_I, lambda: _table(positions, D, exponent="i"), {}),
        (EXPONENT_4I, lambda: _table(positions, D, exponent="4i"), {}),
        (PAIR_FREQUENCY, lambda: _table(positions, D, exponent="j"), {}),
        (FROM_ONE, lambda: _table(positions, D, start=1), {}),
        (HALVES, lambda: _table(positions, D, layout="halves"), {}),
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


def assert_table(got, want, positions, what, candidates=(), scale=1.0, charged=()):
    """got ≈ want row by row, with a tolerance that grows with each row's position. A table
    that matches one of the `charged` tables (the outputs of mistakes another check charges,
    replayed with the reference) passes."""
    ratio = _within(got, want, positions, scale)
    if bool((ratio <= 1).all()):
        return
    if any(bool((_within(got, t, positions, scale) <= 1).all()) for t in charged):
        return
    for mistake, output, details in candidates:
        if _matches(got, output, positions, scale):
            raise Failure(mistake, what=what, **details)
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
            raise Failure(TABLE_DTYPE, what=what, got=value.dtype)
        value = value.float()
    return value


def _named(positions, D, first):
    """The mistakes a table check names. Those that every D shows are named (and charged) by
    the "encoding" check (even D) alone; the later table checks name only their own, and let
    the others pass (_charged)."""
    found = _mistakes(positions, D)
    return found if first else [c for c in found if c[0] is ODD_PLUS_ONE]


def _charged(positions, D):
    """{mistake id: its table}: the mistakes that every D shows, charged by "encoding"."""
    return {m.id: output() for m, output, _ in _mistakes(positions, D) if m is not ODD_PLUS_ONE}


def _replay_table(name, positions, D, first):
    """The float64 closed form at `positions` ("<name>/exact") and, for the checks after
    "encoding", the tables of the mistakes it charges ("<name>/<mistake id>")."""
    found = {f"{name}/exact": _table(positions, D)}
    if not first:
        found.update({f"{name}/{k}": v for k, v in _charged(positions, D).items()})
    return found


def _replayed(want, name, first):
    """(the exact table, the charged tables) that _replay_table kept with the reference."""
    exact = f"replay/{name}/exact"
    charged = [v for k, v in want.items() if k.startswith(f"replay/{name}/") and k != exact]
    return want[exact], () if first else charged


def _replays_even(x):
    return _replay_table("pe", range(x["max_len"]), x["d_model"], first=True)


def _replays_odd(x):
    found = {}
    for name, case in x.items():
        found.update(_replay_table(name, range(case["max_len"]), case["d_model"], first=False))
    return found


def _replays_far(x):
    return _replay_table("rows", x["positions"], x["d_model"], first=False)


def _compare_table(got, want, key, max_len, D, first):
    what = f"sinusoidal_encoding({max_len}, {D})"
    pe = table(got, key, what, (max_len, D), strict=first)
    exact, charged = _replayed(want, key, first)
    # Two float32 computations of the same closed form: each may be off by the allowance.
    assert_table(pe, exact, range(max_len), what, _named(range(max_len), D, first), 2.0, charged)


# --------------------------------------------------------------------------- sinusoidal_encoding


SINUSOIDAL_ENCODING = CHECKS.exercise("sinusoidal_encoding", probe=probe.probe_table)


@SINUSOIDAL_ENCODING.check(
    "encoding",
    "sinusoidal_encoding matches the reference (even D)",
    2,
    inputs=probe.inputs_even,
    replays=_replays_even,
)
def verdict_even(got, want, x):
    _compare_table(got, want, "pe", x["max_len"], x["d_model"], first=True)


@SINUSOIDAL_ENCODING.check(
    "odd-d",
    "sinusoidal_encoding matches the reference for odd D (and D = 1)",
    1,
    inputs=probe.inputs_odd,
    probe=probe.probe_odd,
    replays=_replays_odd,
)
def verdict_odd(got, want, x):
    for name, case in x.items():
        _compare_table(got, want, name, case["max_len"], case["d_model"], first=False)


@SINUSOIDAL_ENCODING.check(
    "closed-form",
    "sinusoidal_encoding at far positions (up to max_len - 1 ≈ 5000) against the exact formula",
    1,
    inputs=probe.inputs_far,
    probe=probe.probe_far,
    replays=_replays_far,
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
    assert_table(rows, exact, positions, what, _named(positions, D, False), 1.0, charged)


@SINUSOIDAL_ENCODING.check(
    "relative",
    "PE(p + k) is a fixed rotation of PE(p) in every (sin, cos) pair, for every p",
    1,
    inputs=probe.inputs_relative,
)
@no_reference
def verdict_relative(got, want, x):
    """The property alone, on the student's own table: each pair (columns 2i, 2i + 1) is a
    unit vector that turns by one angle per offset k, the same at every position p. Which
    frequencies the pairs use is graded by the reference checks; a table that does not turn
    at all (constant, zeros) fails here, as the first pair must turn by ±1 rad per step."""
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
    if not math.isclose(float(step[0]), 1.0, abs_tol=1e-3):
        why = f"it turns by {float(step[0]):.4g} rad per position; the first pair's ω_0 is 1"
        _fail_pair(pe, n, D, 0, why)


def _fail_pair(pe, n, D, pair, why):
    # The classic layouts that break the rotation are named as themselves.
    for mistake, kw in ((PAIR_FREQUENCY, {"exponent": "j"}), (HALVES, {"layout": "halves"})):
        if _matches(pe, lambda kw=kw: _table(range(n), D, **kw), range(n), 3.0):
            raise Failure(mistake, what=f"sinusoidal_encoding({n}, {D})")
    raise Failure(NOT_ROTATION, cols=f"({2 * pair}, {2 * pair + 1})", why=why)


# --------------------------------------------------------------------------- PositionalEncoding


POSITIONAL_ENCODING = CHECKS.exercise("PositionalEncoding", probe=probe.probe_buffer)


@POSITIONAL_ENCODING.check(
    "buffer",
    "pe is a buffer of shape (1, max_len, D) holding the table: in the state_dict, not a parameter",
    2,
    inputs=probe.inputs_buffer,
)
def verdict_buffer(got, want, x):
    """Judged from returned outputs that need the real module to produce: a training step
    leaves forward unchanged (nothing trainable), and a state_dict holding a random pe, loaded
    strictly, is what forward adds. The flags the probe reports only choose the wording."""
    max_len, D = x["max_len"], x["d_model"]
    what = f"PositionalEncoding({D}, max_len={max_len})"
    before = tensor(got, "before_step", what, shape=x["x"].shape)
    after = tensor(got, "after_step", what + " after an optimizer step", shape=x["x"].shape)
    if got.get("is_parameter") or got.get("requires_grad") or not torch.equal(before, after):
        raise Failure(IS_PARAMETER)
    why = "registered with persistent=False" if got.get("is_buffer") else "a plain attribute"
    moves = "moves" if got.get("is_buffer") else "does not move"
    if not got.get("in_state_dict") or "load_error" in got:
        raise Failure(NOT_BUFFER, why=why, moves=moves)
    loaded = tensor(got, "loaded_out", what + " after load_state_dict", shape=x["x"].shape)
    if not close_enough(loaded, x["x"].double() + x["state"].double()):
        why = "forward does not add the pe that load_state_dict loaded"
        raise Failure(NOT_BUFFER, why=why, moves="may not move")
    pe = table(got, "pe", "the buffer pe", (1, max_len, D))
    # The buffer holds the table: the reference's, or the student's own (whose values the
    # checks above grade, so a wrong table is not charged again here).
    if bool((_within(pe[0], want["pe"][0], range(max_len), 2.0) <= 1).all()):
        return
    own = table(got, "table", f"sinusoidal_encoding({max_len}, {D})", (max_len, D), strict=False)
    assert_close(
        pe[0], own, f"the buffer pe, compared with your sinusoidal_encoding({max_len}, {D})"
    )


def _forward_failure(got, key, what):
    if key + "/error" in got:
        raise Failure(SLICE_AXIS, what=what, detail="it raised: " + got[key + "/error"])


def _check_forward(got, key, x, pe, what):
    """out = x + pe[:, :T], pe being the random table the probe loaded into the buffer."""
    B, T, D = x.shape
    out = tensor(got, key, what, shape=(B, T, D), dtype=torch.float32)
    expected = x.double() + pe[0, :T].double()
    if B == 1:  # pe[:, :x.size(0)] adds PE(0) everywhere instead of PE(0..T-1)
        if close_enough(out, x.double() + pe[0, :1].double()):
            raise Failure(SLICE_AXIS, what=what, detail=f"you added pe[:, :{B}], the batch size")
    assert_close(out, expected.float(), what)


def close_enough(a, b):
    return bool(torch.allclose(a.double(), b, **tolerance(torch.float32)))


@POSITIONAL_ENCODING.check(
    "forward",
    "forward adds the first T positions of pe to every sequence of the batch",
    2,
    inputs=probe.inputs_forward,
    probe=probe.probe_forward,
)
@no_reference
def verdict_forward(got, want, x):
    for name, value in x["x"].items():
        B, T, D = value.shape
        what = f"PositionalEncoding({D}, max_len={x['max_len']}) on x of shape ({B}, {T}, {D})"
        _forward_failure(got, name, what)
        _check_forward(got, name, value, x["pe"], what)


@POSITIONAL_ENCODING.check(
    "dropout-eval",
    "dropout does nothing in eval mode: deterministic, equal to dropout=0",
    1,
    inputs=probe.inputs_dropout,
    probe=probe.probe_dropout_eval,
)
@no_reference
def verdict_dropout_eval(got, want, x):
    shape = tuple(x["x"]["x"].shape)
    what = f"PositionalEncoding({x['d_model']}, max_len={x['max_len']}, dropout=0.5) in eval mode"
    _forward_failure(got, "out", what)
    out = tensor(got, "out", what, shape=shape, dtype=torch.float32)
    out2 = tensor(got, "out2", what, shape=shape, dtype=torch.float32)
    if not torch.equal(out, out2):
        raise Failure(DROPOUT_IN_EVAL)
    _forward_failure(got, "no_dropout", what)
    same = tensor(got, "no_dropout", what, shape=shape)
    assert_close(out, same, what + ", compared with your module with dropout=0")


@POSITIONAL_ENCODING.check(
    "dropout-train",
    "in training mode dropout acts on x + PE: each value 0 or (x + PE) / (1 - p), p of them 0",
    1,
    inputs=probe.inputs_dropout,
    probe=probe.probe_dropout_train,
)
@no_reference
def verdict_dropout_train(got, want, x):
    value = x["x"]["x"]
    what = f"PositionalEncoding({x['d_model']}, max_len={x['max_len']}, dropout={probe.P_DROP})"
    _forward_failure(got, "out", what + " in training mode")
    out = tensor(got, "out", what + " in training mode", shape=value.shape, dtype=torch.float32)
    full = value.double() + x["pe"][0, : value.size(1)].double()
    finding = dropout_finding(out, full, probe.P_DROP)
    if finding is None:
        return
    kind, detail = finding
    if kind == "ignored":
        raise Failure(PE_DROPOUT_IGNORED, p=probe.P_DROP)
    raise Failure(PE_DROPOUT_MISPLACED, why=detail)


@POSITIONAL_ENCODING.check(
    "too-long",
    "T > max_len raises ValueError giving T and max_len",
    1,
    inputs=probe.inputs_too_long,
    probe=probe.probe_too_long,
)
@no_reference
def verdict_too_long(got, want, x):
    T, max_len = x["T"], x["max_len"]
    if got.get("got") != "ValueError":
        raise Failure(TOO_LONG, max_len=max_len, T=T, got=got.get("got"))
    text = str(got.get("text", ""))
    if not (re.search(rf"(?<!\d){T}(?!\d)", text) and re.search(rf"(?<!\d){max_len}(?!\d)", text)):
        raise Failure(UNCLEAR_ERROR, T=T, max_len=max_len, text=text)
