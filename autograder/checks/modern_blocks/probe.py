"""Probe side of modern_blocks.py's checks: the inputs they draw and the calls they make.

Imported by the process that runs student code: nothing here judges or computes an answer.
The grader's own weights are loaded into the student's modules (load_state_dict), so how
the student initialises them never matters.
"""

from __future__ import annotations

import math

import torch

from ...run.probing import gradients, kept, load_weights, randn


def _int(gen, low: int, high: int) -> int:
    """A draw from low .. high (both included)."""
    return int(torch.randint(low, high + 1, (), generator=gen))


# --------------------------------------------------------------------------- rms_norm


def inputs_rms_norm(gen):
    # Non-zero means (the +1.5 shift): subtracting the mean (LayerNorm's step) shows. Weights
    # far from 1: leaving the weight out shows.
    D = _int(gen, 8, 12)
    return {
        "affine": {
            "x": randn(gen, _int(gen, 2, 3), _int(gen, 3, 5), D, scale=2.0) + 1.5,
            "weight": randn(gen, D) + 1.0,
            "eps": 1e-6,
        },
        "plain": {"x": randn(gen, _int(gen, 4, 6), _int(gen, 5, 7), scale=3.0) - 2.0},
        "vector": {"x": randn(gen, _int(gen, 6, 9)) + 0.5, "eps": 1e-6},
        # Last: "returns x's dtype" (a float32 cast inside, x.float(), changed it).
        "float64": {"x": (randn(gen, 3, D) + 0.5).double(), "weight": randn(gen, D) + 1.0},
    }


def inputs_rms_norm_eps(gen):
    # Mean squares about eps: where eps goes, and which eps is used, now shows.
    D = _int(gen, 8, 12)
    return {
        "tiny": {"x": randn(gen, 4, D, scale=1e-3), "eps": 1e-6},
        "eps": {"x": randn(gen, _int(gen, 3, 5), D, scale=0.3), "eps": 0.1},
        "weighted": {
            "x": randn(gen, 3, D, scale=0.1),
            "weight": randn(gen, D) + 1.0,
            "eps": 0.01,
        },
    }


def probe_rms_norm(mod, x):
    """rms_norm on each case, and whether it changed the x or weight it was given in place
    (kept: the rms-norm check charges that; the other checks' x is its own)."""

    def run():
        got = {}
        for name, case in x.items():
            kwargs = {k: case[k] for k in ("weight", "eps") if k in case}
            got[name] = mod.rms_norm(case["x"], **kwargs)
        return got

    watched = [(k, case[k]) for case in x.values() for k in ("x", "weight") if k in case]
    return kept(watched, run)


# --------------------------------------------------------------------------- RMSNorm


def inputs_rms_module(gen):
    D = _int(gen, 8, 12)
    return {
        # the default eps (1e-6), ordinary scales
        "default": {"x": randn(gen, _int(gen, 2, 3), 4, D) + 0.5, "weight": randn(gen, D) + 1.0},
        # eps = 0.1 against mean squares about 0.1: whether self.eps is used shows
        "eps": {
            "x": randn(gen, _int(gen, 2, 3), 5, D, scale=0.3),
            "weight": randn(gen, D) + 1.0,
            "eps": 0.1,
        },
    }


def probe_rms_module(mod, x):
    got = {}
    for name, case in x.items():
        D = case["x"].size(-1)
        eps = {"eps": case["eps"]} if "eps" in case else {}
        module = mod.RMSNorm(D, **eps)
        load_weights(module, {"weight": case["weight"]})
        with torch.no_grad():
            # (each call its own copy of x: an rms_norm that changes x in place is charged
            # by the rms-norm check, not again here)
            got[name] = module.eval()(case["x"].clone())
            # The student's own rms_norm on the same input: a mistake in it is charged by
            # the rms_norm checks, not again here.
            try:
                own = mod.rms_norm(case["x"].clone(), case["weight"], case.get("eps", 1e-6))
                got[f"{name}/own"] = own
            except Exception:  # not attempted or broken: charged by the rms_norm checks
                got[f"{name}/own"] = None
    # The weight learns: a backward pass from the first case's output reaches it.
    case = next(iter(x.values()))
    module = mod.RMSNorm(case["x"].size(-1))
    load_weights(module, {"weight": case["weight"]})
    got.update(gradients(module, lambda: module(case["x"].clone())))
    return got


# --------------------------------------------------------------------------- SwiGLU


def swiglu_shapes(d_model: int, d_ff: int) -> dict[str, tuple[int, ...]]:
    """The state_dict shapes of SwiGLU(d_model, d_ff), in the order the stub creates them."""
    return {
        "w_gate.weight": (d_ff, d_model),
        "w_up.weight": (d_ff, d_model),
        "w_down.weight": (d_model, d_ff),
    }


def inputs_swiglu(gen):
    D, d_ff = _int(gen, 6, 10), _int(gen, 12, 20)
    # Gate pre-activations spread over about ±4, where SiLU, GELU, sigmoid and ReLU differ.
    scales = {"w_gate.weight": 3.0 / math.sqrt(D), "w_up.weight": 1.0 / math.sqrt(D)}
    sd = {
        key: randn(gen, *shape, scale=scales.get(key, 1.0 / math.sqrt(d_ff)))
        for key, shape in swiglu_shapes(D, d_ff).items()
    }
    return {
        "weights": sd,
        "x": randn(gen, _int(gen, 2, 3), _int(gen, 4, 6), D),
        "x2": randn(gen, _int(gen, 3, 5), D),  # (T, D): no batch dimension
    }


def probe_swiglu(mod, x):
    d_ff, D = x["weights"]["w_gate.weight"].shape
    module = mod.SwiGLU(D, d_ff)
    load_weights(module, x["weights"])
    module.eval()
    with torch.no_grad():
        got = {"out": module(x["x"]), "out2": module(x["x2"])}
    # Every weight learns: a backward pass from the output reaches each.
    return {**got, **gradients(module, lambda: module(x["x"].clone()))}
