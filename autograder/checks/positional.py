"""Checks for positional.py: sinusoidal_encoding and PositionalEncoding."""

from __future__ import annotations

import torch

from ..core import NOT_FINITE, WRONG_SHAPE, WRONG_VALUES, Check, Failure, misconception
from ..tolerances import tolerance
from ..trusted.positional import sinusoidal_encoding as trusted_table
from ..verdicts import assert_close, tensor
from ._common import randn

MODULE = "positional"
ORDER = 40

# --------------------------------------------------------------------------- misconceptions

SWAPPED = misconception(
    "pe-sin-cos-swapped",
    "{what}: sine and cosine are swapped: the even columns hold cosines and the odd ones sines.",
    "Even columns 2i get sin(p·ω_i), odd columns 2i+1 get cos(p·ω_i): pe[:, 0::2] = sin, "
    "pe[:, 1::2] = cos.",
)
EXPONENT_I = misconception(
    "pe-exponent-i-over-d",
    "{what}: your frequencies are 10000^(-i/D) with i the pair index; the exponent is 2i/D, "
    "so the frequencies fall from 1 to about 1/10000 across the columns, not to 1/100.",
    "Use the even column index 2i itself in the exponent: torch.arange(0, d_model, 2) / "
    "d_model, not torch.arange(d_model // 2) / d_model.",
)
PAIR_FREQUENCY = misconception(
    "pe-pair-frequency",
    "{what}: your cosine column 2i+1 uses its own exponent (2i+1)/D; a sine and its cosine "
    "must share one frequency ω_i = 10000^(-2i/D).",
    "Compute one frequency per pair (torch.arange(0, d_model, 2)) and use it for both "
    "columns 2i and 2i+1: that shared frequency is what makes PE(p+k) a rotation of PE(p).",
)
FROM_ONE = misconception(
    "pe-positions-from-one",
    "{what}: your positions start at 1; the first token has position 0 (row 0 is "
    "sin 0 = 0, cos 0 = 1).",
    "torch.arange(max_len), not torch.arange(1, max_len + 1).",
)
HALVES = misconception(
    "pe-halves-layout",
    "{what}: you put all the sines in the first half of the columns and all the cosines in "
    "the second half; this kit interleaves them (sin in column 2i, cos in column 2i+1).",
    "Both layouts exist in the literature, but the weights you will load expect the "
    "interleaved one: pe[:, 0::2] = sin, pe[:, 1::2] = cos.",
)
NOT_RELATIVE = misconception(
    "pe-not-relative",
    "PE(p + {k}) is not the rotation of PE(p) by the angle {k}·ω_i in each (sin, cos) pair "
    "(largest error {err:.3g} at position {p}, column {col}).",
    "With sin in column 2i, cos in column 2i+1 and one shared ω_i = 10000^(-2i/D) per pair, "
    "sin(ω(p+k)) and cos(ω(p+k)) follow from sin(ωp) and cos(ωp) by the angle-sum identities.",
)
IS_PARAMETER = misconception(
    "pe-is-parameter",
    "pe is an nn.Parameter: the optimizer would train it and it receives gradients; the "
    "sinusoidal encoding is a fixed table.",
    "self.register_buffer('pe', table): a buffer moves with .to(device) and is saved in the "
    "state_dict, but it is not in model.parameters().",
)
NOT_BUFFER = misconception(
    "pe-not-in-state-dict",
    "pe is not in the module's state_dict ({why}): a saved and reloaded model would lose it, "
    "and .to(device) {moves} it.",
    "self.register_buffer('pe', table) (persistent, the default), not a plain attribute and "
    "not persistent=False.",
)
SLICE_AXIS = misconception(
    "pe-slice-wrong-axis",
    "{what}: x + pe did not use the first T positions ({detail}). pe has shape "
    "(1, max_len, D): the positions are axis 1.",
    "Slice the positions, not the batch: self.pe[:, :T] with T = x.size(1) (not x.size(0), "
    "and not self.pe[:T]).",
)
TOO_LONG = misconception(
    "pe-too-long-no-valueerror",
    "PositionalEncoding(max_len={max_len}) given T = {T} positions should raise ValueError, "
    "but it {got}.",
    "Check T against self.pe.size(1) first and raise ValueError(f'... T = {{T}} ... max_len "
    "= {{max_len}} ...'); slicing past the end silently returns fewer rows.",
)
UNCLEAR_ERROR = misconception(
    "pe-error-unclear",
    "Your ValueError for T = {T} > max_len = {max_len} says {text!r}: it should give both "
    "numbers, so the reader sees what was too long.",
    "For example: ValueError(f'sequence length {{T}} is longer than max_len = {{max_len}}').",
)
DROPOUT_IN_EVAL = misconception(
    "pe-dropout-in-eval",
    "In eval mode your PositionalEncoding still drops values: the output changes from call "
    "to call.",
    "Use the given self.dropout (nn.Dropout knows train() from eval()); F.dropout(x, p) "
    "defaults to training=True.",
)

