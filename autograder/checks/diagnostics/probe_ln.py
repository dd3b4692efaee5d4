"""Probe side of diagnostics.py's LN-placement checks: layer_gradient_norms and
compare_ln_placement.

Imported by the process that runs student code: nothing here judges or computes an answer.
compare_ln_placement is run with a seed and sizes drawn from the check's generator, and its
calls to layer_gradient_norms are recorded (the weights of every stack, the input, the target,
whether a final norm was given, and what each call returned), so that the judge can check the
set-up from data, not from the margins of two vectors of numbers.
"""

from __future__ import annotations

import inspect

import torch
import torch.nn.functional as F
from torch import nn

from ...run.probing import dependency, randn

# The blocks checks' weight builders (probe side, public helpers of their probe).
from ..blocks.probe import block_shapes, random_weights

D, H, D_FF = 16, 4, 32
# compare_ln_placement's sizes: its defaults, for which docs/blocks.md gives the measurements.
LAYERS, D_MODEL, HEADS, D_FF_EXPERIMENT = 8, 32, 4, 64


def _int(gen, low, high):
    """An int drawn uniformly from [low, high]."""
    return int(torch.randint(low, high + 1, (), generator=gen))


def inputs_norms(gen):
    N, B, T = _int(gen, 4, 7), _int(gen, 2, 3), _int(gen, 4, 7)
    return {
        "weights": [random_weights(gen, block_shapes(D, D_FF)) for _ in range(N)],
        "x": randn(gen, B, T, D, dtype=torch.float64),
        "target": randn(gen, B, T, D, dtype=torch.float64),
    }


def stack(weights, norm_first, blocks_module):
    """TransformerBlocks of `blocks_module` holding the grader's weights, in float64 (exact
    enough to compare). The probe uses the blocks diagnostics.py itself gets (the trusted
    stand-in in official grading); the judge, the stand-in."""
    blocks = nn.ModuleList(
        blocks_module.TransformerBlock(D, H, D_FF, norm_first=norm_first) for _ in weights
    ).double()
    for block, sd in zip(blocks, weights, strict=True):
        block.load_state_dict(sd)
    return blocks


def final_norm():
    norm = nn.LayerNorm(D).double()
    with torch.no_grad():
        norm.weight.copy_(torch.linspace(0.5, 1.5, D, dtype=torch.float64))
    return norm


def probe_norms(mod, x):
    blocks = dependency(mod, "blocks")
    post = stack(x["weights"], False, blocks)
    first = mod.layer_gradient_norms(post, x["x"], x["target"])
    again = mod.layer_gradient_norms(post, x["x"], x["target"])
    pre = mod.layer_gradient_norms(
        stack(x["weights"], True, blocks), x["x"], x["target"], final_norm=final_norm()
    )
    # A stack whose .grad already holds the gradients of one backward pass of this loss (as
    # after any training step): a function that clears them only after its own measurement
    # returns twice the norms here, though a second call on a clean stack looks right.
    held = stack(x["weights"], False, blocks)
    out = x["x"]
    for block in held:
        out = block(out)[0]
    F.mse_loss(out, x["target"]).backward()
    stale = mod.layer_gradient_norms(held, x["x"], x["target"])
    return {"post": first, "post_again": again, "pre": pre, "post_stale": stale}


# --------------------------------------------------------------------------- the experiment


def inputs_placement(gen):
    return {
        "seed": int(torch.randint(0, 2**31 - 1, (), generator=gen)),
        "batch": _int(gen, 2, 6),
        "seq_len": _int(gen, 8, 20),
    }


def _recorded(i, blocks, x, target, final_norm):
    """What one call of layer_gradient_norms was given, as plain tensors and values."""
    entry = {f"call{i}/x": x, f"call{i}/target": target}
    blocks = list(blocks)
    entry[f"call{i}/blocks"] = len(blocks)
    flags = [getattr(b, "norm_first", None) for b in blocks]
    entry[f"call{i}/norm_first"] = (
        "pre" if all(f is True for f in flags) else "post" if all(f is False for f in flags) else ""
    )
    states = [b.state_dict() for b in blocks]
    if states and all(s.keys() == states[0].keys() for s in states):
        for name in states[0]:
            entry[f"call{i}/w/{name}"] = torch.stack([s[name].detach() for s in states])
    entry[f"call{i}/final_norm"] = "none" if final_norm is None else type(final_norm).__name__
    return entry


def probe_placement(mod, x):
    calls = {}
    # The name layer_gradient_norms as compare_ln_placement looks it up: in the module that
    # defines it (the student's file; solutions.diagnostics for a kit variant importing it).
    # A decorated compare_ln_placement (functools.wraps: @torch.enable_grad(), a timer) looks
    # names up in its own module too: the function it wraps is the one to read.
    experiment = mod.compare_ln_placement
    names = getattr(inspect.unwrap(experiment), "__globals__", None) or vars(mod)
    measure = names.get("layer_gradient_norms", mod.layer_gradient_norms)

    def recording(*args, **kwargs):
        """layer_gradient_norms, called as the student calls it (positions or keywords,
        their own parameter names), recorded on the way."""
        try:
            bound = inspect.signature(measure).bind(*args, **kwargs)
        except (TypeError, ValueError):
            return measure(*args, **kwargs)  # the call Python would make, and its error
        bound.apply_defaults()
        values = [*bound.arguments.values(), None, None, None, None]
        blocks, x_, target, final_norm = values[:4]
        i = len(calls)
        calls[i] = _recorded(i, blocks, x_, target, final_norm)
        try:
            result = measure(*args, **kwargs)
        except Exception as e:
            # layer_gradient_norms is not done yet, or crashes: its own check charges that;
            # this one goes on judging the set-up, with zeros standing in for the norms.
            calls[i][f"call{i}/error"] = type(e).__name__
            result = torch.zeros(calls[i][f"call{i}/blocks"])
        calls[i][f"call{i}/result"] = result
        return result

    names["layer_gradient_norms"] = recording
    try:
        result = experiment(
            num_layers=LAYERS,
            d_model=D_MODEL,
            num_heads=HEADS,
            d_ff=D_FF_EXPERIMENT,
            batch=x["batch"],
            seq_len=x["seq_len"],
            seed=x["seed"],
        )
    finally:
        names["layer_gradient_norms"] = measure
    got = {"calls": len(calls)}
    for i in sorted(calls)[:4]:
        got.update(calls[i])
    if not isinstance(result, dict):
        return {**got, "type": type(result).__name__}
    return {**got, "pre_ln": result.get("pre_ln"), "post_ln": result.get("post_ln")}
