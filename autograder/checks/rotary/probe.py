"""Probe side of rotary.py's checks: the inputs they draw and the calls they make.

Imported by the process that runs student code: nothing here judges or computes an answer.
Every size, position, base and value is drawn from the check's generator. Positions stay
below 256 except in the far-position check (integers above 256 are not exact in bfloat16, so
rounding the positions is charged there only).
"""

from __future__ import annotations

import contextlib

import torch

from ...run.probing import error_text, gradients, kept, pair, raised, randn


def _int(gen, low: int, high: int) -> int:
    """A draw from low .. high (both included)."""
    return int(torch.randint(low, high + 1, (), generator=gen))


def _even(gen, low: int, high: int) -> int:
    return 2 * _int(gen, low // 2, high // 2)


def _positions(start: int, T: int) -> torch.Tensor:
    return torch.arange(start, start + T, dtype=torch.long)


# --------------------------------------------------------------------------- apply_rotary


# Every check but batch-dims passes x of shape (B, H, T, d), as attention does: code that
# unpacks x.shape into four names loses the batch-dims check only.


def inputs_reference(gen):
    """(B, H, T, d) inputs at positions 0 .. T-1, default base."""
    B, H, T, d = _int(gen, 1, 3), _int(gen, 2, 3), _int(gen, 4, 9), _even(gen, 8, 24)
    return {"4d": {"x": randn(gen, B, H, T, d), "positions": _positions(0, T)}}


def inputs_batch_dims(gen):
    """(T, d) and (B, T, d) inputs: the docstring's (..., T, d) allows any leading dims."""
    T2, d2 = _int(gen, 3, 8), _even(gen, 6, 20)
    B, T3, d3 = _int(gen, 2, 3), _int(gen, 3, 8), _even(gen, 6, 20)
    return {
        "2d": {"x": randn(gen, T2, d2), "positions": _positions(0, T2)},
        "3d": {"x": randn(gen, B, T3, d3), "positions": _positions(0, T3)},
    }


def inputs_positions(gen):
    """A cache's offset positions p0 .. p0 + T - 1, and positions in any order."""
    B, H, T, d = _int(gen, 1, 2), _int(gen, 2, 3), _int(gen, 3, 7), _even(gen, 8, 16)
    p0 = _int(gen, 20, 240)
    T2 = _int(gen, 4, 9)
    return {
        "cache": {"x": randn(gen, B, H, T, d), "positions": _positions(min(p0, 255 - T), T)},
        "any": {"x": randn(gen, 1, 1, T2, d), "positions": torch.randperm(256, generator=gen)[:T2]},
    }


def inputs_base(gen):
    B, H, T, d = _int(gen, 1, 3), _int(gen, 1, 2), _int(gen, 4, 9), _even(gen, 8, 20)
    bases = [float(_int(gen, 20, 2000)), float(_int(gen, 100_000, 1_000_000))]
    base = bases[_int(gen, 0, 1)]
    return {"base-case": {"x": randn(gen, B, H, T, d), "positions": _positions(0, T), "base": base}}


def inputs_far(gen):
    """Far positions (up to about 8000), against the float64 closed form in the judge."""
    d = _even(gen, 16, 48)
    picks = {0, 1, _int(gen, 2, 99), _int(gen, 100, 999), _int(gen, 7000, 8191)}
    picks |= {_int(gen, 1000, 8191) for _ in range(4)}
    positions = torch.tensor(sorted(picks), dtype=torch.long)
    return {"far": {"x": randn(gen, 1, 1, len(picks), d), "positions": positions}}


def inputs_float64(gen):
    B, H, T, d = _int(gen, 1, 3), _int(gen, 1, 2), _int(gen, 3, 8), _even(gen, 8, 16)
    x = randn(gen, B, H, T, d, dtype=torch.float64)
    return {"float64": {"x": x, "positions": _positions(0, T)}}


def _rotate(mod, case):
    if "base" in case:
        return mod.apply_rotary(case["x"], case["positions"], base=case["base"])
    return mod.apply_rotary(case["x"], case["positions"])


def probe_rotate(mod, x):
    """apply_rotary on each case: {case name: output}, and whether it changed the x it was
    given in place (kept: the reference check charges that; x has its values back after)."""
    watched = [("x", case["x"]) for case in x.values()]
    return kept(watched, lambda: {name: _rotate(mod, case) for name, case in x.items()})


def _rotation_gradient(mod, case):
    """The gradient that reaches x from apply_rotary(x, positions)'s output."""
    return gradients(None, lambda x_: mod.apply_rotary(x_, case["positions"]), {"x": case["x"]})


def probe_reference(mod, x):
    """probe_rotate, and the gradient that reaches x (the first case)."""
    got = probe_rotate(mod, x)
    return {**got, **_rotation_gradient(mod, next(iter(x.values())))}


def probe_batch_dims(mod, x):
    """probe_rotate, and each case again as (B, H, T, d) with H = 1 (the shape every other
    check passes): the verdict holds the other shapes to the student's own 4-d values, whose
    mistakes the reference check charges."""
    got = probe_rotate(mod, x)
    for name, case in x.items():
        as_4d = case["x"].reshape(-1, 1, *case["x"].shape[-2:])
        got[f"{name}/as-4d"] = mod.apply_rotary(as_4d.clone(), case["positions"])
    return got


def probe_base(mod, x):
    """probe_rotate, and each case again without the base (the default, 10000): whether the
    base passed is used is judged on the student's own two runs."""
    got = probe_rotate(mod, x)
    for name, case in x.items():
        got[f"{name}/default"] = mod.apply_rotary(case["x"], case["positions"])
    return got


def probe_float64(mod, x):
    """probe_rotate, and each case again in float32: whether float64 is kept (with the values
    the student's own float32 run gives) is judged on the student's own two runs."""
    got = probe_rotate(mod, x)
    for name, case in x.items():
        got[f"{name}/float32"] = mod.apply_rotary(case["x"].float(), case["positions"])
    return got


def inputs_relative(gen):
    """q, k (1, 1, T, d) at positions P and at P + shift: every offset P_i - P_j is the same
    in both runs."""
    T, d = _int(gen, 5, 9), _even(gen, 8, 16)
    positions = torch.randint(0, 100, (T,), generator=gen)
    positions[_int(gen, 1, T - 1)] = positions[
        0
    ]  # two rows at one position: offset 0 off the diagonal
    return {
        "q": randn(gen, 1, 1, T, d),
        "k": randn(gen, 1, 1, T, d),
        "positions": positions,
        "shift": _int(gen, 1, 120),
    }


def probe_relative(mod, x):
    # (each call its own copy: an apply_rotary that changes x in place is charged once, by
    # the reference check)
    shifted = x["positions"] + x["shift"]
    return {
        "q1": mod.apply_rotary(x["q"].clone(), x["positions"]),
        "k1": mod.apply_rotary(x["k"].clone(), x["positions"]),
        "q2": mod.apply_rotary(x["q"].clone(), shifted),
        "k2": mod.apply_rotary(x["k"].clone(), shifted),
    }


def inputs_odd(gen):
    T, d = _int(gen, 2, 6), 2 * _int(gen, 1, 8) + 1
    return {"x": randn(gen, 1, 1, T, d), "positions": _positions(0, T)}


def probe_odd(mod, x):
    got, text = raised(lambda: mod.apply_rotary(x["x"], x["positions"]), "returned a value")
    return {"got": got, "text": text}


# --------------------------------------------------------------------------- rotary_attention


def inputs_attention(gen):
    """q, k of width d and v of another even width, at a cache's offset positions; a mask that
    is causal and also blocks some earlier keys (never a row's own), and a base that is not
    the default: rotary_attention must pass on both, not assume a causal mask or 10000."""
    B, H, T = _int(gen, 1, 2), _int(gen, 2, 3), _int(gen, 4, 8)
    d, d_v = _even(gen, 8, 16), _even(gen, 4, 6)
    start = _int(gen, 0, 200)
    earlier = (torch.rand(T, T, generator=gen) < 0.3).tril(-1)
    earlier[T - 1, 0] = True  # always one: a mask that is only causal lets the mask's mistakes pass
    mask = torch.ones(T, T, dtype=torch.bool).triu(1) | earlier
    return {
        "q": randn(gen, B, H, T, d),
        "k": randn(gen, B, H, T, d),
        "v": randn(gen, B, H, T, d_v, scale=2.0),
        "positions": _positions(start, T),
        "mask": mask,
        "shift": _int(gen, 1, 40),
        "base": float(1000 * _int(gen, 2, 50) + 500),  # 2500 .. 50500, never 10000
    }


def _attend(mod, x, positions):
    q, k, v = (x[n].clone() for n in ("q", "k", "v"))  # each call its own (see probe_relative)
    result = mod.rotary_attention(q, k, v, positions, mask=x["mask"], base=x["base"])
    out, weights = pair(result, "rotary_attention's result")
    return out, weights


def _own_rotation(mod, x, got, names="qkv", positions=None, tag=""):
    """The student's own apply_rotary of `names` (at x's positions, or `positions`), as
    got["own_<name><tag>"]: rotary_attention is judged on it, so a mistake in apply_rotary
    is charged in its own checks only."""
    positions = x["positions"] if positions is None else positions
    try:
        for name in names:
            got[f"own_{name}{tag}"] = mod.apply_rotary(x[name].clone(), positions, x["base"])
    except NotImplementedError:
        got["own_error"] = "apply_rotary is not attempted"
    except Exception as e:  # judged without the student's own rotation
        got["own_error"] = error_text(e)


def probe_attention(mod, x):
    out, weights = _attend(mod, x, x["positions"])
    got = {"out": out, "weights": weights}
    _own_rotation(mod, x, got)
    return got


def attend_grads(mod, x):
    """probe_attention, the gradients that reach q, k and v from its output, and (under
    "rotation/") the one that reaches x from the student's own apply_rotary: where that one
    is cut, its own check charges it, and q and k are not asked for one here."""

    def run(q, k, v):
        return mod.rotary_attention(q, k, v, x["positions"], mask=x["mask"], base=x["base"])

    got = {**probe_attention(mod, x), **gradients(None, run, {n: x[n] for n in "qkv"})}
    case = {"x": x["q"], "positions": x["positions"]}
    with contextlib.suppress(NotImplementedError):  # then the rotation is charged elsewhere
        got.update({f"rotation/{k}": v for k, v in _rotation_gradient(mod, case).items()})
    return got


def probe_attention_shift(mod, x):
    out, weights = _attend(mod, x, x["positions"])
    out2, weights2 = _attend(mod, x, x["positions"] + x["shift"])
    got = {"out": out, "weights": weights, "out2": out2, "weights2": weights2}
    # The student's own apply_rotary of q and k at both sets of positions: where it is not
    # relative itself, its own checks charge that, not rotary_attention's shift check.
    _own_rotation(mod, x, got, "qk")
    _own_rotation(mod, x, got, "qk", x["positions"] + x["shift"], "2")
    return got
