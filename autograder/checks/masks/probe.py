"""Probe side of masks.py's checks: the inputs they draw and the calls they make.

Imported by the process that runs student code: nothing here judges or computes an answer.
Every size, length, window and position is drawn from the seed, so the hidden tier asks for
masks the public reference outputs never showed.
"""

from __future__ import annotations

import torch

from ...run.probing import randn


def _draw(gen, low, high):
    return int(torch.randint(low, high + 1, (), generator=gen))


def _describe(value):
    """Where and what a result is, as plain strings (all a probe may return besides tensors
    and numbers): a tensor on the meta device cannot come back to the CPU."""
    if not isinstance(value, torch.Tensor):
        return {"type": type(value).__name__}
    return {
        "type": "Tensor",
        "device": str(value.device),
        "dtype": str(value.dtype),
        "shape": str(tuple(value.shape)),
    }


def _on_meta(call):
    """Call with device='meta'. An op that has no meta kernel raises a RuntimeError or
    NotImplementedError naming 'meta': the code did pass the device on, which is what the
    check asks; the stub's 'not attempted' and any other error propagate."""
    try:
        return _describe(call())
    except (RuntimeError, NotImplementedError) as e:
        if "meta" not in str(e).lower():
            raise
        return {"type": "Tensor", "device": "meta", "unsupported": str(e)[:200]}


# --------------------------------------------------------------------------- causal_mask


def inputs_causal(gen):
    return {"lengths": [1, 2, _draw(gen, 3, 9), _draw(gen, 10, 16)]}


def probe_causal(mod, x):
    return {f"m{n}": mod.causal_mask(L) for n, L in enumerate(x["lengths"])}


def inputs_device(gen):
    # window < L: a window mask blocks something even where its causal part is missing (a
    # band |i - j| >= window with window >= L blocks nothing, and the device check, which
    # needs a mask that blocks something, charged the causal check's mistake again)
    L = _draw(gen, 2, 9)
    return {"L": L, "window": _draw(gen, 1, min(4, L - 1))}


def probe_causal_device(mod, x):
    """The mask on the meta device (described: its values cannot come back), and the same
    call on the CPU: a device check is shown only by a mask that blocks something."""
    return {
        **_on_meta(lambda: mod.causal_mask(x["L"], device="meta")),
        "cpu": mod.causal_mask(x["L"]),
    }


def inputs_invariance(gen):
    T = _draw(gen, 5, 9)
    t = _draw(gen, 1, T - 2)  # positions >= t change in the second run, < t in the third
    x = {"T": T, "t": t}
    x.update({n: randn(gen, 2, T, 6) for n in ("q", "k", "v")})
    for n in ("q", "k", "v"):
        x[n + "2"] = x[n].clone()
        x[n + "2"][:, t:] = randn(gen, 2, T - t, 6, scale=3.0)
        x[n + "3"] = x[n].clone()
        x[n + "3"][:, :t] = randn(gen, 2, t, 6, scale=3.0)
    return x


def probe_causal_mask_only(mod, x):
    # The mask alone comes back: the judge runs attention under it, in the parent.
    return {"mask": mod.causal_mask(x["T"])}


# --------------------------------------------------------------------------- padding_mask


def inputs_padding(gen):
    S1, S2 = _draw(gen, 4, 9), _draw(gen, 4, 9)
    as_list = [S1, 1] + [_draw(gen, 1, S1) for _ in range(2)]  # one full, one of length 1
    as_tensor = torch.randint(1, S2 + 1, (3,), generator=gen)
    return {"list": as_list, "S_list": S1, "tensor": as_tensor, "S_tensor": S2}


def probe_padding(mod, x):
    return {name: mod.padding_mask(x[name], x[f"S_{name}"]) for name in ("list", "tensor")}


# --------------------------------------------------------------------------- sliding window


def inputs_window(gen):
    L = _draw(gen, 5, 10)
    return {"L": L, "windows": [1, 2, _draw(gen, 3, L - 1), L, L + _draw(gen, 1, 4)]}


def probe_window(mod, x):
    return {f"w{n}": mod.sliding_window_mask(x["L"], w) for n, w in enumerate(x["windows"])}


def probe_window_device(mod, x):
    """As probe_causal_device, for sliding_window_mask."""
    meta = _on_meta(lambda: mod.sliding_window_mask(x["L"], x["window"], device="meta"))
    return {**meta, "cpu": mod.sliding_window_mask(x["L"], x["window"])}


def inputs_window_errors(gen):
    return {"L": _draw(gen, 2, 9), "windows": [0, -_draw(gen, 1, 5)]}


def probe_window_errors(mod, x):
    got = {}
    for n, w in enumerate(x["windows"]):
        try:
            mod.sliding_window_mask(x["L"], w)
            got[f"w{n}"] = "returned a mask"
        except ValueError:
            got[f"w{n}"] = "ValueError"
        except NotImplementedError:
            raise
        except Exception as e:  # the wrong exception is a finding, not a crash
            got[f"w{n}"] = f"raised {type(e).__name__}"
    return got