# --------------------------------------------------------------------------- trusted models

# float32 rounds the angle p·ω with a relative error of a few units in the last place, so the
# error of sin/cos grows with the position p (up to ~1e-4 at p = 5000, measured). The standard
# tolerance holds only near p = 0; this one adds 4 float32 epsilons per unit of position.
SLOPE = 4 * torch.finfo(torch.float32).eps


def _table(positions, D, *, swap=False, exponent="2i", start=0, layout="interleaved"):
    """The table that a given mistake produces, in float64, at the given positions."""
    p = torch.as_tensor(positions, dtype=torch.float64)[:, None] + start
    j = torch.arange(D)
    if layout == "halves":
        half = (D + 1) // 2
        pair, is_sin = torch.where(j < half, j, j - half), j < half
    else:
        pair, is_sin = j // 2, j % 2 == 0
    power = {"2i": 2 * pair, "i": pair, "j": j}[exponent].double() / D
    angles = p * 10000.0**-power
    sin, cos = angles.sin(), angles.cos()
    return torch.where(is_sin, cos, sin) if swap else torch.where(is_sin, sin, cos)


def _mistakes(positions, D):
    return [
        (SWAPPED, lambda: _table(positions, D, swap=True), {}),
        (EXPONENT_I, lambda: _table(positions, D, exponent="i"), {}),
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


def assert_table(got, want, positions, what, candidates=(), scale=1.0):
    """got ≈ want row by row, with a tolerance that grows with each row's position."""
    ratio = _within(got, want, positions, scale)
    if bool((ratio <= 1).all()):
        return
    for mistake, output, details in candidates:
        if bool((_within(got, output(), positions, scale) <= 1).all()):
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


# --------------------------------------------------------------------------- sinusoidal_encoding

TABLES = {"small": (50, 16), "odd": (50, 7), "one-column": (4, 1)}
FAR_POSITIONS = (0, 1, 2, 63, 500, 2047, 4999)


def inputs_none(gen):
    return {}


def probe_tables(mod, x):
    return {name: mod.sinusoidal_encoding(n, D) for name, (n, D) in TABLES.items()}


def verdict_tables(got, want, x):
    for name, (n, D) in TABLES.items():
        what = f"sinusoidal_encoding({n}, {D})"
        table = tensor(got, name, what, shape=(n, D), dtype=torch.float32)
        # Two float32 computations of the same closed form: each may be off by the allowance.
        assert_table(table, want[name], range(n), what, _mistakes(range(n), D), scale=2.0)


def probe_far(mod, x):
    table = mod.sinusoidal_encoding(5000, 32)
    if type(table) is torch.Tensor and tuple(table.shape) == (5000, 32):
        return {"rows": table[list(FAR_POSITIONS)]}
    return {"rows": table}  # the wrong type or shape: the verdict says which


def verdict_far(got, want, x):
    what = "sinusoidal_encoding(5000, 32)"
    rows = tensor(got, "rows", what)
    if tuple(rows.shape) != (len(FAR_POSITIONS), 32):
        raise Failure(WRONG_SHAPE, what=what, got=tuple(rows.shape), expected=(5000, 32))
    rows = tensor(got, "rows", what, dtype=torch.float32)
    what += " at positions " + ", ".join(map(str, FAR_POSITIONS))
    exact = _table(FAR_POSITIONS, 32)  # the float64 closed form
    assert_table(rows, exact, FAR_POSITIONS, what, _mistakes(FAR_POSITIONS, 32))


RELATIVE = {"n": 200, "D": 12, "offsets": (1, 5, 37)}


def probe_relative(mod, x):
    return {"pe": mod.sinusoidal_encoding(RELATIVE["n"], RELATIVE["D"])}


def verdict_relative(got, want, x):
    n, D = RELATIVE["n"], RELATIVE["D"]
    pe = tensor(got, "pe", f"sinusoidal_encoding({n}, {D})", shape=(n, D), dtype=torch.float32)
    candidates = _mistakes(range(n), D)[:1] + _mistakes(range(n), D)[2:3]  # the two that break it
    assert_table(pe, _table(range(n), D), range(n), f"sinusoidal_encoding({n}, {D})", candidates)
    pe = pe.double()
    omega = 10000.0 ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)  # (D/2,)
    sin, cos = pe[:, 0::2], pe[:, 1::2]
    for k in RELATIVE["offsets"]:
        c, s = torch.cos(k * omega), torch.sin(k * omega)
        # sin(a + b) = sin a cos b + cos a sin b;  cos(a + b) = cos a cos b - sin a sin b
        rotated = torch.empty(n - k, D, dtype=torch.float64)
        rotated[:, 0::2] = sin[:-k] * c + cos[:-k] * s
        rotated[:, 1::2] = cos[:-k] * c - sin[:-k] * s
        ratio = _within(pe[k:], rotated, range(k, n), scale=3.0)
        if not bool((ratio <= 1).all()):
            flat = int(torch.nan_to_num(ratio, nan=float("inf")).argmax())
            row, col = divmod(flat, D)
            err = float((pe[k:] - rotated).abs()[row, col])
            raise Failure(NOT_RELATIVE, k=k, err=err, p=row, col=col)


# --------------------------------------------------------------------------- PositionalEncoding


def probe_buffer(mod, x):
    module = mod.PositionalEncoding(16, max_len=40)
    state = module.state_dict()
    pe = getattr(module, "pe", None)
    params = dict(module.named_parameters())
    got = {
        "in_state_dict": "pe" in state,
        "is_parameter": "pe" in params or isinstance(pe, torch.nn.Parameter),
        "is_buffer": "pe" in dict(module.named_buffers()),
        "requires_grad": bool(getattr(pe, "requires_grad", False)),
    }
    if type(pe) is torch.Tensor or isinstance(pe, torch.nn.Parameter):
        got["pe"] = pe.detach().clone().as_subclass(torch.Tensor)
    return got


def verdict_buffer(got, want, x):
    if got.get("is_parameter") or got.get("requires_grad"):
        raise Failure(IS_PARAMETER)
    if not got.get("in_state_dict"):
        why = "registered with persistent=False" if got.get("is_buffer") else "a plain attribute"
        moves = "moves" if got.get("is_buffer") else "does not move"
        raise Failure(NOT_BUFFER, why=why, moves=moves)
    pe = tensor(got, "pe", "the buffer pe", shape=(1, 40, 16), dtype=torch.float32)
    assert_table(pe[0], want["pe"][0], range(40), "the buffer pe", _mistakes(range(40), 16), 2.0)


FORWARD_CASES = {"batch2": (2, 10), "batch1": (1, 10), "full": (3, 40)}


def inputs_forward(gen):
    return {name: randn(gen, B, T, 16) for name, (B, T) in FORWARD_CASES.items()}


def _module_with_trusted_table(mod, d_model, max_len, dropout=0.0):
    """The student's module, eval mode, holding the trusted table when its `pe` can take it
    (so a mistake in the table is graded once, in the checks above)."""
    module = mod.PositionalEncoding(d_model, max_len=max_len, dropout=dropout).eval()
    pe = getattr(module, "pe", None)
    if isinstance(pe, torch.Tensor) and tuple(pe.shape) == (1, max_len, d_model):
        with torch.no_grad():
            pe.copy_(trusted_table(max_len, d_model)[None])
    return module


def _call(module, value, got, key):
    """got[key] = module(value), or got[key + '/error'] when x + pe did not broadcast."""
    try:
        with torch.no_grad():
            got[key] = module(value)
    except RuntimeError as e:  # a finding, not a crash: the verdict names it
        if "size of tensor" not in str(e):
            raise
        got[key + "/error"] = str(e).splitlines()[0]


def probe_forward(mod, x):
    module = _module_with_trusted_table(mod, 16, 40)
    got = {}
    for name, value in x.items():
        _call(module, value, got, name)
    return got


def _check_forward(got, key, x, B, T, what):
    out = tensor(got, key, what, shape=(B, T, 16), dtype=torch.float32)
    table = trusted_table(40, 16).double()
    ok = (x.double() + table[:T]).reshape(-1, 16)
    rows = [0] * (B * T)  # positions below 40: the standard tolerance
    if B == 1:  # pe[:, :x.size(0)] adds PE(0) everywhere instead of PE(0..T-1)
        wrong_axis = (x.double() + table[:1]).reshape(-1, 16)
        if bool((_within(out.reshape(-1, 16), wrong_axis, rows) <= 1).all()):
            raise Failure(SLICE_AXIS, what=what, detail=f"you added pe[:, :{B}], the batch size")
    assert_table(out.reshape(-1, 16), ok, rows, what, scale=0.0)


def verdict_forward(got, want, x):
    for name, (B, T) in FORWARD_CASES.items():
        what = f"PositionalEncoding(16, max_len=40) on x of shape ({B}, {T}, 16)"
        if name + "/error" in got:
            raise Failure(SLICE_AXIS, what=what, detail="it raised: " + got[name + "/error"])
        _check_forward(got, name, x[name], B, T, what)


def inputs_dropout(gen):
    # B = T: slicing pe by the batch size happens to be right here, so that mistake costs
    # points in the forward check only.
    return {"x": randn(gen, 4, 4, 16)}


def probe_dropout_eval(mod, x):
    module = _module_with_trusted_table(mod, 16, 40, dropout=0.5)
    got = {}
    for key, seed in (("out", 1), ("out2", 2)):
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            _call(module, x["x"], got, key)
    # The same module without dropout: a bug in forward costs points once, above.
    _call(_module_with_trusted_table(mod, 16, 40), x["x"], got, "no_dropout")
    return got


def verdict_dropout_eval(got, want, x):
    what = "PositionalEncoding(16, max_len=40, dropout=0.5) in eval mode"
    if "out/error" in got:
        raise Failure(SLICE_AXIS, what=what, detail="it raised: " + got["out/error"])
    out = tensor(got, "out", what, shape=(4, 4, 16), dtype=torch.float32)
    out2 = tensor(got, "out2", what, shape=(4, 4, 16), dtype=torch.float32)
    if not torch.equal(out, out2):
        raise Failure(DROPOUT_IN_EVAL)
    same = tensor(got, "no_dropout", what, shape=(4, 4, 16))
    assert_close(out, same, what + ", compared with your module with dropout=0")


def probe_too_long(mod, x):
    module = mod.PositionalEncoding(8, max_len=12).eval()
    try:
        module(torch.zeros(2, 13, 8))
        return {"got": "returned a tensor"}
    except ValueError as e:
        return {"got": "ValueError", "text": str(e)}
    except NotImplementedError:
        raise
    except Exception as e:  # the wrong exception is a finding, not a crash
        return {"got": f"raised {type(e).__name__}"}


def verdict_too_long(got, want, x):
    if got.get("got") != "ValueError":
        raise Failure(TOO_LONG, max_len=12, T=13, got=got.get("got"))
    text = str(got.get("text", ""))
    if "12" not in text or "13" not in text:
        raise Failure(UNCLEAR_ERROR, T=13, max_len=12, text=text)


CHECKS = [
    Check(
        MODULE,
        "encoding",
        "sinusoidal_encoding matches the reference (D = 16, odd D = 7, D = 1)",
        3,
        inputs_none,
        probe_tables,
        verdict_tables,
        "sinusoidal_encoding",
    ),
    Check(
        MODULE,
        "closed-form",
        "sinusoidal_encoding at far positions (up to 4999) against the exact formula",
        1,
        inputs_none,
        probe_far,
        verdict_far,
        "sinusoidal_encoding",
    ),
    Check(
        MODULE,
        "relative",
        "PE(p + k) is a fixed rotation of PE(p) in every (sin, cos) pair, for every p",
        1,
        inputs_none,
        probe_relative,
        verdict_relative,
        "sinusoidal_encoding",
    ),
    Check(
        MODULE,
        "buffer",
        "pe is a buffer of shape (1, max_len, D): in the state_dict, not a parameter",
        2,
        inputs_none,
        probe_buffer,
        verdict_buffer,
        "PositionalEncoding",
    ),
    Check(
        MODULE,
        "forward",
        "forward adds the first T positions to every sequence of the batch",
        2,
        inputs_forward,
        probe_forward,
        verdict_forward,
        "PositionalEncoding",
    ),
    Check(
        MODULE,
        "dropout-eval",
        "dropout does nothing in eval mode",
        1,
        inputs_dropout,
        probe_dropout_eval,
        verdict_dropout_eval,
        "PositionalEncoding",
    ),
    Check(
        MODULE,
        "too-long",
        "T > max_len raises ValueError giving T and max_len",
        1,
        inputs_none,
        probe_too_long,
        verdict_too_long,
        "PositionalEncoding",
    ),
]
